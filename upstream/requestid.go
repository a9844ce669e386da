package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/launch"
)

// The SDK numbers a request when it writes it, after the sending
// middleware has run, so the middleware never learns the id. The context
// it passed on reaches the write, though: a stdio connection's Write, and
// the HTTP request of a streamable server's POST. Options.OnRequestID is
// told each call's id there, with that context. The stdio connection is
// toolprof's own and is wrapped; the streamable one is not (it learns of
// its session through a method a wrapper cannot forward, rawtools.go), so
// an HTTP server's POST bodies are read instead.

// reportIDs returns t telling on the id of each call written, when t is a
// stdio server's transport and on is set.
func (c *Client) reportIDs(t mcp.Transport) mcp.Transport {
	if c.opts.OnRequestID == nil || c.srv.Transport != launch.Stdio {
		return t
	}
	return idTransport{t, c.opts.OnRequestID}
}

// reportHTTPIDs returns base telling OnRequestID the id of each call
// POSTed, when it is set.
func (c *Client) reportHTTPIDs(base http.RoundTripper) http.RoundTripper {
	if c.opts.OnRequestID == nil {
		return base
	}
	return idRoundTripper{base, c.opts.OnRequestID}
}

type idTransport struct {
	mcp.Transport
	on func(context.Context, jsonrpc.ID)
}

func (t idTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return idConn{conn, t.on}, nil
}

type idConn struct {
	mcp.Connection
	on func(context.Context, jsonrpc.ID)
}

func (c idConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		c.on(ctx, req.ID)
	}
	return c.Connection.Write(ctx, msg)
}

// idHead bounds what of a POST body is read for its id: the SDK writes
// "jsonrpc", "id" and "method" ahead of the params, so a call with large
// arguments costs no more than a small one.
const idHead = 512

type idRoundTripper struct {
	base http.RoundTripper
	on   func(context.Context, jsonrpc.ID)
}

func (t idRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.Method == http.MethodPost && req.GetBody != nil {
		if id, ok := callID(req); ok {
			t.on(req.Context(), id)
		}
	}
	return t.base.RoundTrip(req)
}

// callID is the id of the call whose body req carries; ok is false for a
// response (the gateway answering a server's request), a notification, or
// a body whose id is not in its first idHead bytes.
func callID(req *http.Request) (_ jsonrpc.ID, ok bool) {
	body, err := req.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	head, _ := io.ReadAll(io.LimitReader(body, idHead))
	body.Close()
	m := leadingMembers(head)
	raw, hasID := m["id"]
	if _, isCall := m["method"]; !hasID || !isCall {
		return jsonrpc.ID{}, false
	}
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}
