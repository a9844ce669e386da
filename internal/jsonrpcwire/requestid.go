package jsonrpcwire

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RequestIDHeader carries a request's JSON-RPC id, as the client sent it,
// to the gateway's handlers in the request's mcp.RequestExtra, the one
// place the SDK hands them per message: it passes them no id. The
// gateway's HTTP front sets it from the POST body, after removing any the
// client sent; Conn sets it from the line it read.
const RequestIDHeader = "Toolprof-Jsonrpc-Request-Id"

// SetRequestID carries raw, the id of req as the client sent it, in req's
// Extra (Conn's requests have none of their own).
func SetRequestID(req *jsonrpc.Request, raw json.RawMessage) {
	req.Extra = &mcp.RequestExtra{Header: http.Header{RequestIDHeader: {string(bytes.TrimSpace(raw))}}}
}

// RequestID is the id extra carries, spelled as the OpenTelemetry
// conventions' jsonrpc.request.id: a string id's text, a number's
// literal; "" when extra carries none.
func RequestID(extra *mcp.RequestExtra) string {
	if extra == nil || extra.Header == nil {
		return ""
	}
	raw := extra.Header.Get(RequestIDHeader)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal([]byte(raw), &s) == nil {
			return s
		}
	}
	return raw
}
