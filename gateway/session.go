package gateway

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/tokens"
	"github.com/toolprof/toolprof/upstream"
)

// MCP method names the middleware handles.
const (
	methodInitialize = "initialize"
	methodDiscover   = "server/discover"
	methodListTools  = "tools/list"
	methodCallTool   = "tools/call"
)

// session is the gateway's state for one MCP session.
type session struct {
	profile string // the profile this session is served (may be the exploration profile)

	mu       sync.Mutex
	rec      telemetry.Session
	recorded bool // the start has been recorded
	seq      uint64

	groups sessionGroups // tool groups switched on (groups.go)

	calls  atomic.Int64  // tools/call in flight (admission.go)
	search sessionSearch // tools called, for search's co-usage (search.go)
	// sessionless marks a usage session of 2026-07-28 requests
	// (stateless.go): offered no enable_tools.
	sessionless bool
	// cacheScope is the cacheScope of its 2026-07-28 listings: "public"
	// when every caller at its URL is listed the same tools.
	cacheScope string
}

// dispatch answers one request of session s: tools/list and tools/call
// itself, what passes through by the upstreams, and the rest by next.
func (g *Gateway) dispatch(ctx context.Context, s *session, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	switch method {
	case methodListTools:
		return g.listTools(s, req)
	case methodCallTool:
		return g.callTool(ctx, s, req)
	}
	res, ok, err := g.passThrough(ctx, method, req, next)
	if !ok {
		return next(ctx, method, req)
	}
	return res, err
}

// middleware answers tools/list and tools/call for sessions of server
// (profile, transport), and puts the session's instructions into the
// handshake results.
func (g *Gateway) middleware(profile, transport string, stateless bool) mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if stateless || sessionless(req) {
				return g.serveSessionless(ctx, method, req, next, profile, transport)
			}
			s := g.session(req, profile, transport)
			noteSession(ctx, s)
			res, err := g.dispatch(ctx, s, method, req, next)
			if err == nil {
				switch r := res.(type) {
				case *mcp.InitializeResult:
					r.Instructions = g.instructions(s)
					s.noteClient(req, r.ProtocolVersion)
				case *mcp.DiscoverResult:
					r.Instructions = g.instructions(s)
					s.noteClient(req, "")
				}
			}
			if err == nil && handshaken(req) {
				if !s.noted() {
					// A 2026-07-28 client may skip server/discover; every
					// request then carries its identity.
					s.noteClient(req, "")
				}
				g.recordStart(s)
			}
			return res, err
		}
	}
}

// instructions are what a session is told about the server: its profile's,
// then the operating context's summary as the sidecar reads now, then each
// upstream's own (upstreamInstructions).
func (g *Gateway) instructions(s *session) string {
	var own string
	var keep profiles.UpstreamInstructions
	// A reload may have removed the session's profile: no instructions of
	// its own then, and every upstream's.
	if p, ok := g.cat().resolved.Profiles[s.profile]; ok {
		own, keep = p.Instructions, p.UpstreamInstructions
	}
	return upstreamInstructions(contextInstructions(g.opts.OperatingContext, own), g.opts.Upstream, keep)
}

// session returns the state of the request's session, creating it (and a
// watcher recording its end) on first sight.
func (g *Gateway) session(req mcp.Request, profile, transport string) *session {
	ss, _ := req.GetSession().(*mcp.ServerSession)
	g.mu.Lock()
	defer g.mu.Unlock()
	if s, ok := g.sessions[ss]; ok && ss != nil {
		return s
	}
	s := &session{profile: profile, cacheScope: toolsCacheScope}
	s.rec = telemetry.Session{
		ID:            g.newSessionID(),
		Start:         time.Now(),
		Transport:     transport,
		Profile:       profile,
		ServerVersion: g.opts.ServerVersion,
		CatalogHash:   g.cat().hash,
	}
	if cred, hasCred := g.requestCredential(req); g.explorable(profile, cred, hasCred) && g.exploring() {
		s.profile = g.cat().explore
		s.rec.Profile = g.cat().explore
		s.rec.Exploration = true
	}
	// Recorded so that the derivation does not take a session served only
	// read tools (an exploration one under --read-only too) as one that saw
	// every tool.
	s.rec.ReadOnly = g.readOnly(s.profile)
	if ss == nil || g.closed {
		return s // not tracked: it cannot be waited for
	}
	g.sessions[ss] = s
	g.ending.Add(1)
	go func() {
		defer g.ending.Done()
		ss.Wait()
		g.waitFast(ss) // its calls are recorded before its end
		g.endSession(ss, s)
	}()
	return s
}

// explorable reports whether a request for profile, with credential cred
// when hasCred, may be explored (served the exploration profile instead),
// by the stateful and the stateless rules alike. Never when profile is
// read_only: exploration would serve mutating and destructive tools the
// operator made the profile refuse (under --read-only every profile, the
// exploration one too, stays read-only, so those requests still explore).
// Never for a token bound to a profile or a ceiling: exploration would
// widen what the operator bound it to.
func (g *Gateway) explorable(profile string, cred tokens.Entry, hasCred bool) bool {
	return g.opts.Explore > 0 && !g.profileReadOnly(profile) && !(hasCred && cred.Selects())
}

// profileReadOnly reports whether profile itself is marked read_only.
func (g *Gateway) profileReadOnly(profile string) bool {
	p, ok := g.cat().resolved.Profiles[profile]
	return ok && p.ReadOnly
}

func (g *Gateway) newSessionID() string {
	if g.opts.Recorder != nil {
		return g.opts.Recorder.NewSessionID()
	}
	return rand.Text()
}

// clientName is the client's name from its handshake ("" before it).
func (s *session) clientName() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.ClientName
}

// toolErrorText joins the text content of a tool error.
func toolErrorText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if t, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, t.Text)
		}
	}
	return strings.Join(parts, "; ")
}

// noted reports whether the client's protocol version is known.
func (s *session) noted() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.rec.ProtocolVersion != ""
}

// noteClient copies the client's identity and protocol version into the
// session record.
func (s *session) noteClient(req mcp.Request, negotiated string) {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	if !ok {
		return
	}
	p := ss.InitializeParams()
	s.mu.Lock()
	defer s.mu.Unlock()
	if p != nil {
		if p.ClientInfo != nil {
			s.rec.ClientName = storedName(p.ClientInfo.Name, maxClientField)
			s.rec.ClientVersion = storedName(p.ClientInfo.Version, maxClientField)
		}
		s.rec.ProtocolVersion = storedName(p.ProtocolVersion, maxClientField)
	}
	if negotiated != "" {
		s.rec.ProtocolVersion = negotiated
	}
}

// handshaken reports whether the request's session has completed a
// handshake. A session that never does (such as the one a stateful HTTP
// handler opens for a server/discover probe before the client falls back to
// initialize) is not recorded.
func handshaken(req mcp.Request) bool {
	ss, ok := req.GetSession().(*mcp.ServerSession)
	return !ok || ss == nil || ss.InitializeParams() != nil
}

// recordStart records the session the first time one of its requests has
// been handled, so that the client's identity is in the first record.
func (g *Gateway) recordStart(s *session) {
	s.mu.Lock()
	if s.recorded {
		s.mu.Unlock()
		return
	}
	s.recorded = true // without a Recorder too: the Observer sees the end
	rec := s.rec
	s.mu.Unlock()
	if g.opts.Recorder != nil {
		g.opts.Recorder.Session(rec)
	}
}

// endSession records the end of a session and forgets it.
func (g *Gateway) endSession(ss *mcp.ServerSession, s *session) {
	g.mu.Lock()
	delete(g.sessions, ss)
	g.mu.Unlock()
	s.mu.Lock()
	s.rec.End = time.Now()
	started := s.recorded
	rec := s.rec
	s.mu.Unlock()
	if started && g.opts.Recorder != nil {
		g.opts.Recorder.Session(rec)
	}
	if started {
		g.observeSessionEnd(rec)
	}
}

// listTools answers tools/list: without a cursor every allowed tool, with
// one a page of them.
func (g *Gateway) listTools(s *session, req mcp.Request) (mcp.Result, error) {
	s.mu.Lock()
	s.rec.ToolsListCalls++
	s.mu.Unlock()
	var cursor string
	if p, ok := req.GetParams().(*mcp.ListToolsParams); ok && p != nil {
		cursor = p.Cursor
	}
	allowed, enable := g.sessionListed(s) // by name, then enable_tools and switched-on groups (groups.go)
	if snap := g.requestSnapshot(g.cat(), req); snap.CredentialCeiling != "" {
		allowed = withinCeilings(snap, allowed) // groups switched on under a ceiling narrowed since
	}
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	names := allowed
	if cursor != "" {
		offset, err := decodeCursor(g.cursorKey, s.profile, cursor)
		if err != nil {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
		}
		offset = min(offset, len(allowed))
		end := min(offset+g.opts.PageSize, len(allowed))
		names = allowed[offset:end]
		if end < len(allowed) {
			res.NextCursor = EncodeCursor(g.cursorKey, s.profile, end)
		}
	}
	for _, n := range names {
		if t, ok := g.listedTool(n, enable); ok {
			res.Tools = append(res.Tools, t)
		}
	}
	g.withContextTool(g.opts.OperatingContext, res)
	g.withAlwaysLoad(s.profile, res.Tools) // alwaysload.go
	wire, err := g.cat().wireTools(res.Tools, g.dropIcons(s.profile))
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.rec.ToolsListPages++
	s.mu.Unlock()
	return toolsListResult(req, res, wire, s.cacheScope), nil
}

// withinCeilings returns those of names that snap's ceilings let be
// served: the upstreams' tools within them, and the gateway's own
// (enable_tools, find_tools, call_tool).
func withinCeilings(snap *policy.Snapshot, names []string) []string {
	out := make([]string, 0, len(names))
	for _, n := range names {
		if _, upstream := snap.Tools[n]; !upstream || snap.InCeiling(n) {
			out = append(out, n)
		}
	}
	return out
}

// callTool answers tools/call: an unknown tool is a JSON-RPC error, a tool
// outside the session's profile the policy envelope, and any other call is
// forwarded to the upstream with the request's context.
func (g *Gateway) callTool(ctx context.Context, s *session, req mcp.Request) (res mcp.Result, err error) {
	params, _ := req.GetParams().(*mcp.CallToolParamsRaw)
	if params == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "tools/call: missing params"}
	}
	protocol, _ := params.Meta[mcp.MetaKeyProtocolVersion].(string)
	release, ok := g.admit(s)
	if !ok {
		res, _ := g.encodedResult(g.busy(s, params.Name).result(), protocol) // never ran: not recorded
		return res, nil
	}
	defer release()
	call := telemetry.Call{Tool: params.Name, Start: time.Now(), RequestBytes: requestSize(params)}
	defer func() {
		call.Duration = time.Since(call.Start)
		if err == nil {
			res, call.ResponseBytes = g.encodedResult(res, protocol) // rawresult.go
		}
		g.recordCall(s, call)
		noteCall(ctx, call)
	}()

	if env, ok := checkArguments(params.Name, params.Arguments); !ok {
		call.Outcome = telemetry.OutcomeDenied
		return env.result(), nil
	}
	oc := g.opts.OperatingContext
	if r, ok, err := g.contextTool(oc, params); ok {
		if err != nil {
			call.Outcome = telemetry.OutcomeToolError
			return nil, err
		}
		call.Outcome = telemetry.OutcomeOK
		if r.IsError {
			call.Outcome = telemetry.OutcomeDenied
			return Envelope{
				Code:             CodeInvalidArguments,
				Message:          toolErrorText(r),
				Retryable:        false,
				Category:         CategoryValidation,
				SuggestedActions: []string{"call " + params.Name + " with {} for the preview, or {\"section\": NAME} with a section the preview lists"},
			}.result(), nil
		}
		return r, nil
	}
	snap := g.requestSnapshot(g.cat(), req)
	if r, ok := g.enableTools(ctx, snap, s, req, params, &call); ok {
		return r, nil
	}
	if r, ok, err := g.findTools(snap, s, params, &call); ok {
		return r, err
	}
	viaSearch := false // call_tool: the call it carries passes every gate below (search.go)
	if inner, env, ok := g.unwrapCallTool(s, params); ok {
		if env != nil {
			call.Outcome = telemetry.OutcomeDenied
			return env, nil
		}
		params, viaSearch = inner, true
		call.Tool, call.Search = inner.Name, true
		if env, ok := checkArguments(inner.Name, inner.Arguments); !ok {
			call.Outcome = telemetry.OutcomeDenied
			return env.result(), nil
		}
	}
	st := policy.State{Profile: s.profile, Switched: g.switchedTools(s), Sessionless: s.sessionless, ViaSearch: viaSearch}
	switch d := policy.Decide(snap, &st, params.Name); d.Refusal {
	case policy.Allowed:
	case policy.UnknownTool:
		if o, isSet := g.opts.Upstream.(unlistedOwner); isSet {
			if err := o.Unavailable(params.Name); err != nil {
				call.Outcome = telemetry.OutcomeUpstreamError
				return upstreamUnavailable(params.Name, err).result(), nil
			}
		}
		call.Outcome = telemetry.OutcomeUnknownTool
		return nil, &jsonrpc.Error{
			Code:    jsonrpc.CodeInvalidParams,
			Message: fmt.Sprintf("unknown tool %q: the upstream offers no tool of that name", params.Name),
		}
	case policy.ReadOnly:
		call.Outcome = telemetry.OutcomeDenied
		return g.refusedReadOnly(s.profile, params.Name).result(), nil
	default:
		call.Outcome = telemetry.OutcomeDenied
		return g.notAllowed(snap, s.profile, params.Name, d.Group).result(), nil
	}
	if !s.noted() {
		s.noteClient(req, "") // a session that skipped server/discover
	}
	fwd, refused, d, err := g.contextCheck(ctx, oc, s.clientName(), params)
	switch {
	case err != nil && ctx.Err() != nil:
		call.Outcome = telemetry.OutcomeCancelled
		return nil, err
	case err != nil:
		call.Outcome = telemetry.OutcomeDenied
		return nil, err
	case refused != nil:
		call.Outcome = telemetry.OutcomeDenied
		return refused, nil
	}
	callCtx, cancel := g.callContext(ctx)
	defer cancel()
	callCtx, upstreamResult := upstream.CaptureResult(callCtx)
	out, err := g.forward(callCtx, req, fwd)
	raw := upstreamResult()
	switch {
	case err == nil && out.IsError:
		call.Outcome = telemetry.OutcomeToolError
	case err == nil:
		call.Outcome = telemetry.OutcomeOK
	case timedOut(ctx, callCtx):
		call.Outcome = telemetry.OutcomeUpstreamError
		g.logger.Warn("upstream call timed out", "tool", params.Name, "timeout", g.opts.CallTimeout)
		return timeoutEnvelope(params.Name, g.opts.CallTimeout).result(), nil
	case ctx.Err() != nil:
		call.Outcome = telemetry.OutcomeCancelled
		return nil, ctx.Err()
	default:
		call.Outcome = telemetry.OutcomeUpstreamError
		var tooLarge *upstream.TooLargeError
		if errors.As(err, &tooLarge) {
			return resultTooLarge(params.Name, tooLarge).result(), nil
		}
		var werr *jsonrpc.Error
		if errors.As(err, &werr) {
			return nil, werr // the upstream's own JSON-RPC error, passed through
		}
		g.logger.Warn("upstream call failed", "tool", params.Name, "error", err)
		return upstreamUnavailable(params.Name, err).result(), nil
	}
	if raw != nil && d.Meta() == nil && len(out.Content) > 0 {
		if w := g.forwardedResult(out, raw, protocol); w != nil {
			return w, nil
		}
	}
	d.Annotate(out)
	if out.Content == nil {
		out.Content = []mcp.Content{} // [] rather than null on the wire
	}
	return out, nil
}

// notInProfile is the policy envelope for a tool the profile excludes (or
// snap's ceilings do): it suggests only profiles within them.
func (g *Gateway) notInProfile(snap *policy.Snapshot, profile, tool string) Envelope {
	with := g.cat().resolved.ProfilesWith(tool)
	var servable []string
	for _, p := range with {
		if g.withinCeiling(p) && (snap.CredentialCeiling == "" || g.withinTokenCeiling(p, snap.CredentialCeiling)) {
			servable = append(servable, p)
		}
	}
	msg := fmt.Sprintf("tool %q is not in the active profile %q", tool, profile)
	if len(with) > 0 {
		msg += fmt.Sprintf("; profiles that include it: %s", strings.Join(with, ", "))
	} else {
		msg += "; no profile includes it"
	}
	actions := []string{}
	for _, p := range servable {
		actions = append(actions, fmt.Sprintf("use profile %q: start the server with --profile %s, or connect to /mcp/%s over HTTP", p, p, p))
	}
	if len(servable) == 0 {
		actions = append(actions, "ask the operator to allow the tool in a profile (profiles.toml)")
	}
	return Envelope{
		Code:             CodeToolNotInProfile,
		Message:          msg,
		Retryable:        false,
		Category:         CategoryPolicy,
		SuggestedActions: actions,
	}
}

// requestSize is the size of a call's name and arguments as the client
// sent them: the bytes in hand, rather than the params encoded again.
func requestSize(p *mcp.CallToolParamsRaw) int {
	return len(p.Name) + len(p.Arguments)
}

// recordCall numbers and records one call, the name of a tool no upstream
// offers bounded.
func (g *Gateway) recordCall(s *session, c telemetry.Call) {
	if c.Outcome == telemetry.OutcomeOK {
		s.search.note(c.Tool)
	}
	if g.opts.Recorder == nil {
		return
	}
	if _, offered := g.cat().tools[c.Tool]; !offered {
		c.Tool = storedName(c.Tool, maxUnknownToolName)
	}
	s.mu.Lock()
	s.seq++
	c.Seq = s.seq
	c.Session = s.rec.ID
	s.mu.Unlock()
	g.opts.Recorder.Call(c)
}
