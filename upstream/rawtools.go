package upstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawTools keeps each tool definition of a stdio server's tools/list
// results as the server sent it: the SDK's mcp.Tool drops fields it does
// not know (execution) and fills in annotation defaults, and the gateway
// serves tools as listed. It reads the connection's messages, so that
// nothing of the SDK's handling changes.
//
// Only stdio connections are read: the SDK's streamable client connection
// learns of the session through a method a wrapper cannot forward, so an
// HTTP server's tools are served as the SDK parsed them.
type rawTools struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool        // tools/list requests in flight -> first page
	byName  map[string]json.RawMessage // the latest listing, by upstream name
	next    map[string]json.RawMessage // a listing being paged
}

// wrap returns t reading through r when t is a stdio transport.
func (r *rawTools) wrap(t mcp.Transport) mcp.Transport {
	if _, ok := t.(*stdioTransport); !ok {
		return t
	}
	return rawTransport{t, r}
}

// tool is name's definition as last listed.
func (r *rawTools) tool(name string) (json.RawMessage, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	raw, ok := r.byName[name]
	return raw, ok
}

type rawTransport struct {
	mcp.Transport
	r *rawTools
}

func (t rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return rawConn{conn, t.r, &rawCalls{}}, nil
}

type rawConn struct {
	mcp.Connection
	r     *rawTools
	calls *rawCalls // tools/call results captured (rawresult.go)
}

func (c rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == "tools/list" && req.IsCall() {
		var p struct {
			Cursor string `json:"cursor"`
		}
		_ = json.Unmarshal(req.Params, &p) // no params: the first page
		c.r.mu.Lock()
		if c.r.pending == nil {
			c.r.pending = map[jsonrpc.ID]bool{}
		}
		c.r.pending[req.ID] = p.Cursor == ""
		c.r.mu.Unlock()
	}
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.calls.sent(ctx, req)
	}
	return c.Connection.Write(ctx, msg)
}

func (c rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok && err == nil {
		c.r.response(resp)
		c.calls.received(resp)
	}
	return msg, err
}

// response takes the tools of a tools/list result. A first page starts a
// new listing; the last page (no nextCursor) makes it the latest.
func (r *rawTools) response(resp *jsonrpc.Response) {
	r.mu.Lock()
	defer r.mu.Unlock()
	first, ok := r.pending[resp.ID]
	if !ok {
		return
	}
	delete(r.pending, resp.ID)
	var res struct {
		Tools      []json.RawMessage `json:"tools"`
		NextCursor string            `json:"nextCursor"`
	}
	if resp.Error != nil || json.Unmarshal(resp.Result, &res) != nil {
		return
	}
	if first || r.next == nil {
		r.next = map[string]json.RawMessage{}
	}
	for _, raw := range res.Tools {
		var t struct {
			Name string `json:"name"`
		}
		if json.Unmarshal(raw, &t) == nil && t.Name != "" {
			r.next[t.Name] = raw
		}
	}
	if res.NextCursor == "" {
		r.byName, r.next = r.next, nil
	}
}

// RawTool is the definition of the server's tool name exactly as the
// server last listed it, when the server is a stdio one.
func (c *Client) RawTool(name string) (json.RawMessage, bool) {
	return c.raw.tool(name)
}

// RawTool is the definition of the tool served as name exactly as its
// server last listed it (under the server's own name), when known.
func (s *Set) RawTool(name string) (json.RawMessage, bool) {
	c, upstreamName, ok := s.route(name, knowsTool)
	if !ok {
		return nil, false
	}
	return c.RawTool(upstreamName)
}
