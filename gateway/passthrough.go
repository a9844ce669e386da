package gateway

// Pass-through: the gateway never hides a feature of its
// upstreams. Resources, resource templates, prompts, completion,
// subscriptions and logging levels are answered by the upstream (an
// Upstream that also implements Features, as upstream.Set does); progress,
// log messages, elicitation and sampling that an upstream sends during a
// call are relayed to the downstream session that made the call.
//
// # Routing what an upstream sends during a call
//
// Progress is routed exactly: the gateway replaces the client's
// progressToken with one of its own ("toolprof/N") before forwarding the
// call, and maps the upstream's notifications back to the calling session
// and its original token, so that two sessions using the same token never
// see each other's progress.
//
// Log messages, elicitation/create and sampling/createMessage carry no
// token. They go to the session of the most recent call still in flight on
// the upstream that sent them (its server name in the launch document);
// with a single call in flight (the common case) that is exact, with
// several it is the newest, since an upstream that asks mid-call is most
// likely serving the call that just arrived. With no call in flight a log
// message is delivered to no session (an upstream's log is not broadcast
// to sessions that did not call it) and an elicitation or sampling request
// fails with an error saying so. A relayed elicitation or sampling request
// is withdrawn from the client (notifications/cancelled) when the upstream
// withdraws it or when the call ends, before the call is answered.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Features is what an upstream offers beyond tools. upstream.Set
// implements it; an Upstream without it offers tools only.
type Features interface {
	// Capabilities is the union of the upstreams' capabilities.
	Capabilities() *mcp.ServerCapabilities
	ListResources(ctx context.Context) ([]*mcp.Resource, error)
	ListResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error)
	ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error)
	Subscribe(ctx context.Context, params *mcp.SubscribeParams) error
	Unsubscribe(ctx context.Context, params *mcp.UnsubscribeParams) error
	ListPrompts(ctx context.Context) ([]*mcp.Prompt, error)
	GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error)
	Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error)
	SetLoggingLevel(ctx context.Context, params *mcp.SetLoggingLevelParams) error
}

// serverNamer names the upstream server a served tool runs on.
type serverNamer interface {
	ServerOf(tool string) string
}

// progressPrefix starts the progress tokens the gateway sends upstream.
const progressPrefix = "toolprof/"

// relay is the gateway's pass-through state. Its zero value is ready.
type relay struct {
	mu sync.Mutex
	// subMu serializes subscription changes, upstream calls included, so
	// that an upstream unsubscribe still on its way cannot land after a
	// new first subscriber's subscribe.
	subMu sync.Mutex
	next  uint64
	calls []*inflight // in start order
	// subs counts, per resource URI, the downstream sessions subscribed:
	// the upstream is subscribed on the first and unsubscribed after the
	// last.
	subs    map[string]map[*mcp.ServerSession]bool
	watched map[*mcp.ServerSession]bool // sessions whose end releases their subscriptions
	level   mcp.LoggingLevel            // most verbose level any session asked for

	// progressDropped counts progress notifications naming a call no
	// longer in flight; logsUnrouted log messages with no call in flight.
	progressDropped atomic.Uint64
	logsUnrouted    atomic.Uint64
}

// inflight is one tools/call forwarded to an upstream and not answered yet.
type inflight struct {
	id     uint64
	server string
	ss     *mcp.ServerSession
	ctx    context.Context // the downstream request's: it routes replies to its stream
	token  any             // the client's progress token, nil when none

	// The requests relayed to the client during the call (elicitation,
	// sampling), guarded by relay.mu: withdrawn when the call ends, and
	// waited for before it is answered.
	relays  map[uint64]context.CancelFunc
	relayed sync.WaitGroup
	// ending is set (under relay.mu) when forward returns, before the
	// relayed requests are withdrawn; none is relayed after it.
	ending atomic.Bool
	// delivering counts the progress and log notifications being written
	// to the client now; delivered is when the last one was (Unix ns).
	delivering atomic.Int32
	delivered  atomic.Int64
}

// Bounds of drain.
const (
	drainQuiet = 20 * time.Millisecond
	drainMax   = 30 * time.Second
)

// deliver writes one notification of c to its client, noting it for drain.
func (c *inflight) deliver(send func() error) error {
	c.delivering.Add(1)
	defer func() {
		c.delivered.Store(time.Now().UnixNano())
		c.delivering.Add(-1)
	}()
	return send()
}

// drain waits, once the upstream has answered c, until the notifications
// relayed for c have been written to its client: none is being written and
// none was for drainQuiet. A client that reads slowly so holds the answer
// back (backpressure) instead of losing the notifications the upstream
// sent before it, which would find no call in flight. A call that relayed
// none returns at once; ctx and drainMax bound a client that stops reading.
func drain(ctx context.Context, c *inflight) {
	deadline := time.Now().Add(drainMax)
	for {
		quiet := time.Since(time.Unix(0, c.delivered.Load())) >= drainQuiet
		if c.delivering.Load() == 0 && quiet {
			return
		}
		if ctx.Err() != nil || time.Now().After(deadline) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

func (g *Gateway) features() (Features, bool) {
	f, ok := g.opts.Upstream.(Features)
	return f, ok
}

// serverOptions are the options of every per-profile *mcp.Server:
// capabilities are the upstreams' union (tools always, with list_changed),
// and subscriptions and completion are handled when an upstream offers them.
func (g *Gateway) serverOptions() *mcp.ServerOptions {
	opts := &mcp.ServerOptions{
		// Set explicitly: no tools are registered with the SDK, so it would
		// not infer the tools capability.
		Capabilities: &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}},
		// No Instructions: the middleware sets them per session.
		Logger: g.logger,
	}
	f, ok := g.features()
	if !ok {
		return opts
	}
	caps := f.Capabilities()
	if caps == nil {
		caps = &mcp.ServerCapabilities{}
	}
	caps.Tools = &mcp.ToolCapabilities{ListChanged: true}
	opts.Capabilities = caps
	if caps.Resources != nil && caps.Resources.Subscribe {
		opts.SubscribeHandler = func(ctx context.Context, req *mcp.SubscribeRequest) error {
			return g.subscribe(ctx, f, req.Session, req.Params)
		}
		opts.UnsubscribeHandler = func(ctx context.Context, req *mcp.UnsubscribeRequest) error {
			return g.unsubscribe(ctx, f, req.Session, req.Params)
		}
	}
	if caps.Completions != nil {
		opts.CompletionHandler = func(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return f.Complete(ctx, req.Params)
		}
	}
	return opts
}

// passThrough answers the methods an upstream serves: resources, resource
// templates and prompts (every upstream page in one page: the gateway
// issues no cursors for them), and forwards logging/setLevel after the SDK
// has recorded the session's level. ok is false for any other method, and
// for every method when the upstream offers no Features.
func (g *Gateway) passThrough(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (res mcp.Result, ok bool, err error) {
	f, has := g.features()
	if !has {
		return nil, false, nil
	}
	switch method {
	case "resources/list":
		if p, _ := req.GetParams().(*mcp.ListResourcesParams); p != nil && p.Cursor != "" {
			return nil, true, badCursor(method)
		}
		list, err := f.ListResources(ctx)
		if err != nil {
			return nil, true, upstreamErr(err)
		}
		return &mcp.ListResourcesResult{Resources: nonNil(list)}, true, nil
	case "resources/templates/list":
		if p, _ := req.GetParams().(*mcp.ListResourceTemplatesParams); p != nil && p.Cursor != "" {
			return nil, true, badCursor(method)
		}
		list, err := f.ListResourceTemplates(ctx)
		if err != nil {
			return nil, true, upstreamErr(err)
		}
		return &mcp.ListResourceTemplatesResult{ResourceTemplates: nonNil(list)}, true, nil
	case "resources/read":
		p, _ := req.GetParams().(*mcp.ReadResourceParams)
		if p == nil {
			return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": missing params"}
		}
		r, err := f.ReadResource(ctx, p)
		if err != nil {
			return nil, true, upstreamErr(err)
		}
		return r, true, nil
	case "prompts/list":
		if p, _ := req.GetParams().(*mcp.ListPromptsParams); p != nil && p.Cursor != "" {
			return nil, true, badCursor(method)
		}
		list, err := f.ListPrompts(ctx)
		if err != nil {
			return nil, true, upstreamErr(err)
		}
		return &mcp.ListPromptsResult{Prompts: nonNil(list)}, true, nil
	case "prompts/get":
		p, _ := req.GetParams().(*mcp.GetPromptParams)
		if p == nil {
			return nil, true, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": missing params"}
		}
		r, err := f.GetPrompt(ctx, p)
		if err != nil {
			return nil, true, upstreamErr(err)
		}
		return r, true, nil
	case "logging/setLevel":
		res, err := next(ctx, method, req)
		if err != nil {
			return nil, true, err
		}
		if p, _ := req.GetParams().(*mcp.SetLoggingLevelParams); p != nil {
			if err := g.raiseLevel(ctx, f, p.Level); err != nil {
				g.logger.Warn("logging/setLevel not passed upstream", "level", p.Level, "error", err)
			}
		}
		return res, true, nil
	}
	return nil, false, nil
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func badCursor(method string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: method + ": the gateway returns every item in one page and issues no cursor; call without one"}
}

// upstreamErr passes an upstream's JSON-RPC error through and turns any
// other failure into an internal error that says the upstream is
// unavailable.
func upstreamErr(err error) error {
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		return rpc
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInternalError, Message: "upstream unavailable: " + err.Error()}
}

// levelRank orders logging levels, most verbose first.
func levelRank(l mcp.LoggingLevel) int {
	i := slices.Index([]mcp.LoggingLevel{"debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"}, l)
	if i < 0 {
		return 1 << 10
	}
	return i
}

// raiseLevel sets the upstreams' level to the most verbose level any
// session has asked for: an upstream session is shared by every downstream
// session, and the SDK filters what each downstream session gets by its
// own level.
func (g *Gateway) raiseLevel(ctx context.Context, f Features, level mcp.LoggingLevel) error {
	g.relay.mu.Lock()
	if g.relay.level != "" && levelRank(level) >= levelRank(g.relay.level) {
		g.relay.mu.Unlock()
		return nil
	}
	g.relay.level = level
	g.relay.mu.Unlock()
	return f.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level})
}

func (g *Gateway) subscribe(ctx context.Context, f Features, ss *mcp.ServerSession, p *mcp.SubscribeParams) error {
	r := &g.relay
	r.subMu.Lock()
	defer r.subMu.Unlock()
	r.mu.Lock()
	first := len(r.subs[p.URI]) == 0
	r.mu.Unlock()
	if first {
		if err := f.Subscribe(ctx, p); err != nil {
			return upstreamErr(err)
		}
	}
	r.mu.Lock()
	if r.subs == nil {
		r.subs = map[string]map[*mcp.ServerSession]bool{}
	}
	if r.subs[p.URI] == nil {
		r.subs[p.URI] = map[*mcp.ServerSession]bool{}
	}
	r.subs[p.URI][ss] = true
	watch := ss != nil && !r.watched[ss]
	if watch {
		if r.watched == nil {
			r.watched = map[*mcp.ServerSession]bool{}
		}
		r.watched[ss] = true
	}
	r.mu.Unlock()
	if watch {
		go func() {
			ss.Wait()
			g.releaseSubscriptions(f, ss)
		}()
	}
	return nil
}

// releaseSubscriptions forgets an ended session's subscriptions and
// unsubscribes upstream from the URIs no session is subscribed to any more.
func (g *Gateway) releaseSubscriptions(f Features, ss *mcp.ServerSession) {
	r := &g.relay
	r.subMu.Lock()
	defer r.subMu.Unlock()
	r.mu.Lock()
	delete(r.watched, ss)
	var orphans []string
	for uri, sessions := range r.subs {
		if sessions[ss] {
			delete(sessions, ss)
			if len(sessions) == 0 {
				delete(r.subs, uri)
				orphans = append(orphans, uri)
			}
		}
	}
	r.mu.Unlock()
	slices.Sort(orphans)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, uri := range orphans {
		if err := f.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
			g.logger.Debug("unsubscribe after session end", "uri", uri, "error", err)
		}
	}
}

func (g *Gateway) unsubscribe(ctx context.Context, f Features, ss *mcp.ServerSession, p *mcp.UnsubscribeParams) error {
	r := &g.relay
	r.subMu.Lock()
	defer r.subMu.Unlock()
	r.mu.Lock()
	delete(r.subs[p.URI], ss)
	last := len(r.subs[p.URI]) == 0
	if last {
		delete(r.subs, p.URI)
	}
	r.mu.Unlock()
	if last {
		if err := f.Unsubscribe(ctx, p); err != nil {
			return upstreamErr(err)
		}
	}
	return nil
}

// forward runs an allowed call on the upstream, registered as in flight
// for the calling session so that what the upstream sends during it is
// relayed there, with the progress token replaced by the gateway's own.
func (g *Gateway) forward(ctx context.Context, req mcp.Request, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	server := ""
	if n, ok := g.opts.Upstream.(serverNamer); ok {
		server = n.ServerOf(params.Name)
	}
	r := &g.relay
	r.mu.Lock()
	r.next++
	c := &inflight{id: r.next, server: server, ss: ss, ctx: ctx}
	r.calls = append(r.calls, c)
	r.mu.Unlock()
	defer func() {
		drain(ctx, c)
		r.mu.Lock()
		r.calls = slices.DeleteFunc(r.calls, func(x *inflight) bool { return x == c })
		c.ending.Store(true)
		withdraw := slices.Collect(maps.Values(c.relays))
		r.mu.Unlock()
		// Withdrawn before the call is answered, and waited for, so that a
		// client never keeps a question nobody waits for.
		for _, cancel := range withdraw {
			cancel()
		}
		c.relayed.Wait()
	}()
	if tok, ok := params.Meta["progressToken"]; ok && tok != nil {
		c.token = tok
		p := *params
		p.Meta = make(mcp.Meta, len(params.Meta))
		for k, v := range params.Meta {
			p.Meta[k] = v
		}
		p.Meta["progressToken"] = progressPrefix + strconv.FormatUint(c.id, 10)
		params = &p
	}
	return g.opts.Upstream.CallTool(ctx, params)
}

// callFor finds the in-flight call a progress token names.
func (g *Gateway) callFor(token any) *inflight {
	s, ok := token.(string)
	if !ok {
		return nil
	}
	rest, ok := strings.CutPrefix(s, progressPrefix)
	if !ok {
		return nil
	}
	id, err := strconv.ParseUint(rest, 10, 64)
	if err != nil {
		return nil
	}
	g.relay.mu.Lock()
	defer g.relay.mu.Unlock()
	for _, c := range g.relay.calls {
		if c.id == id {
			return c
		}
	}
	return nil
}

// newestCall is the most recent call in flight on server with a session.
func (g *Gateway) newestCall(server string) *inflight {
	g.relay.mu.Lock()
	defer g.relay.mu.Unlock()
	for i := len(g.relay.calls) - 1; i >= 0; i-- {
		if c := g.relay.calls[i]; c.server == server && c.ss != nil {
			return c
		}
	}
	return nil
}

// Progress relays an upstream's progress notification to the session whose
// call it reports on, with that session's own token. A notification for no
// call in flight is dropped, and counted (Health).
func (g *Gateway) Progress(_ context.Context, server string, p *mcp.ProgressNotificationParams) {
	c := g.callFor(p.ProgressToken)
	if c == nil {
		if s, ok := p.ProgressToken.(string); ok && strings.HasPrefix(s, progressPrefix) {
			if n := g.relay.progressDropped.Add(1); n&(n-1) == 0 { // 1, 2, 4, ...: a flood logs little
				g.logger.Warn("progress notification dropped: its call is no longer in flight", "server", server, "dropped", n)
			}
		}
		return
	}
	if c.ss == nil || c.token == nil {
		return
	}
	out := *p
	out.ProgressToken = c.token
	if err := c.deliver(func() error { return c.ss.NotifyProgress(c.ctx, &out) }); err != nil {
		g.logger.Debug("progress not relayed", "server", server, "error", err)
	}
}

// Log relays an upstream's notifications/message to the session of the
// newest call in flight on server; the SDK applies that session's level.
func (g *Gateway) Log(_ context.Context, server string, p *mcp.LoggingMessageParams) {
	c := g.newestCall(server)
	if c == nil {
		g.relay.logsUnrouted.Add(1)
		g.logger.Debug("upstream log message with no call in flight: not relayed", "server", server)
		return
	}
	if err := c.deliver(func() error {
		if c.ctx.Value(quietLogKey{}) != nil {
			return nil // a 2026-07-28 call naming no level, as the SDK's Log leaves it (fastcall.go)
		}
		return c.ss.Log(c.ctx, p)
	}); err != nil {
		g.logger.Debug("log message not relayed", "server", server, "error", err)
	}
}

// Elicit asks the session of the newest call in flight on server.
func (g *Gateway) Elicit(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
	c, rctx, done, err := g.relayContext(ctx, server, "elicitation")
	if err != nil {
		return nil, err
	}
	defer done()
	return c.ss.Elicit(rctx, p)
}

// CreateMessage asks the session of the newest call in flight on server to
// sample.
func (g *Gateway) CreateMessage(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
	c, rctx, done, err := g.relayContext(ctx, server, "sampling request")
	if err != nil {
		return nil, err
	}
	defer done()
	return c.ss.CreateMessage(rctx, p) //lint:ignore SA1019 upstreams still sample
}

// relayContext is the context of a request that upstream (server) sends to
// the client of its newest call in flight, registered with that call. It
// carries the downstream request's values, which send the request on that
// request's stream, and it ends when the upstream withdraws its request
// (upstream, the upstream's request context, ends) or when the downstream
// call ends (answered, cancelled by its client or cut by --call-timeout):
// either way the SDK then sends the client notifications/cancelled for it.
// done must be called when the relayed request has returned.
//
// Why the ID hiding: the SDK sends that notifications/cancelled after the
// relayed request has returned, from a goroutine of its own, on the stream
// of the downstream request its context names (over streamable HTTP); the
// downstream call's answer closes that stream, and a notification that
// comes after it is dropped ("write to closed stream"). So once the
// downstream call is ending the context no longer names the downstream
// request (it hides the value of type jsonrpc.ID, the SDK's related-request
// key), and the SDK sends the notification on the session's standalone
// stream, which outlives the call. Over stdio there is one stream and
// nothing changes.
func (g *Gateway) relayContext(upstream context.Context, server, what string) (*inflight, context.Context, func(), error) {
	r := &g.relay
	r.mu.Lock()
	defer r.mu.Unlock()
	var c *inflight
	for i := len(r.calls) - 1; i >= 0; i-- {
		if x := r.calls[i]; x.server == server && x.ss != nil && !x.ending.Load() {
			c = x
			break
		}
	}
	if c == nil {
		return nil, nil, nil, fmt.Errorf("%s from upstream %q: no downstream call in flight on it to ask", what, server)
	}
	if v := c.protocol(); v >= protocolSessionless {
		// Fail closed, saying why, rather than with the SDK's refusal,
		// which tells the upstream to do what only the gateway could.
		g.logger.Warn("upstream request refused: its caller's protocol has no server requests", "server", server, "request", what, "protocol", v)
		return nil, nil, nil, fmt.Errorf("%s from upstream %q refused: the client of the call in flight speaks MCP %s, on which a server cannot send it requests during a call (they come back as input-required results, SEP-2322), and toolprof relays an upstream's requests only to clients of 2025-11-25 and earlier", what, server, v)
	}
	ctx, cancel := context.WithCancel(&relayedContext{Context: context.WithoutCancel(c.ctx), call: c})
	stopUp := context.AfterFunc(upstream, cancel)
	stopDown := context.AfterFunc(c.ctx, cancel)
	r.next++
	id := r.next
	if c.relays == nil {
		c.relays = map[uint64]context.CancelFunc{}
	}
	c.relays[id] = cancel
	c.relayed.Add(1)
	done := func() {
		stopUp()
		stopDown()
		cancel()
		r.mu.Lock()
		delete(c.relays, id)
		r.mu.Unlock()
		c.relayed.Done()
	}
	return c, ctx, done, nil
}

// protocol is the MCP version the call's client speaks, as its session
// holds it ("" when unknown).
func (c *inflight) protocol() string {
	if p := c.ss.InitializeParams(); p != nil {
		return p.ProtocolVersion
	}
	return ""
}

// relayedContext carries a downstream request's values to the requests
// relayed during its call, except that once the call is ending (its context
// done, or forward returning) it no longer names the downstream request:
// see relayContext.
type relayedContext struct {
	context.Context
	call *inflight
}

func (x *relayedContext) Value(key any) any {
	v := x.Context.Value(key)
	if _, ok := v.(jsonrpc.ID); ok && (x.call.ending.Load() || x.call.ctx.Err() != nil) {
		return nil
	}
	return v
}

// ResourceUpdated relays an upstream's notifications/resources/updated to
// the downstream sessions subscribed to the URI.
func (g *Gateway) ResourceUpdated(ctx context.Context, server string, p *mcp.ResourceUpdatedNotificationParams) {
	g.mu.Lock()
	servers := make([]*mcp.Server, 0, len(g.servers))
	for _, s := range g.servers {
		servers = append(servers, s)
	}
	g.mu.Unlock()
	for _, s := range servers {
		if err := s.ResourceUpdated(ctx, p); err != nil {
			g.logger.Debug("resource update not relayed", "server", server, "error", err)
		}
	}
}

// Reconnected restores, on an upstream whose session was replaced, what
// sessions had set through the gateway: the logging level and the resource
// subscriptions (sent through the Set, which routes each to its server;
// another server holding the same subscription accepts it again).
func (g *Gateway) Reconnected(ctx context.Context, server string) {
	f, ok := g.features()
	if !ok {
		return
	}
	r := &g.relay
	r.mu.Lock()
	level := r.level
	uris := make([]string, 0, len(r.subs))
	for uri := range r.subs {
		uris = append(uris, uri)
	}
	r.mu.Unlock()
	slices.Sort(uris)
	if level != "" {
		if err := f.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: level}); err != nil {
			g.logger.Warn("logging level not restored after reconnection", "server", server, "error", err)
		}
	}
	for _, uri := range uris {
		if err := f.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			g.logger.Warn("subscription not restored after reconnection", "server", server, "uri", uri, "error", err)
		}
	}
}
