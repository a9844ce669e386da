package gateway

// The HTTP fast path: a plain tools/call of protocol 2026-07-28 is answered
// on the POST's own goroutine, through the very handler chain the SDK's
// stateless handler would call (receivingChain: the observer, the
// middleware, callTool with every gate), as the *mcp.CallToolRequest the
// SDK would build, and its answer is written as the SDK writes it (one SSE
// event, or for the errors SEP-2575 maps to a status, a JSON body). What is
// saved is the SDK's part: a server session made and closed per request,
// the body decoded six times (each through a decoder that allocates 32
// KiB), and three goroutine hand-offs between the POST and the handler.
//
// Everything the SDK would check first is checked here, or the request is
// left to it: the method, Content-Type, Accept, Last-Event-ID,
// Mcp-Protocol-Version (exactly 2026-07-28, the one supported version
// without sessions), Mcp-Method and Mcp-Name, one message (no batch) that
// jsonrpcwire.DecodePlain reads as the SDK does, params with no members
// but name, arguments (an object) and _meta, decoded with the SDK's
// decoder and flags, and a _meta naming the header's version. The SDK's
// checks of _meta (clientInfo, clientCapabilities) depend on its bytes
// alone: a _meta is taken only once the SDK has dispatched a tools/call
// carrying the same bytes to the chain (which it does only when they
// pass), and only a _meta naming no more than those three members, so
// that neither a progress token nor a log level is ever taken.
//
// The SDK gives the chain a session of its own per request; here every
// call of a profile shares one, made for the purpose and never reached by
// a client: it holds protocol 2026-07-28, as the SDK's would, which is all
// the chain reads of it (an upstream's request during the call is refused
// for that protocol, its log messages go nowhere as the session has no
// level, its progress has no token to go to). As in the SDK, the call's context carries the
// POST's values but does not end with it: a client that disconnects
// leaves the call to finish (its answer then written to nobody).

import (
	"context"
	"errors"
	"io"
	"mime"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/telemetry"
)

// maxLearnedHTTPMeta bounds the _meta an HTTP handler learns: one per
// client program and version, each at most maxLearnedMetaBytes. Past it
// the set starts again.
const maxLearnedHTTPMeta = 64

// httpFast is the fast path of one HTTPHandler.
type httpFast struct {
	g     *Gateway
	taken atomic.Uint64 // calls answered here

	mu      sync.Mutex
	learned map[string]bool      // _meta the SDK has dispatched a tools/call with
	chains  map[string]fastChain // by profile
}

// fastChain is the handler chain of a profile's stateless server and the
// session its calls are made in.
type fastChain struct {
	handler mcp.MethodHandler
	ss      *mcp.ServerSession
}

func newHTTPFast(g *Gateway) *httpFast {
	return &httpFast{g: g, learned: map[string]bool{}, chains: map[string]fastChain{}}
}

// learnKey carries, in the context of a request left to the SDK, the
// _meta it would teach; learnMeta hears of it when the SDK dispatches.
type learnKey struct{}

// learnMeta is the outermost receiving middleware of a stateless HTTP
// server: a tools/call the SDK dispatches has passed its checks of _meta.
func learnMeta(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if method == methodCallTool {
			if learn, ok := ctx.Value(learnKey{}).(func()); ok {
				learn()
			}
		}
		return next(ctx, method, req)
	}
}

func (f *httpFast) learn(meta string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if len(f.learned) >= maxLearnedHTTPMeta {
		clear(f.learned)
	}
	f.learned[meta] = true
}

// serve answers r itself when it is a plain tools/call the SDK would pass
// to profile's stateless server, reporting whether it did. msg is r's
// message as jsonrpcwire.DecodePlain reads its body, nil when it does not.
// Otherwise r (returned) may carry what the SDK's dispatch of it would
// teach.
func (f *httpFast) serve(w http.ResponseWriter, r *http.Request, profile string, msg jsonrpc.Message) (*http.Request, bool) {
	req, params, meta, ok := plainHTTPCall(r, msg)
	if !ok {
		return r, false
	}
	f.mu.Lock()
	known := f.learned[meta]
	f.mu.Unlock()
	if !known {
		if len(meta) > maxLearnedMetaBytes {
			return r, false
		}
		return r.WithContext(context.WithValue(r.Context(), learnKey{}, func() { f.learn(meta) })), false
	}
	chain, ok := f.chain(profile)
	if !ok {
		return r, false
	}
	f.taken.Add(1)
	// The SDK's handler context: the POST's values, not its end.
	ctx := context.WithoutCancel(r.Context())
	extra := &mcp.RequestExtra{
		TokenInfo:      auth.TokenInfoFromContext(r.Context()),
		Header:         r.Header,
		CloseSSEStream: func(mcp.CloseSSEStreamArgs) {}, // what the SDK's does at 2026-07-28
	}
	res, err := chain.handler(ctx, methodCallTool, &mcp.CallToolRequest{Session: chain.ss, Params: params, Extra: extra})
	f.write(w, req.ID, res, err)
	return r, true
}

// plainHTTPCall decodes r, whose body DecodePlain read as msg (nil: it
// does not), when it is a request the fast path takes: the SDK's checks
// pass for every one but those of _meta, whose bytes meta is.
func plainHTTPCall(r *http.Request, msg jsonrpc.Message) (_ *jsonrpc.Request, _ *mcp.CallToolParamsRaw, meta string, ok bool) {
	h := r.Header
	if r.Method != http.MethodPost || h.Get(protocolHeader) != protocolSessionless ||
		h.Get("Mcp-Method") != methodCallTool || len(h.Values("Last-Event-ID")) > 0 {
		return nil, nil, "", false
	}
	if mt, _, err := mime.ParseMediaType(h.Get("Content-Type")); err != nil || mt != "application/json" {
		return nil, nil, "", false
	}
	if json, stream := streamableAccepts(h.Values("Accept")); !json || !stream {
		return nil, nil, "", false
	}
	req, isReq := msg.(*jsonrpc.Request)
	if !isReq || !req.IsCall() || req.Method != methodCallTool {
		return nil, nil, "", false
	}
	v, ok := jsonrpcwire.Members(req.Params, "name", "arguments", "_meta")
	if !ok || v[0] == nil || (v[1] != nil && v[1][0] != '{') || v[2] == nil || v[2][0] != '{' {
		return nil, nil, "", false
	}
	params, ok := decodeCallParams(req.Params)
	if !ok {
		return nil, nil, "", false
	}
	if version, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string); version != protocolSessionless || !learnableMeta(params.Meta) {
		return nil, nil, "", false
	}
	if name := h.Get("Mcp-Name"); name == "" || name != params.Name { // the SDK requires one
		return nil, nil, "", false
	}
	return req, params, string(v[2]), true
}

// streamableAccepts is the SDK's reading of Accept: whether it takes JSON
// and an event stream.
func streamableAccepts(values []string) (jsonOK, streamOK bool) {
	for _, value := range values {
		for _, raw := range strings.Split(value, ",") {
			base, _, _ := strings.Cut(strings.TrimSpace(raw), ";")
			switch strings.ToLower(strings.TrimSpace(base)) {
			case "application/json", "application/*":
				jsonOK = true
			case "text/event-stream", "text/*":
				streamOK = true
			case "*/*":
				jsonOK, streamOK = true, true
			}
		}
	}
	return jsonOK, streamOK
}

// chain is profile's handler chain and session, made on first use; ok is
// false once the gateway is closed.
func (f *httpFast) chain(profile string) (fastChain, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if c, ok := f.chains[profile]; ok {
		return c, true
	}
	g := f.g
	s, err := g.serverFor(profile, telemetry.TransportHTTP, true)
	if err != nil {
		return fastChain{}, false
	}
	g.mu.Lock()
	closed := g.closed
	g.mu.Unlock()
	if closed {
		return fastChain{}, false
	}
	ss, err := s.Connect(context.Background(), &idleTransport{done: make(chan struct{})}, &mcp.ServerSessionOptions{
		State: &mcp.ServerSessionState{InitializeParams: &mcp.InitializeParams{ProtocolVersion: protocolSessionless}},
	})
	if err != nil {
		return fastChain{}, false
	}
	g.mu.Lock()
	if g.closed {
		g.mu.Unlock()
		ss.Close()
		return fastChain{}, false
	}
	g.fastHTTP = append(g.fastHTTP, ss)
	g.mu.Unlock()
	h := mcp.MethodHandler(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		// Unreached: the middleware answers every tools/call itself.
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeMethodNotFound, Message: "tools/call: not handled"}
	})
	for _, m := range g.receivingChain(profile, telemetry.TransportHTTP, true) {
		h = m(h)
	}
	c := fastChain{handler: h, ss: ss}
	f.chains[profile] = c
	return c, true
}

// closeFastHTTP closes the fast path's sessions (Close).
func (g *Gateway) closeFastHTTP() {
	g.mu.Lock()
	open := g.fastHTTP
	g.fastHTTP = nil
	g.mu.Unlock()
	for _, ss := range open {
		ss.Close()
	}
}

// write answers a call as the SDK's stateless handler does: an SSE event
// of the response, or for the errors SEP-2575 maps to a status, the
// response as JSON with that status.
func (f *httpFast) write(w http.ResponseWriter, id jsonrpc.ID, res mcp.Result, err error) {
	g := f.g
	resp := &jsonrpc.Response{ID: id, Error: err}
	if err == nil {
		if res == nil {
			g.logger.Error("tools/call answered with neither a result nor an error")
			resp.Error = &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "tools/call answered with neither a result nor an error"}
		} else {
			annotateServerInfo(res, &mcp.Implementation{Name: g.opts.ServerName, Version: g.opts.ServerVersion})
			b, ok := g.encodeResult(res, true)
			if !ok {
				return // as the SDK writes no answer it cannot encode
			}
			resp.Result = b
		}
	}
	data, encErr := jsonrpc.EncodeMessage(resp)
	if encErr != nil {
		g.logger.Error("tools/call answer not written: it cannot be encoded", "error", encErr)
		return
	}
	hd := w.Header()
	hd.Set("Cache-Control", "no-cache, no-transform")
	hd.Set("Content-Type", "text/event-stream")
	hd.Set("Connection", "keep-alive")
	if status := errorStatus(resp.Error); status != 0 {
		hd.Set("Content-Type", "application/json")
		w.WriteHeader(status)
		w.Write(data)
		return
	}
	out := make([]byte, 0, len("event: message\ndata: \n\n")+len(data))
	out = append(out, "event: message\ndata: "...)
	out = append(out, data...)
	out = append(out, "\n\n"...)
	w.Write(out)
	http.NewResponseController(w).Flush() // best effort, as the SDK's
}

// errorStatus is the HTTP status SEP-2575 gives a JSON-RPC error, as the
// SDK maps it; 0 for an answer sent as an event.
func errorStatus(err error) int {
	var jerr *jsonrpc.Error
	if err == nil || !errors.As(err, &jerr) {
		return 0
	}
	switch jerr.Code {
	case jsonrpc.CodeMethodNotFound:
		return http.StatusNotFound
	case jsonrpc.CodeInvalidParams, mcp.CodeUnsupportedProtocolVersion, mcp.CodeMissingRequiredClientCapabilities:
		return http.StatusBadRequest
	}
	return 0
}

// idleTransport is the connection of the fast path's sessions: no client
// is behind it. It reads nothing until closed and drops what the server
// sends (notifications to every session, such as a changed tool list);
// a request it refuses, as a stateless server cannot make one.
type idleTransport struct {
	done chan struct{}
	once sync.Once
}

func (t *idleTransport) Connect(context.Context) (mcp.Connection, error) { return t, nil }

func (t *idleTransport) Read(ctx context.Context) (jsonrpc.Message, error) {
	select {
	case <-t.done:
		return nil, io.EOF
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (t *idleTransport) Write(_ context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
		return errors.New("the fast path's session cannot make requests")
	}
	return nil
}

func (t *idleTransport) Close() error {
	t.once.Do(func() { close(t.done) })
	return nil
}

func (t *idleTransport) SessionID() string { return "" }
