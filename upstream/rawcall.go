package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
)

// A plain tools/call to a stdio server is sent and answered on the
// connection itself rather than through ClientSession.CallTool, whose
// answer the SDK decodes twice, each time through a decoder that
// allocates 32 KiB: most of what a relayed call costs. The relay does
// what the SDK's client does for such a call, in the same order: the
// sending middleware runs around it (its trace context in the params'
// _meta), OnRequestID is told the id as it is written, a context that
// ends sends notifications/cancelled and returns the context's error, a
// connection that ends fails the call with its read error, and the
// errors are wrapped as the SDK wraps them, so that Client.mapErr makes
// of them what it makes of the SDK's. The result is decoded once: a plain
// one by jsonrpcwire.PlainToolResult, any other by mcp.CallToolResult's
// own decoding. Notifications and the server's requests during the call
// reach the SDK's handlers as before: only the answer is taken off the
// connection.
//
// The SDK's client is used instead for anything else: a session of a
// protocol with per-request _meta of its own (2026-07-28), a retry
// carrying input responses, an HTTP server, a connection ended or
// closing (which the SDK refuses in its own words).

// relayIDPrefix starts the id of every call the relay sends: the SDK
// numbers its own calls with integers, so the two never meet.
const relayIDPrefix = "toolprof-"

// notifyCancelTimeout bounds the write of a cancellation, as the SDK's
// own does.
const notifyCancelTimeout = 5 * time.Second

// relay is the raw tools/call path of one stdio connection. conn is set
// once, by the transport's Connect, before the session is published.
type relay struct {
	conn mcp.Connection // the server's connection, below the SDK's wrappers

	notes noteCount // the connection's relayed notifications (notecount.go)

	mu      sync.Mutex
	next    uint64
	pending map[jsonrpc.ID]chan relayAnswer
	err     error // the read error that ended the connection
	active  int   // calls sent and not returned
	closing bool  // the session is closing: no new calls
	// closeLater is set when the session closed with calls active: the
	// last of them to return closes conn.
	closeLater bool
}

// closeAfterCalls is told that the SDK closes the connection, which it
// does once its own calls have returned, while it goes on reading (the
// server's notifications and requests then refused as it refuses them).
// The relay's calls are waited for alike: when some are active the
// connection is left open for the last of them to close, and
// closeAfterCalls returns true (the close's own error is then lost).
func (rl *relay) closeAfterCalls() bool {
	if rl == nil {
		return false
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	rl.closing = true
	if rl.active == 0 {
		return false
	}
	rl.closeLater = true
	return true
}

// done is told that a call returned.
func (rl *relay) done() {
	rl.mu.Lock()
	rl.active--
	closeNow := rl.active == 0 && rl.closeLater
	if closeNow {
		rl.closeLater = false
	}
	rl.mu.Unlock()
	if closeNow {
		_ = rl.conn.Close() // the SDK took nil for it already
	}
}

// relayAnswer is a relayed call's answer and how many notifications had
// been read before it.
type relayAnswer struct {
	resp  *jsonrpc.Response
	notes uint64
}

// deliver hands resp to the relayed call it answers; false when it
// answers none (it is the SDK's).
func (rl *relay) deliver(resp *jsonrpc.Response) bool {
	if rl == nil {
		return false
	}
	rl.mu.Lock()
	ch, ok := rl.pending[resp.ID]
	delete(rl.pending, resp.ID)
	rl.mu.Unlock()
	if ok {
		ch <- relayAnswer{resp, rl.notes.readSoFar()}
	}
	return ok
}

// fail ends every relayed call in flight with the connection's read error,
// as the SDK retires its own calls.
func (rl *relay) fail(err error) {
	if rl == nil {
		return
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	if rl.err == nil {
		rl.err = err
	}
	for id, ch := range rl.pending {
		ch <- relayAnswer{resp: &jsonrpc.Response{ID: id, Error: err}}
	}
	clear(rl.pending)
}

// usable reports whether calls can be relayed on rl's connection.
func (rl *relay) usable() bool {
	if rl == nil || rl.conn == nil {
		return false
	}
	rl.mu.Lock()
	defer rl.mu.Unlock()
	return rl.err == nil && !rl.closing
}

// relayable reports whether p, to be sent on cs, is a call the relay
// sends as the SDK's client would.
func relayable(cs *mcp.ClientSession, p *mcp.CallToolParams) bool {
	if p.InputResponses != nil || p.RequestState != "" {
		return false
	}
	init := cs.InitializeResult()
	return init != nil && init.ProtocolVersion < sessionlessProtocol
}

// sessionlessProtocol is the first protocol version whose requests carry
// _meta the SDK's client adds to every one.
const sessionlessProtocol = "2026-07-28"

// relayCall sends p as ClientSession.CallTool would, through the sending
// middleware.
func (c *Client) relayCall(ctx context.Context, cs *mcp.ClientSession, rl *relay, p *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if p.Arguments == nil {
		p.Arguments = map[string]any{} // the SDK sends no null arguments
	}
	h := mcp.MethodHandler(func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		res, err := rl.call(ctx, method, req.GetParams(), c.opts.OnRequestID)
		if err != nil {
			return nil, err
		}
		return res, nil
	})
	if c.opts.SendingMiddleware != nil {
		h = c.opts.SendingMiddleware(h)
	}
	res, err := h(ctx, "tools/call", &mcp.ClientRequest[mcp.Params]{Session: cs, Params: p}) // the SDK's own request type
	if err != nil {
		return nil, err
	}
	return res.(*mcp.CallToolResult), nil
}

// call sends one call and waits for its answer.
func (rl *relay) call(ctx context.Context, method string, params mcp.Params, onID func(context.Context, jsonrpc.ID)) (*mcp.CallToolResult, error) {
	b, plain := plainCallParams(params)
	if !plain {
		var err error
		if b, err = marshalParams(params); err != nil {
			return nil, fmt.Errorf("calling %q: marshaling call parameters: %w", method, err)
		}
	}
	answer := make(chan relayAnswer, 1)
	rl.mu.Lock()
	switch {
	case rl.closing:
		rl.mu.Unlock()
		return nil, fmt.Errorf("%w: calling %q: client is closing", mcp.ErrConnectionClosed, method)
	case rl.err != nil:
		err := rl.err
		rl.mu.Unlock()
		return nil, fmt.Errorf("calling %q: %w", method, err)
	}
	rl.active++
	defer rl.done()
	rl.next++
	id, _ := jsonrpc.MakeID(relayIDPrefix + strconv.FormatUint(rl.next, 10)) // a string is always an id
	if rl.pending == nil {
		rl.pending = map[jsonrpc.ID]chan relayAnswer{}
	}
	rl.pending[id] = answer
	rl.mu.Unlock()
	if onID != nil {
		onID(ctx, id)
	}
	var resp *jsonrpc.Response
	if err := rl.write(ctx, &jsonrpc.Request{ID: id, Method: method, Params: b}); err != nil {
		rl.forget(id)
		resp = &jsonrpc.Response{ID: id, Error: err} // never answered, as the SDK retires it
	} else {
		select {
		case a := <-answer:
			resp = a.resp
			// What the server sent before answering is handled (relayed
			// to the caller's client) before the caller is answered.
			rl.notes.wait(ctx, a.notes)
		case <-ctx.Done():
		}
	}
	if ctx.Err() != nil {
		// Answered or not, the SDK reports a call whose context ended as
		// cancelled, and tells the server off the caller's path.
		rl.forget(id)
		go rl.cancel(ctx, id)
		return nil, ctx.Err()
	}
	if resp.Error != nil {
		return nil, fmt.Errorf("calling %q: %w", method, resp.Error)
	}
	res, ok := jsonrpcwire.PlainToolResult(resp.Result)
	if !ok {
		res = new(mcp.CallToolResult)
		if err := res.UnmarshalJSON(resp.Result); err != nil {
			return nil, fmt.Errorf("calling %q: %w", method, err)
		}
	}
	if rc, ok := ctx.Value(resultCaptureKey{}).(*resultCapture); ok {
		rc.mu.Lock()
		rc.raw = resp.Result
		rc.mu.Unlock()
	}
	return res, nil
}

// write writes req, a call the relay numbered, as rl.conn's Write does: on
// a stdio connection the line is put together from the params' bytes
// instead of the request being encoded again.
func (rl *relay) write(ctx context.Context, req *jsonrpc.Request) error {
	sc, ok := rl.conn.(*stdioConn)
	id, isString := req.ID.Raw().(string)
	if !ok || !isString || !plainText(id) || !plainText(req.Method) || len(req.Params) == 0 {
		return rl.conn.Write(ctx, req)
	}
	line := make([]byte, 0, len(id)+len(req.Method)+len(req.Params)+len(`{"jsonrpc":"2.0","id":"","method":"","params":}`)+1)
	line = append(line, `{"jsonrpc":"2.0","id":"`...)
	line = append(line, id...)
	line = append(line, `","method":"`...)
	line = append(line, req.Method...)
	line = append(line, `","params":`...)
	line = append(line, req.Params...)
	line = append(line, '}', '\n')
	return sc.writeLine(ctx, line)
}

// plainText reports whether s encodes as a JSON string as it is: printable
// ASCII without a quote or a backslash.
func plainText(s string) bool {
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b > 0x7e || b == '"' || b == '\\' {
			return false
		}
	}
	return true
}

// plainCallParams is what marshalParams makes of params when they are
// the plain tools/call params a forwarded call has: no _meta, no input
// responses or request state, a name plainText, and arguments forwarded
// as bytes (compacted, as the encoder compacts them) or none; ok is false
// for any other params, which marshalParams encodes.
func plainCallParams(params mcp.Params) (json.RawMessage, bool) {
	p, isCall := params.(*mcp.CallToolParams)
	if !isCall || p == nil || len(p.Meta) > 0 || p.InputResponses != nil || p.RequestState != "" || !plainText(p.Name) {
		return nil, false
	}
	var args json.RawMessage
	switch a := p.Arguments.(type) {
	case json.RawMessage:
		if len(a) == 0 {
			return nil, false
		}
		args = a
	case map[string]any:
		if a == nil || len(a) > 0 {
			return nil, false
		}
		args = json.RawMessage(`{}`)
	default:
		return nil, false
	}
	buf := bytes.NewBuffer(make([]byte, 0, len(p.Name)+len(args)+len(`{"name":"","arguments":}`)))
	buf.WriteString(`{"name":"`)
	buf.WriteString(p.Name)
	buf.WriteString(`","arguments":`)
	if err := json.Compact(buf, args); err != nil {
		return nil, false // the encoder's error, in its words
	}
	buf.WriteByte('}')
	return buf.Bytes(), true
}

func (rl *relay) forget(id jsonrpc.ID) {
	rl.mu.Lock()
	delete(rl.pending, id)
	rl.mu.Unlock()
}

// cancel tells the server that the call id was given up.
func (rl *relay) cancel(ctx context.Context, id jsonrpc.ID) {
	nctx, stop := context.WithTimeout(context.WithoutCancel(ctx), notifyCancelTimeout)
	defer stop()
	b, err := marshalParams(&mcp.CancelledParams{Reason: ctx.Err().Error(), RequestID: id.Raw()})
	if err != nil {
		return
	}
	_ = rl.conn.Write(nctx, &jsonrpc.Request{Method: "notifications/cancelled", Params: b}) // best effort, as the SDK's
}

// marshalParams encodes params as the SDK's jsonrpc2 does: no HTML
// escaping, no trailing newline.
func marshalParams(params any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(params); err != nil {
		return nil, err
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), nil
}
