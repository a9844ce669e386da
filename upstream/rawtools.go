package upstream

import (
	"context"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawTools keeps each tool definition of a server's tools/list results as
// the server sent it: the SDK's mcp.Tool drops fields it does not know
// (execution) and fills in annotation defaults, and the gateway serves
// tools as listed. It reads the messages as they pass, so that nothing of
// the SDK's handling changes: a stdio connection's messages (wrap), and an
// HTTP server's requests and response bodies (roundTripper), since the
// SDK's streamable client connection learns of its session through a method
// a Connection wrapper cannot forward.
type rawTools struct {
	mu      sync.Mutex
	pending map[jsonrpc.ID]bool        // tools/list requests in flight -> first page
	resume  map[string][]jsonrpc.ID    // pending calls whose SSE stream ended unanswered, by its last event id
	byName  map[string]json.RawMessage // the latest listing, by upstream name
	next    map[string]json.RawMessage // a listing being paged
}

// wrap returns t reading through r when t is a stdio transport, its
// connection relaying calls through rl (rawcall.go).
func (r *rawTools) wrap(t mcp.Transport, rl *relay) mcp.Transport {
	if _, ok := t.(*stdioTransport); !ok {
		return t
	}
	return rawTransport{t, r, rl}
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
	r  *rawTools
	rl *relay
}

func (t rawTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	t.rl.conn = conn
	if sc, ok := conn.(*stdioConn); ok {
		sc.relay.Store(t.rl)
	}
	return rawConn{conn, t.r, &rawCalls{}, t.rl}, nil
}

type rawConn struct {
	mcp.Connection
	r     *rawTools
	calls *rawCalls // tools/call results captured (rawresult.go)
	relay *relay    // the answers of the calls relayed (rawcall.go)
}

func (c rawConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	c.r.request(msg)
	if req, ok := msg.(*jsonrpc.Request); ok {
		c.calls.sent(ctx, req)
	}
	return c.Connection.Write(ctx, msg)
}

func (c rawConn) Close() error {
	if c.relay.closeAfterCalls() {
		return nil
	}
	return c.Connection.Close()
}

func (c rawConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Connection.Read(ctx)
		if err != nil {
			c.relay.fail(err)
			return msg, err
		}
		if resp, ok := msg.(*jsonrpc.Response); ok {
			if c.relay.deliver(resp) {
				continue // an answer the SDK never asked for
			}
			c.r.response(resp)
			c.calls.received(resp)
		}
		return msg, nil
	}
}

// request notes msg when it is a tools/list call, whose response response
// then reads, and returns its id.
func (r *rawTools) request(msg jsonrpc.Message) (jsonrpc.ID, bool) {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.Method != "tools/list" || !req.IsCall() {
		return jsonrpc.ID{}, false
	}
	var p struct {
		Cursor string `json:"cursor"`
	}
	_ = json.Unmarshal(req.Params, &p) // no params: the first page
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pending == nil {
		r.pending = map[jsonrpc.ID]bool{}
	}
	r.pending[req.ID] = p.Cursor == ""
	return req.ID, true
}

// maxResumes bounds the streams awaiting their resumption: one the client
// never resumes (it gave up, or closed) leaves its calls there, so past
// the bound they are all forgotten.
const maxResumes = 64

// unanswered is told that an HTTP answer which could carry the responses
// to the tools/list calls ids has ended. Those still unanswered are
// forgotten, unless the answer was an SSE stream the client resumes
// (lastEventID not ""), whose resumption may carry them.
func (r *rawTools) unanswered(ids []jsonrpc.ID, lastEventID string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, id := range ids {
		if _, ok := r.pending[id]; !ok {
			continue
		}
		if lastEventID == "" {
			delete(r.pending, id)
			continue
		}
		if _, ok := r.resume[lastEventID]; !ok && len(r.resume) >= maxResumes {
			for _, ids := range r.resume {
				for _, id := range ids {
					delete(r.pending, id)
				}
			}
			clear(r.resume)
		}
		if r.resume == nil {
			r.resume = map[string][]jsonrpc.ID{}
		}
		r.resume[lastEventID] = append(r.resume[lastEventID], id)
	}
}

// resumed returns the tools/list calls awaiting their responses on the
// stream a GET with Last-Event-ID lastEventID resumes.
func (r *rawTools) resumed(lastEventID string) []jsonrpc.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	ids := r.resume[lastEventID]
	delete(r.resume, lastEventID)
	return ids
}

// awaiting is how many tools/list calls await their responses, and how
// many streams ended unanswered await their resumption.
func (r *rawTools) awaiting() (pending, resumes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.pending), len(r.resume)
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
// server last listed it, when that listing was read whole.
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

// maxRawRequest bounds the request body roundTripper reads to find a
// tools/list call: one is a few hundred bytes, so a larger body (a
// tools/call's arguments) is not read twice; of a larger one only the
// start is read, for its id.
const maxRawRequest = 64 << 10

// roundTripper returns base with the answers of an HTTP server bounded and
// its tools/list results read as they pass. Every application/json answer
// and every SSE event over limit bytes is dropped unread by the SDK and,
// when it answers a call, replaced by the error response Client.mapErr
// turns into a TooLargeError (httpbody.go); an error status's body is cut
// at limit. The tools/list results are read from the body of the answer to
// a POST carrying a tools/list call (application/json or an SSE stream),
// and of a GET resuming (by Last-Event-ID) such a stream that ended
// unanswered. A call whose answer ends without its response (or fails) is
// forgotten, but for a stream the client resumes, which passes it on to
// the resumption, and for a resumption that fails in transport, which the
// client tries again.
//
// The relayed notifications of every SSE event are counted in notes as
// they are handed on (notecount.go).
func (r *rawTools) roundTripper(base http.RoundTripper, limit int, dropped func(int64), notes *noteCount) http.RoundTripper {
	return rawRoundTripper{base: base, r: r, limit: limit, dropped: dropped, notes: notes}
}

type rawRoundTripper struct {
	base    http.RoundTripper
	r       *rawTools
	limit   int         // bytes of one message
	dropped func(int64) // told of each message dropped with no answer in its place
	notes   *noteCount
}

func (t rawRoundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	var ids []jsonrpc.ID     // the tools/list calls this answer may carry the responses to
	var call json.RawMessage // the id of the call a POST carries, as sent
	switch {
	case req.Method == http.MethodPost && req.GetBody != nil:
		if body, err := req.GetBody(); err == nil {
			b, err := io.ReadAll(io.LimitReader(body, maxRawRequest))
			body.Close()
			if err == nil {
				if msg, derr := jsonrpc.DecodeMessage(b); derr == nil {
					if id, ok := t.r.request(msg); ok {
						ids = []jsonrpc.ID{id}
					}
				}
				// The SDK writes "id" and "method" before "params".
				if m := leadingMembers(b); m["method"] != nil {
					call = m["id"]
				}
			}
		}
	case req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "":
		ids = t.r.resumed(req.Header.Get("Last-Event-ID"))
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil || resp.StatusCode/100 != 2 {
		if len(ids) > 0 {
			// A POST is retried with the same id, noted again then; a GET
			// that failed in transport the SDK retries with the same
			// Last-Event-ID, so its calls await that one again.
			resumeID := ""
			if err != nil && req.Method == http.MethodGet {
				resumeID = req.Header.Get("Last-Event-ID")
			}
			t.r.unanswered(ids, resumeID)
		}
		if err == nil {
			// The SDK reads an error's body whole for its JSON-RPC error.
			resp.Body = cutBody{io.LimitReader(resp.Body, int64(t.limit)), resp.Body}
		}
		return resp, err
	}
	media, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	switch media {
	case "application/json":
		resp.Body = &rawJSONBody{ReadCloser: resp.Body, r: t.r, limit: t.limit, size: resp.ContentLength, ids: ids, call: call, dropped: t.dropped}
	case "text/event-stream":
		resp.Body = &rawSSEBody{ReadCloser: resp.Body, r: t.r, limit: t.limit, ids: ids, call: call, dropped: t.dropped, notes: t.notes}
	default:
		t.r.unanswered(ids, "")
	}
	return resp, nil
}

// message takes the tools/list result that data, one JSON-RPC message
// read from an HTTP answer, may be.
func (r *rawTools) message(data []byte) {
	if msg, err := jsonrpc.DecodeMessage(data); err == nil {
		if resp, ok := msg.(*jsonrpc.Response); ok {
			r.response(resp)
		}
	}
}
