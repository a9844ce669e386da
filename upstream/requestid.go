package upstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"strconv"

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

// idHead bounds what of a POST body is read for its id: enough for the
// members ahead of the params (callID).
const idHead = 128

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

// callPrefix and methodMember frame the id of a call as the SDK encodes
// it: the members in the order of its wire struct, no white space. The
// body is the SDK's own, and reading the id there costs no decoding of
// the params (a JSON decoder cost more than the span it serves).
var (
	callPrefix   = []byte(`{"jsonrpc":"2.0","id":`)
	methodMember = []byte(`,"method":`)
)

// callID is the id of the call whose body req carries; ok is false for a
// response (the gateway answering a server's request: a result or error
// member follows the id), a notification (no id), or a body not framed
// as the SDK frames a call.
func callID(req *http.Request) (_ jsonrpc.ID, ok bool) {
	body, err := req.GetBody()
	if err != nil {
		return jsonrpc.ID{}, false
	}
	head := make([]byte, idHead)
	n, _ := io.ReadFull(body, head)
	body.Close()
	rest, ok := bytes.CutPrefix(head[:n], callPrefix)
	if !ok {
		return jsonrpc.ID{}, false
	}
	raw, _, ok := bytes.Cut(rest, methodMember)
	if !ok {
		return jsonrpc.ID{}, false
	}
	if len(raw) >= 2 && raw[0] == '"' && raw[len(raw)-1] == '"' && !bytes.ContainsAny(raw[1:len(raw)-1], `"\`) {
		return idOf(string(raw[1 : len(raw)-1]))
	}
	// The SDK numbers its calls from 1, far below float64's exact range.
	i, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	return idOf(float64(i))
}

func idOf(v any) (jsonrpc.ID, bool) {
	id, err := jsonrpc.MakeID(v)
	return id, err == nil && id.IsValid()
}
