// Package gateway serves an upstream MCP server's tools under a named
// profile: the profile's instructions in initialize and server/discover, a
// paginated tools/list of the profile's tools, and tools/call refused (never
// forwarded) for a tool outside the profile. It records every session and
// call through a Recorder.
//
// The gateway registers no tools with the SDK. One *mcp.Server per profile
// carries a receiving middleware that answers tools/list and tools/call
// itself and rewrites the instructions of the handshake results, so that
// what a session sees can depend on the session, not only on the server.
// Over stdio a plain tools/call reaches that middleware without the SDK's
// dispatch, answered byte for byte as the SDK would (fastcall.go).
//
// Everything else an upstream offers passes through (passthrough.go):
// resources, prompts, completion, subscriptions and logging levels, and,
// during a call, progress, log messages, elicitation and sampling relayed
// to the calling session. When the upstream's tools change the catalog is
// re-listed and swapped whole, and sessions are told (catalog.go).
//
// A Gateway, made by New, owns its Upstream: Close ends every open session
// and closes the upstream too, while the Recorder stays the caller's, closed
// after the Gateway. Sessions come in through ServeStdio, through Server (the
// *mcp.Server of one profile, for any transport) or through HTTPHandler (a
// profile per URL path); see ExampleNew.
package gateway

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	mathrand "math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/opcontext"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/upstream"
)

// DefaultPageSize is the number of tools in a tools/list page when paging.
const DefaultPageSize = 20

// DefaultIdleTimeout is how long an HTTP session may go without a request.
const DefaultIdleTimeout = 30 * time.Minute

// FullProfile is the name of the profile that holds every tool.
const FullProfile = profiles.FullProfile

// Recorder is where the gateway records sessions and calls. telemetry's
// Recorder implements it.
type Recorder interface {
	// Session records s, replacing any earlier record with the same ID.
	Session(s telemetry.Session)
	// Call records one tools/call.
	Call(c telemetry.Call)
	// NewSessionID returns an ID unique across replicas.
	NewSessionID() string
	// Switch records a tool group switched on in session (enable_tools).
	Switch(session string, sw telemetry.Switch)
}

// Options configure a Gateway.
type Options struct {
	// Upstream is the server whose tools are served. Required.
	Upstream Upstream
	// Tools are the upstream's tools when the caller has listed them
	// already (to resolve profiles against); nil: New lists them.
	Tools []*mcp.Tool
	// Connections go with Tools listed from an upstream.Set: its
	// Listing.Connections. Health reports a ready server that is absent
	// from them, or was listed on an earlier session, as joining until the
	// gateway lists it again; nil with Tools set: every ready server.
	Connections map[string]uint64
	// Profiles are the resolved profiles; nil serves every tool as "full".
	Profiles *profiles.Resolved
	// PageSize is the tools/list page size when paging (default DefaultPageSize).
	PageSize int
	// Recorder receives sessions and calls; nil records nothing.
	Recorder Recorder
	// ServerName and ServerVersion are the served implementation's identity.
	ServerName, ServerVersion string
	// Explore is the share of sessions, in [0, 1], served the full profile
	// (bounded by MaxProfile) and marked as exploration.
	Explore float64
	// MaxProfile, when set, is the ceiling: no profile holding a tool outside
	// this profile's set is ever served.
	MaxProfile string
	// CursorKey is the key tools/list cursors are authenticated with. Empty:
	// a random key per Gateway. Replicas behind one address share a key so
	// that a cursor issued by one verifies on another.
	CursorKey []byte
	// IdleTimeout closes an HTTP session that has had no request for this
	// long, so that clients which vanish without ending their session do not
	// hold it (and its telemetry record) open. 0: DefaultIdleTimeout.
	IdleTimeout time.Duration
	// Logger receives the gateway's log; nil discards it.
	Logger *slog.Logger
	// ReadOnly serves only read and evaluate tools in every profile: others
	// are neither listed nor callable (refused with CodeReadOnly). A profile
	// with read_only set is read-only whatever this says.
	ReadOnly bool
	// DropIcons serves the tools of every profile whose profiles.toml does
	// not set icons without their "icons" member (icons.go); a profile's
	// icons = "keep" or "drop" wins. false: serve icons as listed.
	DropIcons bool
	// OperatingContext is the operator's sidecar (package opcontext); nil
	// runs without one.
	OperatingContext *opcontext.Source
	// RelistBackoff spaces the listings retried while a ready upstream
	// of an upstream.Set is joining because its listing failed
	// (relist.go); each wait is a random time between half the delay and
	// the whole. Zero: DefaultRelistInitial, doubling up to
	// DefaultRelistMax.
	RelistBackoff upstream.Backoff
	// Resolve resolves the profiles against a new tool listing when the
	// upstream's tools change (ToolsChanged) or the profiles do
	// (ProfilesChanged). nil with a nil Profiles serves every tool as
	// "full"; nil with Profiles set keeps the current catalog on a change,
	// since the profiles cannot be resolved again.
	Resolve func(tools []*mcp.Tool) (*profiles.Resolved, error)
	// CallTimeout bounds each forwarded tools/call: past it the call is
	// cancelled upstream and answered with CodeUpstreamTimeout. 0: no bound.
	CallTimeout time.Duration
	// HTTP configures HTTPHandler (http.go).
	HTTP HTTPOptions
	// MaxSessionCalls bounds the tools/call one session has in flight: a
	// call over it is answered at once with CodeBusy (admission.go). 0:
	// DefaultMaxSessionCalls.
	MaxSessionCalls int
	// MaxCalls bounds the tools/call in flight across all sessions, the
	// same way. 0: DefaultMaxCalls.
	MaxCalls int
	// UsageIdleGap ends a usage session of sessionless (2026-07-28)
	// requests attributed by caller after this long without a request
	// (stateless.go). 0: DefaultUsageIdleGap.
	UsageIdleGap time.Duration
	// Observer is told about every request served (observe.go); nil
	// observes nothing.
	Observer Observer
}

// Gateway serves one upstream under profiles.
type Gateway struct {
	opts   Options
	logger *slog.Logger
	// catalog is what the upstream's tools resolve to; replaced whole when
	// they change (catalog.go).
	catalog   atomic.Pointer[catalogState]
	cursorKey []byte

	mu       sync.Mutex
	servers  map[serverKey]*mcp.Server
	sessions map[*mcp.ServerSession]*session
	stdio    map[*mcp.ServerSession]*fastConn // stdio connections, with their fast path or nil (fastcall.go)
	fastHTTP []*mcp.ServerSession             // the HTTP fast path's sessions (httpcall.go)
	closed   bool
	ending   sync.WaitGroup // goroutines waiting for sessions to end

	closeOnce sync.Once
	closeErr  error

	// usage holds the open usage sessions of sessionless requests, swept
	// for idle ones at usageSwept (stateless.go); guarded by mu.
	usage      map[usageKey]*usageEntry
	usageSwept time.Time
	refused    refusals // bad input refused (credentials.go)

	relay     relay         // pass-through state (passthrough.go)
	listing   chan struct{} // holds a token while ToolsChanged lists (capacity 1)
	relist    *relister     // lists again after a listing failed (relist.go)
	swapMu    sync.Mutex    // one catalog resolution and swap at a time (catalog.go)
	admission admission     // calls in flight (admission.go)
	fastCalls atomic.Uint64 // tools/call the stdio fast path took (fastcall.go)

	// serverInfo is the encoding of the served implementation that a
	// 2026-07-28 result carries in its _meta, encoded once (rawresult.go).
	serverInfo json.RawMessage
}

// serverKey names one cached server: a profile served over a transport,
// to sessionless requests or to protocol sessions.
type serverKey struct {
	profile, transport string
	sessionless        bool
}

// New lists the upstream's tools and resolves the profiles against them.
func New(ctx context.Context, opts Options) (*Gateway, error) {
	if opts.Upstream == nil {
		return nil, errors.New("gateway: no upstream")
	}
	if opts.PageSize < 0 {
		return nil, fmt.Errorf("gateway: page size %d: must be positive", opts.PageSize)
	}
	if opts.PageSize == 0 {
		opts.PageSize = DefaultPageSize
	}
	if opts.IdleTimeout == 0 {
		opts.IdleTimeout = DefaultIdleTimeout
	}
	if opts.MaxSessionCalls < 0 || opts.MaxCalls < 0 {
		return nil, fmt.Errorf("gateway: calls in flight %d per session, %d in all: must not be negative (0: the default)", opts.MaxSessionCalls, opts.MaxCalls)
	}
	if opts.MaxSessionCalls == 0 {
		opts.MaxSessionCalls = DefaultMaxSessionCalls
	}
	if opts.MaxCalls == 0 {
		opts.MaxCalls = DefaultMaxCalls
	}
	if opts.UsageIdleGap < 0 {
		return nil, fmt.Errorf("gateway: usage idle gap %v: must not be negative", opts.UsageIdleGap)
	}
	if opts.UsageIdleGap == 0 {
		opts.UsageIdleGap = DefaultUsageIdleGap
	}
	if opts.Explore < 0 || opts.Explore > 1 {
		return nil, fmt.Errorf("gateway: explore rate %v: must be between 0 and 1", opts.Explore)
	}
	if opts.ServerName == "" {
		opts.ServerName = "toolprof"
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	list, joined := opts.Tools, opts.Connections
	if list == nil {
		var err error
		if list, joined, err = listUpstream(ctx, opts.Upstream); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	list, refused := servableTools(opts.Upstream, list)
	resolved := opts.Profiles
	switch {
	case resolved == nil:
		resolved = profiles.Full(list)
	case len(refused) > 0 && opts.Resolve == nil:
		return nil, fmt.Errorf("gateway: %s; the profiles were resolved against the tools as listed: set Options.Resolve to resolve them against the tools served", refused[0])
	case len(refused) > 0:
		var err error
		if resolved, err = opts.Resolve(list); err != nil {
			return nil, fmt.Errorf("gateway: %w", err)
		}
	}
	if len(resolved.Profiles) == 0 {
		return nil, errors.New("gateway: no profiles to serve")
	}
	key := opts.CursorKey
	if len(key) == 0 {
		key = make([]byte, 32)
		rand.Read(key)
	}
	cat, err := newCatalog(opts, logger, list, refused, resolved, joined)
	if err != nil {
		return nil, err
	}
	g := &Gateway{
		opts:      opts,
		logger:    logger,
		cursorKey: key,
		servers:   make(map[serverKey]*mcp.Server),
		sessions:  make(map[*mcp.ServerSession]*session),
		stdio:     make(map[*mcp.ServerSession]*fastConn),
		usage:     make(map[usageKey]*usageEntry),
		listing:   make(chan struct{}, 1),
		relist:    newRelister(opts.RelistBackoff),
	}
	if g.serverInfo, err = json.Marshal(g.implementation()); err != nil {
		return nil, fmt.Errorf("gateway: server name %q, version %q: %w", opts.ServerName, opts.ServerVersion, err)
	}
	g.catalog.Store(cat)
	if opts.MaxProfile != "" {
		if _, ok := resolved.Profiles[opts.MaxProfile]; !ok {
			return nil, fmt.Errorf("gateway: max profile %q: %w", opts.MaxProfile, g.unknownProfile(opts.MaxProfile))
		}
	}
	for _, w := range refused {
		logger.Warn("upstream tool left out", "warning", w)
	}
	for _, w := range resolved.Warnings {
		logger.Warn("profiles", "warning", w)
	}
	g.relistLater()
	return g, nil
}

// explorationProfile is the profile exploration sessions get: full, or the
// ceiling when full lies beyond it.
func (g *Gateway) explorationProfile() string {
	if _, ok := g.cat().resolved.Profiles[FullProfile]; ok && g.withinCeiling(FullProfile) {
		return FullProfile
	}
	if g.opts.MaxProfile != "" {
		return g.opts.MaxProfile
	}
	// No profile named full: the profile with the most tools.
	best := g.cat().resolved.Default
	for _, name := range g.cat().resolved.Names() {
		if len(g.cat().resolved.Profiles[name].Tools) > len(g.cat().resolved.Profiles[best].Tools) {
			best = name
		}
	}
	return best
}

// Default returns the name of the default profile.
func (g *Gateway) Default() string { return g.cat().resolved.Default }

// Profiles returns the resolved profiles the gateway serves.
func (g *Gateway) Profiles() *profiles.Resolved { return g.cat().resolved }

// ProfileError reports a profile name that cannot be served.
type ProfileError struct {
	Name    string
	Valid   []string // profiles that can be served
	Ceiling string   // set when Name exists but lies beyond the ceiling
	Why     string   // set when a credential's binding refused it
}

func (e *ProfileError) Error() string {
	if e.Why != "" {
		return e.Why
	}
	if e.Ceiling != "" {
		return fmt.Sprintf("profile %q holds tools outside the ceiling profile %q (--max-profile); profiles within it: %s",
			e.Name, e.Ceiling, strings.Join(e.Valid, ", "))
	}
	return fmt.Sprintf("unknown profile %q; valid profiles: %s", e.Name, strings.Join(e.Valid, ", "))
}

func (g *Gateway) unknownProfile(name string) error {
	return &ProfileError{Name: name, Valid: g.cat().resolved.Names()}
}

// servable returns the profiles within the ceiling, sorted.
func (g *Gateway) servable() []string {
	var names []string
	for _, n := range g.cat().resolved.Names() {
		if g.withinCeiling(n) {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// withinCeiling reports whether every tool of profile is in the ceiling.
func (g *Gateway) withinCeiling(profile string) bool {
	if g.opts.MaxProfile == "" {
		return true
	}
	p, ok := g.cat().resolved.Profiles[profile]
	if !ok {
		return false
	}
	if p.AlwaysLoad != "" {
		return g.withinCeiling(p.AlwaysLoad) // its other tools are listed within the ceiling (alwaysload.go)
	}
	for _, t := range p.Tools {
		if !g.cat().resolved.Allowed(g.opts.MaxProfile, t) {
			return false
		}
	}
	return true
}

// checkProfile returns a *ProfileError when profile cannot be served.
func (g *Gateway) checkProfile(profile string) error {
	if _, ok := g.cat().resolved.Profiles[profile]; !ok {
		return &ProfileError{Name: profile, Valid: g.servable()}
	}
	if !g.withinCeiling(profile) {
		return &ProfileError{Name: profile, Valid: g.servable(), Ceiling: g.opts.MaxProfile}
	}
	return nil
}

// Server returns the MCP server for profile ("" is the default profile). Its
// sessions are recorded with transport "stdio". An unknown profile, or one
// beyond the ceiling, is a *ProfileError listing the valid names.
func (g *Gateway) Server(profile string) (*mcp.Server, error) {
	return g.server(profile, telemetry.TransportStdio)
}

func (g *Gateway) server(profile, transport string) (*mcp.Server, error) {
	return g.serverFor(profile, transport, false)
}

// serverFor is server, for sessionless requests when sessionless is set.
func (g *Gateway) serverFor(profile, transport string, sessionless bool) (*mcp.Server, error) {
	if profile == "" {
		profile = g.cat().resolved.Default
	}
	if err := g.checkProfile(profile); err != nil {
		return nil, err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	k := serverKey{profile, transport, sessionless}
	if s, ok := g.servers[k]; ok {
		return s, nil
	}
	s := mcp.NewServer(&mcp.Implementation{Name: g.opts.ServerName, Version: g.opts.ServerVersion}, g.serverOptions())
	for _, m := range g.receivingChain(profile, transport, sessionless) {
		s.AddReceivingMiddleware(m)
	}
	g.serveGroups(s, profile)
	g.servers[k] = s
	return s, nil
}

// receivingChain is the receiving middleware of the server of (profile,
// transport), in the order it is added: each wraps what is there, so the
// observer, added last, sees every request first. The stdio fast path
// (fastcall.go) composes the same chain.
func (g *Gateway) receivingChain(profile, transport string, sessionless bool) []mcp.Middleware {
	chain := []mcp.Middleware{g.middleware(profile, transport, sessionless)}
	if g.opts.Observer != nil {
		chain = append(chain, g.observe(transport))
	}
	return chain
}

// ServeStdio serves profile over t (stdin/stdout of the process) until the
// client disconnects, ctx is done or the Gateway is closed; none of these
// is an error.
// Over a *jsonrpcwire.Transport plain tools/call requests are answered
// without the SDK's dispatch, through the same handlers (fastcall.go).
func (g *Gateway) ServeStdio(ctx context.Context, profile string, t mcp.Transport) error {
	return g.serveStdio(ctx, profile, t, true)
}

// serveStdio is ServeStdio, with the fast path when fast is set; it
// returns once every call of the session has returned.
func (g *Gateway) serveStdio(ctx context.Context, profile string, t mcp.Transport, fast bool) error {
	s, err := g.Server(profile)
	if err != nil {
		return err
	}
	if profile == "" {
		profile = g.cat().resolved.Default
	}
	ft := &fastTransport{Transport: t, newConn: g.newFastConn(profile)}
	if !fast {
		ft.newConn = nil
	}
	ss, err := s.Connect(ctx, ft, nil)
	if err != nil {
		return err
	}
	fc := ft.conn
	if fc != nil {
		fc.serving(ss)
	}
	// Tracked here, not only as a session: a 2026-07-28 connection's
	// requests are sessionless, and Close must end it all the same.
	g.mu.Lock()
	shut := g.closed
	if !shut {
		g.stdio[ss] = fc
	}
	g.mu.Unlock()
	if shut {
		ss.Close()
		return nil
	}
	defer func() {
		if fc != nil {
			fc.wait()
		}
		g.mu.Lock()
		delete(g.stdio, ss)
		g.mu.Unlock()
	}()
	ended := make(chan error, 1)
	go func() { ended <- ss.Wait() }()
	select {
	case <-ctx.Done():
		if fc != nil {
			fc.drain() // as the SDK's Close lets its own calls finish
		}
		ss.Close()
		<-ended
		return nil
	case err = <-ended:
	}
	g.mu.Lock()
	closed := g.closed // Close ended the session: the SDK reports calls it cut off
	g.mu.Unlock()
	if closed || ctx.Err() != nil || errors.Is(err, io.EOF) || errors.Is(err, mcp.ErrConnectionClosed) {
		return nil
	}
	return err
}

// waitFast waits until the calls the fast path took on ss have returned.
func (g *Gateway) waitFast(ss *mcp.ServerSession) {
	g.mu.Lock()
	fc := g.stdio[ss]
	g.mu.Unlock()
	if fc != nil {
		fc.wait()
	}
}

// Close ends every open session (recording its end) and closes the upstream
// if it can be closed. The Recorder is the caller's to close, after Close.
func (g *Gateway) Close() error {
	g.closeOnce.Do(func() { g.closeErr = g.close() })
	return g.closeErr
}

func (g *Gateway) close() error {
	g.relist.stop()
	g.mu.Lock()
	g.closed = true
	open := slices.Collect(maps.Keys(g.sessions))
	for ss := range g.stdio {
		if _, ok := g.sessions[ss]; !ok {
			open = append(open, ss)
		}
	}
	stdio := maps.Clone(g.stdio)
	g.mu.Unlock()
	for _, ss := range open {
		if fc := stdio[ss]; fc != nil {
			fc.drain() // as the SDK's Close lets its own calls finish
		}
		ss.Close()
	}
	g.closeFastHTTP()
	g.ending.Wait()
	g.closeUsage()
	if c, ok := g.opts.Upstream.(io.Closer); ok {
		if err := c.Close(); err != nil {
			return fmt.Errorf("close upstream: %w", err)
		}
	}
	return nil
}

// exploring decides, once per session, whether it is an exploration session.
func (g *Gateway) exploring() bool {
	return g.opts.Explore > 0 && mathrand.Float64() < g.opts.Explore
}
