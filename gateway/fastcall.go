package gateway

// The stdio fast path: a plain tools/call is taken off the connection
// before the SDK's dispatch and handed to the very handler chain the SDK
// would call (receivingChain: the observer, the middleware, callTool with
// every gate), as the *mcp.CallToolRequest the SDK would build, and its
// answer is encoded as the SDK encodes it. What is saved is the SDK's part:
// its decoding of the params twice (once for _meta, once whole, each
// through a decoder that allocates 32 KiB), its re-decoding of the
// 2026-07-28 _meta fields, and its handler queue.
//
// Anything not plainly simple goes to the SDK as before, so that no call is
// answered that the SDK would refuse or answer differently: a request
// before the session is initialized, one in a batch, a duplicate id,
// params with members other than name, arguments (an object) and _meta, or
// params the SDK's decoder would not read (they are decoded here with the
// same decoder and flags). A _meta is taken only when the SDK has answered
// a tools/call of this connection carrying the same bytes with a result:
// the SDK's checks of it (protocol version, clientInfo,
// clientCapabilities) depend on those bytes alone, and only _meta naming
// no more than those three is learned, so that neither a progress token
// nor a log level is ever taken.
//
// One order differs: the SDK handles a client's notifications in the order
// they came, before the calls after them start, while a call taken here
// may start before a notification just ahead of it is handled. None a
// client sends (initialized, cancelled, roots and progress) changes what
// a call's gates read, and cancelled is acted on here as it is read.
//
// Cancellation is the SDK's too: notifications/cancelled naming a call in
// flight here cancels it (and so its upstream request), the end of the
// input cancels every call, and an answer is not written once the input
// has ended, the connection is closed, or a write failed.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/telemetry"
)

// maxLearnedMeta bounds the _meta a connection learns: a client sends one.
const maxLearnedMeta = 8

// maxLearnedMetaBytes bounds the size of a _meta the fast paths learn, so
// that what they keep is bounded in bytes as well as in entries: a
// client's is a few hundred bytes (the go-sdk client's 200), while a
// message may be megabytes. A longer one is always the SDK's.
const maxLearnedMetaBytes = 4 << 10

// fastTransport wraps the transport of a stdio session: its connection,
// when it is a *jsonrpcwire.Conn, answers plain tools/call itself.
type fastTransport struct {
	mcp.Transport
	newConn func(*jsonrpcwire.Conn) *fastConn

	conn *fastConn // set by Connect
}

func (t *fastTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	wc, ok := c.(*jsonrpcwire.Conn)
	if !ok || t.newConn == nil {
		return c, nil
	}
	t.conn = t.newConn(wc)
	t.conn.base = context.WithoutCancel(ctx) // its values, as the SDK's handlers get them
	wc.SetTaker(t.conn.take)
	return t.conn, nil
}

// fastConn is a stdio connection whose plain tools/call are answered
// without the SDK's dispatch.
type fastConn struct {
	*jsonrpcwire.Conn
	g       *Gateway
	handler mcp.MethodHandler // the server's receiving chain (receivingChain)
	base    context.Context

	mu       sync.Mutex
	ss       *mcp.ServerSession // nil until Connect has returned
	calls    map[jsonrpc.ID]context.CancelCauseFunc
	sdkCalls map[jsonrpc.ID]string // calls the SDK is answering, with their _meta when learnable
	// learned is the _meta the SDK has answered a tools/call with, and
	// each one's decoding once the fast path has decoded it (nil before).
	learned map[string]mcp.Meta
	closed  bool // no call taken, no answer written: read ended, closing, or a write failed
	running sync.WaitGroup
}

func (g *Gateway) newFastConn(profile string) func(*jsonrpcwire.Conn) *fastConn {
	h := mcp.MethodHandler(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		// Unreached: the middleware answers every tools/call itself.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "tools/call: not handled"}
	})
	for _, m := range g.receivingChain(profile, telemetry.TransportStdio, false) {
		h = m(h)
	}
	return func(c *jsonrpcwire.Conn) *fastConn {
		return &fastConn{
			Conn: c, g: g, handler: h,
			calls:    map[jsonrpc.ID]context.CancelCauseFunc{},
			sdkCalls: map[jsonrpc.ID]string{},
			learned:  map[string]mcp.Meta{},
		}
	}
}

// serving sets the session the connection's requests belong to.
func (c *fastConn) serving(ss *mcp.ServerSession) {
	c.mu.Lock()
	c.ss = ss
	c.mu.Unlock()
}

// Read implements mcp.Connection: it returns what the SDK is to handle.
func (c *fastConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	for {
		msg, err := c.Conn.Read(ctx)
		if err != nil {
			c.end(err)
			return nil, err
		}
		req, ok := msg.(*jsonrpc.Request)
		if !ok {
			return msg, nil
		}
		if req.IsCall() {
			// Taken here only when it came before SetTaker or with the end
			// of input; the read loop has offered every other one.
			if run, taken := c.take(req); taken {
				if run != nil {
					go run()
				}
				continue
			}
			return msg, nil
		}
		if req.Method == "notifications/cancelled" {
			c.cancelled(req) // and the SDK sees it too, as before
		}
		return msg, nil
	}
}

// take takes req when it is a plain tools/call, reporting whether it did,
// with run, the call's work (nil: none, the request is dropped);
// otherwise it notes req as the SDK's. It is a jsonrpcwire.Taker.
func (c *fastConn) take(req *jsonrpc.Request) (run func(), taken bool) {
	if !req.IsCall() {
		return nil, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, dup := c.calls[req.ID]; dup {
		return nil, true // the SDK drops a request whose id is in flight, unanswered
	}
	if _, dup := c.sdkCalls[req.ID]; dup {
		return nil, false
	}
	meta, params, ok := c.plain(req)
	if !ok {
		c.sdkCalls[req.ID] = meta
		return nil, false
	}
	ctx, cancel := context.WithCancelCause(c.base)
	protocol, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string)
	sessionless := protocol >= protocolSessionless
	if sessionless {
		ctx = context.WithValue(ctx, quietLogKey{}, true)
	}
	c.calls[req.ID] = cancel
	c.running.Add(1)
	c.g.fastCalls.Add(1)
	extra, _ := req.Extra.(*mcp.RequestExtra)
	r := &mcp.CallToolRequest{Session: c.ss, Params: params, Extra: extra}
	return func() { c.serve(ctx, cancel, req.ID, r, sessionless) }, true
}

// plain decodes the params of req when it is a tools/call the fast path
// takes. meta is its _meta when the SDK's answer could teach it.
func (c *fastConn) plain(req *jsonrpc.Request) (meta string, params *mcp.CallToolParamsRaw, ok bool) {
	if req.Method != methodCallTool {
		return "", nil, false
	}
	// Valid: a part of a message DecodePlain or the SDK's decoder read.
	v, ok := jsonrpcwire.ValidMembers(req.Params, "name", "arguments", "_meta")
	if !ok || v[0] == nil || (v[1] != nil && v[1][0] != '{') || (v[2] != nil && v[2][0] != '{') {
		return "", nil, false
	}
	if v[2] != nil {
		decoded, learned := c.learned[string(v[2])]
		if !learned {
			if len(v[2]) > maxLearnedMetaBytes {
				return "", nil, false
			}
			if p, ok := decodeCallParams(req.Params); ok && learnableMeta(p.Meta) {
				return string(v[2]), nil, false
			}
			return "", nil, false
		}
		if decoded != nil {
			params, ok = decodeCallParamsMeta(req.Params, decoded)
		} else if params, ok = decodeCallParams(req.Params); ok {
			if !learnableMeta(params.Meta) {
				return "", nil, false
			}
			c.learned[string(v[2])] = cloneJSON(params.Meta).(map[string]any)
		}
	} else {
		params, ok = decodeCallParams(req.Params)
	}
	if !ok || c.ss == nil || c.closed || c.Conn.Batched(req.ID) || c.ss.InitializeParams() == nil {
		return "", nil, false
	}
	return "", params, true
}

// decodeCallParams decodes params as the SDK's unmarshalParams does
// (jsonrpcwire.UnmarshalAsSDK), without its decoder's buffer.
func decodeCallParams(data []byte) (params *mcp.CallToolParamsRaw, ok bool) {
	if err := jsonrpcwire.UnmarshalAsSDK(data, &params); err != nil || params == nil {
		return nil, false
	}
	return params, true
}

// callParamsMeta is mcp.CallToolParamsRaw as the fast path reads it of
// params (name, arguments and _meta alone, Members) whose _meta it has
// decoded before: that _meta's bytes are left undecoded.
type callParamsMeta struct {
	Meta      json.RawMessage `json:"_meta,omitempty"`
	Name      string          `json:"name"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// decodeCallParamsMeta is decodeCallParams of data whose _meta decodes to
// meta, without decoding it again: the same decoder reads the rest, and
// the params get a map of their own with meta's members, so that a
// handler setting or deleting one changes no other call's. The members'
// values (clientInfo, clientCapabilities) are shared: the handlers read
// them and never change them, as they never change a request's _meta
// but copy it (forward, the upstream's forwardMeta).
func decodeCallParamsMeta(data []byte, meta mcp.Meta) (*mcp.CallToolParamsRaw, bool) {
	var p *callParamsMeta
	if err := jsonrpcwire.UnmarshalAsSDK(data, &p); err != nil || p == nil {
		return nil, false
	}
	return &mcp.CallToolParamsRaw{Meta: maps.Clone(meta), Name: p.Name, Arguments: p.Arguments}, true
}

// cloneJSON is a deep copy of v, a value decoded from JSON into any.
func cloneJSON(v any) any {
	switch v := v.(type) {
	case map[string]any:
		if v == nil {
			return v
		}
		m := make(map[string]any, len(v))
		for k, e := range v {
			m[k] = cloneJSON(e)
		}
		return m
	case mcp.Meta:
		return cloneJSON(map[string]any(v))
	case []any:
		if v == nil {
			return v
		}
		s := make([]any, len(v))
		for i, e := range v {
			s[i] = cloneJSON(e)
		}
		return s
	}
	return v // a string, number, bool or nil: immutable
}

// learnableMeta reports whether m names nothing but what the SDK checks of
// a 2026-07-28 request.
func learnableMeta(m mcp.Meta) bool {
	for k := range m {
		switch k {
		case mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities:
		default:
			return false
		}
	}
	return true
}

// serve runs one call through the handler chain and writes its answer as
// the SDK would.
func (c *fastConn) serve(ctx context.Context, cancel context.CancelCauseFunc, id jsonrpc.ID, req *mcp.CallToolRequest, sessionless bool) {
	defer c.running.Done()
	defer cancel(nil)
	res, err := c.handler(ctx, methodCallTool, req)
	c.mu.Lock()
	delete(c.calls, id) // before the answer: the client may reuse the id once it has it
	closed := c.closed
	c.mu.Unlock()
	if closed {
		return // the SDK writes nothing once its connection is shutting down
	}
	var werr error
	if err != nil {
		werr = c.Conn.Write(context.WithoutCancel(ctx), &jsonrpc.Response{ID: id, Error: err})
	} else {
		if res == nil {
			c.g.logger.Error("tools/call answered with neither a result nor an error")
			return
		}
		if sessionless {
			annotateServerInfo(res, &mcp.Implementation{Name: c.g.opts.ServerName, Version: c.g.opts.ServerVersion})
		}
		b, ok := c.g.encodeResult(res, sessionless)
		if !ok {
			return
		}
		werr = c.Conn.WriteResult(context.WithoutCancel(ctx), id, b)
	}
	if werr != nil {
		c.end(werr)
	}
}

// annotateServerInfo is what the SDK does to a 2026-07-28 result: its
// serverInfo in _meta unless the result has one.
func annotateServerInfo(res mcp.Result, impl *mcp.Implementation) {
	m := res.GetMeta()
	if _, ok := m[mcp.MetaKeyServerInfo]; ok {
		return
	}
	if m == nil {
		m = map[string]any{}
	}
	m[mcp.MetaKeyServerInfo] = impl
	res.SetMeta(m)
}

// encodeResult is res as the SDK encodes a result (json.Encoder without
// HTML escaping, its newline trimmed); ok is false when it cannot be, and
// then, as the SDK does, no answer is written. A 2026-07-28 result is
// always the gateway's own encoding (encodedResult, with its serverInfo):
// the SDK would mark another as complete, which only it can.
func (g *Gateway) encodeResult(res mcp.Result, sessionless bool) (json.RawMessage, bool) {
	if w, isWire := res.(*wireResult); sessionless && (!isWire || w.wire == nil) {
		g.logger.Error("tools/call result not answered: a 2026-07-28 result without its encoding", "type", fmt.Sprintf("%T", res))
		return nil, false
	}
	if w, isWire := res.(*wireResult); isWire && w.wire != nil {
		// What the encoder makes of its MarshalJSON: the bytes compacted.
		// They are valid JSON (the upstream's, which its connection
		// decoded, or the gateway's own encoding), so bytes that are
		// compact already are what compacting makes of them.
		if compactJSON(w.wire) {
			return w.wire, true
		}
		var buf bytes.Buffer
		if err := json.Compact(&buf, w.wire); err != nil {
			g.logger.Error("tools/call result not answered: it cannot be encoded", "error", err)
			return nil, false
		}
		return buf.Bytes(), true
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(res); err != nil {
		g.logger.Error("tools/call result not answered: it cannot be encoded", "error", err)
		return nil, false
	}
	return bytes.TrimRight(buf.Bytes(), "\n"), true
}

// compactJSON reports whether data, valid JSON, has no whitespace outside
// its strings: json.Compact would leave it as it is.
func compactJSON(data []byte) bool {
	for i := 0; i < len(data); i++ {
		switch data[i] {
		case ' ', '\t', '\n', '\r':
			return false
		case '"':
			// To the closing quote: the first one after an even number of
			// backslashes.
			for {
				i++
				q := bytes.IndexByte(data[i:], '"')
				if q < 0 {
					return false // not valid JSON
				}
				n := 0
				for k := i + q - 1; k >= i && data[k] == '\\'; k-- {
					n++
				}
				i += q
				if n%2 == 0 {
					break
				}
			}
		}
	}
	return true
}

// cancelled cancels the call in flight here that a client's
// notifications/cancelled names (Conn has mapped its id to the safe one).
func (c *fastConn) cancelled(req *jsonrpc.Request) {
	var p struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(req.Params, &p) != nil {
		return
	}
	id, err := jsonrpc.MakeID(p.RequestID)
	if err != nil {
		return
	}
	c.mu.Lock()
	cancel := c.calls[id]
	c.mu.Unlock()
	if cancel != nil {
		cancel(nil)
	}
}

// Write implements mcp.Connection: the SDK's answers teach which _meta it
// accepts, and a failed write ends the calls in flight here, as it ends
// the SDK's.
func (c *fastConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.mu.Lock()
		if meta, ok := c.sdkCalls[resp.ID]; ok {
			delete(c.sdkCalls, resp.ID)
			if meta != "" && resp.Error == nil && len(c.learned) < maxLearnedMeta {
				c.learned[meta] = nil
			}
		}
		c.mu.Unlock()
	}
	err := c.Conn.Write(ctx, msg)
	if err != nil && ctx.Err() == nil {
		c.end(err)
	}
	return err
}

// end cancels every call in flight here, with cause, and writes no more of
// their answers.
func (c *fastConn) end(cause error) {
	c.mu.Lock()
	c.closed = true
	for _, cancel := range c.calls {
		cancel(cause)
	}
	c.mu.Unlock()
}

// Close implements mcp.Connection. The SDK closes its connection once its
// own requests are answered; the calls in flight here are cancelled.
func (c *fastConn) Close() error {
	c.end(mcp.ErrConnectionClosed)
	return c.Conn.Close()
}

// drain stops taking calls and waits for those in flight here to return:
// the SDK's Close, which lets its handlers finish but writes none of
// their answers once it has begun.
func (c *fastConn) drain() {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.running.Wait()
}

// wait waits until every call taken here has returned.
func (c *fastConn) wait() { c.running.Wait() }

// quietLogKey marks the context of a 2026-07-28 call taken by the fast
// path. The SDK gives such a request's handlers the log level its _meta
// names, none when it names none (and the fast path takes no _meta naming
// one), and sends no log message at no level; Log does the same.
type quietLogKey struct{}
