// Package upstream connects toolprof to the MCP servers of a launch
// document and keeps them connected.
//
// A [Client] is one server: a stdio subprocess (stdio.go) or a
// streamable HTTP endpoint (mcp.StreamableClientTransport, with the declared
// headers added to every request). When its session ends (the process dies,
// the HTTP session is lost) the Client reconnects with exponential backoff;
// calls meanwhile fail at once with an error wrapping [ErrUnavailable].
// Errors (their message and their JSON-RPC data) and stdio servers' stderr
// lines leave this package with every resolved variable value scrubbed,
// and an OAuth server's tokens and client secret with them.
//
// A [Set] is many Clients behind the gateway's Upstream interface. With more
// than one declared server, tool and prompt names become SERVER + separator
// + NAME (separator "__" by default). If two servers still produce the same
// name (server "a" with tool "b__c" and server "a__b" with tool "c"), the
// server whose name sorts first keeps it and the other's tool is hidden and
// reported in [Health.Shadowed]: the same outcome on every start. Resource
// URIs are not renamed (they are the upstream's identifiers, quoted inside
// results); a URI two servers list is served by the one that sorts first.
//
// # Environment of stdio servers
//
// A stdio server gets the variables named in Options.InheritEnv from
// toolprof's own environment (by default [DefaultInheritEnv]: the list the
// official TypeScript SDK passes, plus locale and temp dir), then its
// declared env, which wins. MCP clients such as Claude Code pass their whole
// environment; toolprof does not, so that a credential meant for one server
// is not handed to every server: declare what a server needs in its env,
// e.g. "GITHUB_TOKEN": "${GITHUB_TOKEN}". Nothing is written into a
// server's working directory.
package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
)

// ErrUnavailable is wrapped by every error that means the upstream could not
// be reached: not connected yet, down and restarting, or died mid-call. The
// gateway maps it to upstream_unavailable.
var ErrUnavailable = errors.New("upstream unavailable")

// DefaultInheritEnv returns the names of the variables a stdio server
// inherits from toolprof's environment unless Options.InheritEnv says
// otherwise.
func DefaultInheritEnv() []string {
	return []string{"HOME", "LOGNAME", "PATH", "SHELL", "TERM", "USER", "LANG", "LC_ALL", "TMPDIR", "TZ"}
}

// ProtocolVersion is the MCP version toolprof offers its upstreams: the
// newest handshake-era version, on which an upstream asks for elicitation
// and sampling with requests and logs after logging/setLevel, which the
// gateway relays to the calling session. It is what Options.ProtocolVersion
// offers unless set, so that the gateway (cmd/server) and every profiler
// command (catalog, bench, replay, login) connect alike and are offered
// the same tools.
const ProtocolVersion = "2025-11-25"

// ClientCapabilities are the capabilities every Client advertises,
// whatever handlers its Options set: roots, sampling and (form)
// elicitation, as the gateway relays them. A server may offer tools by
// what the client declares (the TypeScript everything-server lists its
// sampling and elicitation tools only to clients that have them), so the
// profiler's catalog, whose Clients have no handlers, must declare what
// the gateway declares to record the tools the gateway serves.
func ClientCapabilities() *mcp.ClientCapabilities {
	return &mcp.ClientCapabilities{
		RootsV2:     &mcp.RootCapabilities{ListChanged: true},
		Sampling:    &mcp.SamplingCapabilities{},
		Elicitation: &mcp.ElicitationCapabilities{Form: &mcp.FormElicitationCapabilities{}},
	}
}

// State is where a Client is in its life.
type State string

// Client states.
const (
	StateConnecting State = "connecting" // first attempt running
	StateReady      State = "ready"      // session open
	StateDown       State = "down"       // no session; reconnecting with backoff
	StateClosed     State = "closed"     // Close was called
	// StateJoining is a ready server whose current session's tools the
	// gateway does not serve yet: it has not listed them since the server
	// connected. A Client is never in it; the gateway's health reports it
	// in place of StateReady (Health.Connection).
	StateJoining State = "joining"
)

// Backoff spaces reconnection attempts: Initial, doubling up to Max. A
// session that lasted at least Max resets the sequence.
type Backoff struct {
	Initial time.Duration // default 100ms
	Max     time.Duration // default 30s
}

// Delay is the wait after failures consecutive failures: Initial doubled
// that many times, at most Max.
func (b Backoff) Delay(failures int) time.Duration {
	d := b.Initial
	for range failures {
		d *= 2
		if d >= b.Max {
			return b.Max
		}
	}
	return d
}

// Options configure a Client.
type Options struct {
	// Implementation is what toolprof tells upstreams it is.
	Implementation *mcp.Implementation
	// InheritEnv names the variables a stdio server inherits; nil means
	// DefaultInheritEnv(), an empty non-nil slice means none.
	InheritEnv []string
	// Stderr receives stdio servers' stderr, line by line with resolved
	// values scrubbed; nil discards it. Servers write to it concurrently.
	Stderr io.Writer
	// Backoff spaces reconnection attempts.
	Backoff Backoff
	// ConnectTimeout bounds each connection attempt, the first included, so
	// a server that never answers initialize cannot hold up the others
	// (default 30s). It bounds each tools/list of a Set the same way.
	ConnectTimeout time.Duration
	// TerminateDuration is how long closing a stdio server waits for it to
	// exit after its stdin is closed before signalling it (default 2s).
	TerminateDuration time.Duration
	// MaxMessageBytes bounds one message a server sends (default
	// DefaultMaxMessageBytes): a stdio server's line, an HTTP server's
	// application/json answer or SSE event (its bytes as sent). An answer
	// over it fails its own request with a TooLargeError and leaves the
	// session and every other request as they were; a notification or
	// request over it is dropped.
	MaxMessageBytes int
	// OnToolsChanged is called with the server's name when its tool list
	// may have changed: a tools/list_changed notification, a reconnection,
	// or a first connection made after StartSet returned. Calls run on a
	// goroutine of the Client's, one at a time: any number of changes while
	// one runs cause a single call after it, so a server flooding
	// notifications costs one refresh at a time. Close waits for a call in
	// progress.
	OnToolsChanged func(server string)
	// OnReconnected is called, on its own goroutine, with the server's name
	// after a new session replaced one that ended (not after the first
	// connection): what was set on the old session must be set again.
	OnReconnected func(server string)
	// OnPromptsChanged and OnResourcesChanged are the same for prompts and
	// resources (list_changed notifications only), merged alike.
	OnPromptsChanged   func(server string)
	OnResourcesChanged func(server string)
	// OnProgress receives the server's progress notifications, whose tokens
	// are the ones the caller put in CallToolParamsRaw.Meta.
	OnProgress func(ctx context.Context, server string, p *mcp.ProgressNotificationParams)
	// OnLog receives the server's notifications/message.
	OnLog func(ctx context.Context, server string, p *mcp.LoggingMessageParams)
	// OnResourceUpdated receives the server's notifications/resources/updated
	// for resources subscribed through Subscribe.
	OnResourceUpdated func(ctx context.Context, server string, p *mcp.ResourceUpdatedNotificationParams)
	// ProtocolVersion is the MCP version offered to upstreams; "" offers
	// ProtocolVersion. An upstream may negotiate an older one.
	ProtocolVersion string
	// OnElicit answers the server's elicitation/create requests (the
	// gateway asks its own client); servers send them on protocol versions
	// before 2026-07-28, after which they return input requests instead.
	// Nil: such requests fail (elicitation is advertised all the same; see
	// ClientCapabilities).
	OnElicit func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error)
	// OnCreateMessage answers the server's sampling/createMessage requests
	// the same way.
	OnCreateMessage func(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error)
	// Logger records connection events (never resolved values).
	Logger *slog.Logger
	// SendingMiddleware wraps every request and notification sent to a
	// server, with the caller's context (package otelmcp traces them and
	// sets the trace context in their _meta, which is the Client's own
	// copy); nil: none.
	SendingMiddleware mcp.Middleware
	// OnRequestID is told the JSON-RPC id of every request sent to a
	// server, as it is written, with the context SendingMiddleware passed
	// on (the SDK numbers a request after its middleware ran; package
	// otelmcp sets it on the request's span); nil: not told.
	OnRequestID func(ctx context.Context, id jsonrpc.ID)
	// Tokens holds the tokens of servers declared with "oauth" (oauth.go);
	// nil: such servers fail to connect, saying so.
	Tokens *oauthstore.Store
	// LoginCommand returns the command that logs in to a server, quoted
	// in needs_login errors; nil derives it from the server's source file.
	LoginCommand func(server string) string
	// Login, when set, runs the authorization code flow for a server
	// without a usable token (profiler login); nil leaves it needs_login.
	Login *LoginFlow

	// sdkCalls sends every tools/call through the SDK's client, none
	// through the relay (rawcall.go): the tests' reference.
	sdkCalls bool
}

func (o Options) withDefaults() Options {
	if o.Implementation == nil {
		o.Implementation = &mcp.Implementation{Name: "toolprof", Version: "1"}
	}
	if o.InheritEnv == nil {
		o.InheritEnv = DefaultInheritEnv()
	}
	if o.Backoff.Initial <= 0 {
		o.Backoff.Initial = 100 * time.Millisecond
	}
	if o.Backoff.Max < o.Backoff.Initial {
		o.Backoff.Max = max(30*time.Second, o.Backoff.Initial)
	}
	if o.ConnectTimeout <= 0 {
		o.ConnectTimeout = 30 * time.Second
	}
	if o.TerminateDuration <= 0 {
		o.TerminateDuration = 2 * time.Second
	}
	if o.MaxMessageBytes <= 0 {
		o.MaxMessageBytes = DefaultMaxMessageBytes
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.ProtocolVersion == "" {
		o.ProtocolVersion = ProtocolVersion
	}
	return o
}

// Client is one upstream server, reconnected whenever its session ends.
type Client struct {
	srv    launch.ResolvedServer
	opts   Options
	client *mcp.Client
	http   *http.Transport // connection pool of an HTTP server, emptied when a session ends
	oauth  *oauthHandler   // nil unless the server is declared with "oauth"
	setup  error           // why the Client cannot connect at all (an oauth without a store)
	closed chan struct{}   // closed by Close
	done   chan struct{}   // closed when the supervisor has stopped
	once   sync.Once

	mu          sync.Mutex
	started     bool
	state       State
	session     *mcp.ClientSession
	relay       *relay // the session's call relay, which an HTTP server's calls do not use (rl.conn nil)
	pid         int
	restarts    int
	lastErr     string // scrubbed
	tools       []*mcp.Tool
	toolsSeen   bool
	listsBegun  uint64 // tools/list listings begun
	toolsListed uint64 // the listing whose result tools holds (by begin order)
	conn        uint64 // sessions opened so far: the current one's number while ready
	toolsConn   uint64 // the session tools was listed on

	raw rawTools // tool definitions as listed (rawtools.go)

	// announce is set once the caller stopped waiting for the first
	// connection (StartSet's StartWait passed): that connection, when it
	// comes, is announced through OnToolsChanged like a reconnection.
	announce atomic.Bool

	// toolsChanged, promptsChanged and resourcesChanged run the Options
	// callbacks of the same names, merging changes (nil when not set).
	toolsChanged, promptsChanged, resourcesChanged *coalescer

	// stderr holds the scrubbing writers of started processes whose last
	// partial line has not been flushed (flushStderr, once they exited).
	stderr []*scrubbingWriter
}

// httpIdleConnsPerHost is how many idle connections to an HTTP server are
// kept: the transport's default two closes, after each burst, every
// connection beyond the second, so calls in flight together would open a
// connection each.
const httpIdleConnsPerHost = 64

// NewClient prepares a Client for srv; Start connects it.
func NewClient(srv launch.ResolvedServer, opts Options) *Client {
	c := &Client{srv: srv, opts: opts.withDefaults(), closed: make(chan struct{}), done: make(chan struct{}), state: StateConnecting}
	if srv.Transport == launch.StreamableHTTP {
		c.http = http.DefaultTransport.(*http.Transport).Clone()
		c.http.MaxIdleConnsPerHost = httpIdleConnsPerHost
		if srv.OAuth != nil {
			c.oauth, c.setup = newOAuthHandler(c)
		}
	}
	name := srv.Name
	o := c.opts
	merged := func(f func(string)) *coalescer {
		if f == nil {
			return nil
		}
		return newCoalescer(func() { f(name) })
	}
	c.toolsChanged, c.promptsChanged, c.resourcesChanged = merged(o.OnToolsChanged), merged(o.OnPromptsChanged), merged(o.OnResourcesChanged)
	copts := &mcp.ClientOptions{
		Capabilities: ClientCapabilities(),
		// Input-required results (SEP-2322) go back to the caller, whose
		// client answers them and retries with InputResponses.
		MultiRoundTrip:             &mcp.MultiRoundTripOptions{Disabled: true},
		ToolListChangedHandler:     func(context.Context, *mcp.ToolListChangedRequest) { c.toolsChanged.kick() },
		PromptListChangedHandler:   func(context.Context, *mcp.PromptListChangedRequest) { c.promptsChanged.kick() },
		ResourceListChangedHandler: func(context.Context, *mcp.ResourceListChangedRequest) { c.resourcesChanged.kick() },
		ProgressNotificationHandler: func(ctx context.Context, r *mcp.ProgressNotificationClientRequest) {
			if o.OnProgress != nil {
				o.OnProgress(ctx, name, r.Params)
			}
		},
		LoggingMessageHandler: func(ctx context.Context, r *mcp.LoggingMessageRequest) {
			if o.OnLog != nil {
				o.OnLog(ctx, name, r.Params)
			}
		},
		ResourceUpdatedHandler: func(ctx context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
			if o.OnResourceUpdated != nil {
				o.OnResourceUpdated(ctx, name, r.Params)
			}
		},
	}
	// Set only when given; the capabilities do not depend on them.
	if o.OnElicit != nil {
		copts.ElicitationHandler = func(ctx context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return o.OnElicit(ctx, name, r.Params)
		}
	}
	if o.OnCreateMessage != nil {
		copts.CreateMessageHandler = func(ctx context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) { //lint:ignore SA1019 upstreams still sample
			return o.OnCreateMessage(ctx, name, r.Params)
		}
	}
	c.client = mcp.NewClient(o.Implementation, copts)
	if o.SendingMiddleware != nil {
		c.client.AddSendingMiddleware(o.SendingMiddleware)
	}
	c.client.AddReceivingMiddleware(c.trackNotes)
	if o.OnElicit != nil {
		c.client.AddReceivingMiddleware(c.elicitAsIs)
	}
	return c
}

// Name is the server's name in the launch document.
func (c *Client) Name() string { return c.srv.Name }

// Start makes the first connection attempt and starts supervising the
// session. On failure it returns the (scrubbed) error and keeps retrying in
// the background; Close stops it either way.
func (c *Client) Start(ctx context.Context) error {
	c.mu.Lock()
	if c.started {
		c.mu.Unlock()
		return fmt.Errorf("upstream %q: already started", c.srv.Name)
	}
	c.started = true
	c.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
	// Close ends a first attempt still running (a server hanging in
	// initialize), rather than waiting out ConnectTimeout.
	go func() {
		select {
		case <-c.closed:
			cancel()
		case <-ctx.Done():
		}
	}()
	err := c.connect(ctx)
	cancel()
	if err == nil && c.announce.Load() {
		// Connected after the Set stopped waiting: its tools were not in
		// the first listing.
		c.toolsChanged.kick()
	}
	go c.supervise(err != nil)
	return err
}

// connect opens a session and publishes it.
func (c *Client) connect(ctx context.Context) error {
	rl := &relay{}
	t, cmd, err := c.transport(&rl.notes)
	if err != nil {
		return c.recordFailure(err)
	}
	// The session's handlers count its notifications in rl.notes: their
	// contexts carry the one it is connected with (notecount.go).
	sctx := context.WithValue(ctx, notesKey{}, &rl.notes)
	cs, err := c.client.Connect(sctx, c.reportIDs(c.raw.wrap(t, rl)), &mcp.ClientSessionOptions{ProtocolVersion: c.opts.ProtocolVersion})
	if err != nil {
		c.flushStderr() // the SDK closed the session, ending the process
		return c.recordFailure(err)
	}
	c.mu.Lock()
	if c.state == StateClosed {
		c.mu.Unlock()
		// Closed while connecting: end the session before Close returns
		// (Close waits for this attempt), so no server outlives it.
		_ = cs.Close()
		c.flushStderr()
		return fmt.Errorf("upstream %q: closed: %w", c.srv.Name, ErrUnavailable)
	}
	defer c.mu.Unlock()
	c.session, c.state, c.lastErr, c.pid = cs, StateReady, "", 0
	c.conn++
	c.relay = rl
	if cmd != nil && cmd.Process != nil {
		c.pid = cmd.Process.Pid
	}
	c.opts.Logger.Info("upstream connected", "server", c.srv.Name, "pid", c.pid)
	return nil
}

func (c *Client) recordFailure(err error) error {
	msg := c.scrub(err.Error())
	state := StateDown
	why := c.oauth.needsLogin()
	if why != "" {
		state, msg = StateNeedsLogin, c.oauth.unauthorized(why).Error()
	}
	c.mu.Lock()
	closed := c.state == StateClosed
	if !closed {
		c.state, c.lastErr = state, msg
	}
	c.mu.Unlock()
	if !closed { // an attempt Close cut short is no failure to report
		c.opts.Logger.Warn("upstream connect failed", "server", c.srv.Name, "err", msg)
	}
	if why != "" {
		return c.oauth.unauthorized(why)
	}
	return fmt.Errorf("upstream %q: connect: %s: %w", c.srv.Name, msg, ErrUnavailable)
}

// transport builds a fresh transport (a command can be started only once);
// an HTTP server's notifications are counted in notes as they are read.
func (c *Client) transport(notes *noteCount) (mcp.Transport, *exec.Cmd, error) {
	dropped := func(n int64) {
		c.opts.Logger.Warn("upstream message over the size limit dropped", "server", c.srv.Name, "bytes", n, "limit", c.opts.MaxMessageBytes)
	}
	switch c.srv.Transport {
	case launch.Stdio:
		// Checked before each start, naming the entry: exec's own error
		// names neither the file nor the server, and the command may
		// appear later (an install), so the server stays retried.
		if err := c.srv.LookCommand(); err != nil {
			return nil, nil, err
		}
		cmd := exec.Command(c.srv.Command, c.srv.Args...)
		cmd.Dir = c.srv.Cwd
		if c.opts.Stderr != nil {
			w := newScrubbingWriter(c.opts.Stderr, c.scrub)
			cmd.Stderr = w
			c.mu.Lock()
			c.stderr = append(c.stderr, w)
			c.mu.Unlock()
		}
		for _, k := range c.opts.InheritEnv {
			if v, ok := os.LookupEnv(k); ok {
				cmd.Env = append(cmd.Env, k+"="+v)
			}
		}
		for _, k := range slices.Sorted(maps.Keys(c.srv.Env)) {
			cmd.Env = append(cmd.Env, k+"="+c.srv.Env[k])
		}
		if cmd.Env == nil {
			cmd.Env = []string{} // nil would mean the whole parent environment
		}
		return &stdioTransport{cmd: cmd, terminate: c.opts.TerminateDuration, limit: c.opts.MaxMessageBytes, dropped: dropped, stray: c.stray}, cmd, nil
	case launch.StreamableHTTP:
		t := &mcp.StreamableClientTransport{
			Endpoint: c.srv.URL,
			HTTPClient: &http.Client{Transport: originGuard{
				base:   c.raw.roundTripper(c.reportHTTPIDs(headerTransport{base: c.http, headers: c.srv.Headers}), c.opts.MaxMessageBytes, dropped, notes),
				server: c.srv.Name,
			}},
			// The round tripper holds every event to c.opts.MaxMessageBytes
			// and replaces a longer one, so the SDK's own bound, which ends
			// the session, is never reached.
			MaxEventSize: c.opts.MaxMessageBytes + sseChunk,
		}
		if c.setup != nil {
			return nil, nil, c.setup
		}
		if c.oauth != nil {
			t.OAuthHandler = c.oauth
		}
		return t, nil, nil
	}
	return nil, nil, fmt.Errorf("unknown transport %q", c.srv.Transport)
}

// stray logs a line a stdio server wrote to stdout that is not JSON (a
// greeting, a debug print): skipped, so that the session goes on.
func (c *Client) stray(line []byte) {
	const show = 200
	if len(line) > show {
		line = line[:show]
	}
	c.opts.Logger.Warn("upstream wrote a line that is not JSON-RPC to stdout; skipped", "server", c.srv.Name, "line", c.scrub(string(line)))
}

// originGuard refuses, in place of the response, a redirect to another
// origin (scheme, host and port) than the request's. headerTransport sets
// the declared headers on every request, redirected ones included, so
// Go's removal of credentials on a redirect to another host never
// applies, and a login's requests carry the client secret and the code in
// their bodies. It is a transport rather than a CheckRedirect because
// http.Client quotes a refused redirect's Location whole in its error, and
// the path and query there are whatever the server put in them: the error
// names the target's origin only. A redirect within the origin is
// followed as http.Client does.
type originGuard struct {
	base   http.RoundTripper
	server string
}

func (g originGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := g.base.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	switch resp.StatusCode {
	case http.StatusMovedPermanently, http.StatusFound, http.StatusSeeOther, http.StatusTemporaryRedirect, http.StatusPermanentRedirect:
	default:
		return resp, nil
	}
	loc, err := req.URL.Parse(resp.Header.Get("Location"))
	if err != nil || resp.Header.Get("Location") == "" {
		return resp, nil // http.Client does not follow it either
	}
	if from, to := origin(req.URL), origin(loc); from != to {
		drain(resp)
		return nil, fmt.Errorf("upstream %q: refused a redirect from %s to another origin, %s: declared headers and tokens are sent only to the server's own origin; put the redirect's target in the launch document instead", g.server, from, to)
	}
	return resp, nil
}

// origin is u's scheme, host and port, the port made explicit.
func origin(u *url.URL) string {
	scheme := strings.ToLower(u.Scheme)
	port := u.Port()
	if port == "" {
		port = map[string]string{"http": "80", "https": "443"}[scheme]
	}
	return scheme + "://" + net.JoinHostPort(strings.ToLower(u.Hostname()), port)
}

// headerTransport adds the declared headers to every request.
type headerTransport struct {
	base    http.RoundTripper
	headers map[string]string
}

func (h headerTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context())
	for k, v := range h.headers {
		req.Header.Set(k, v)
	}
	return h.base.RoundTrip(req)
}

// supervise waits for each session to end and reconnects with backoff.
func (c *Client) supervise(startFailed bool) {
	defer close(c.done)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		<-c.closed
		cancel()
	}()
	failures := 0
	if startFailed {
		failures = 1
	}
	for {
		c.mu.Lock()
		cs := c.session
		c.mu.Unlock()
		if cs != nil {
			began := time.Now()
			waitErr := cs.Wait()
			c.mu.Lock()
			c.session, c.relay = nil, nil
			if c.state == StateClosed {
				c.mu.Unlock()
				return
			}
			c.state, c.restarts = StateDown, c.restarts+1
			c.lastErr = "session ended"
			if waitErr != nil {
				c.lastErr = "session ended: " + c.scrub(waitErr.Error())
			}
			c.mu.Unlock()
			_ = cs.Close() // reaps the process
			c.flushStderr()
			c.closeIdle()
			c.opts.Logger.Warn("upstream down", "server", c.srv.Name)
			if time.Since(began) >= c.opts.Backoff.Max {
				failures = 0
			}
		}
		wait := time.NewTimer(c.opts.Backoff.Delay(failures))
		select {
		case <-c.closed:
			wait.Stop()
			return
		case <-wait.C:
		}
		attempt, cancelAttempt := context.WithTimeout(ctx, c.opts.ConnectTimeout)
		err := c.connect(attempt)
		cancelAttempt()
		if err != nil {
			failures++
			continue
		}
		// A new session may offer different tools, and the ones it offers
		// are callable again.
		c.toolsChanged.kick()
		// The new session has none of the old one's state (logging level,
		// subscriptions) until the caller restores it.
		if f := c.opts.OnReconnected; f != nil {
			go f(c.srv.Name)
		}
		failures++ // a crash right after connecting keeps backing off
	}
}

// flushStderr writes the last partial stderr line of the processes
// started so far; it is called once they have exited (closing a session
// waits for its process and for exec's copy of its stderr).
func (c *Client) flushStderr() {
	c.mu.Lock()
	ws := c.stderr
	c.stderr = nil
	c.mu.Unlock()
	for _, w := range ws {
		_ = w.Flush() // toolprof's own stderr failing leaves nothing to report to
	}
}

// closeIdle drops an HTTP server's idle keep-alive connections (and their
// goroutines).
func (c *Client) closeIdle() {
	if c.http != nil {
		c.http.CloseIdleConnections()
	}
}

// Restarts is how many times a session ended without Close.
func (c *Client) Restarts() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.restarts
}

// Close ends the session (terminating a stdio server) and stops
// reconnecting.
func (c *Client) Close() error {
	var err error
	c.once.Do(func() {
		c.mu.Lock()
		c.state = StateClosed
		cs, started := c.session, c.started
		c.session, c.relay, c.started = nil, nil, true // a later Start must not run
		c.mu.Unlock()
		close(c.closed)
		if cs != nil {
			err = cs.Close()
		}
		if started {
			<-c.done
		}
		for _, q := range []*coalescer{c.toolsChanged, c.promptsChanged, c.resourcesChanged} {
			q.stop()
		}
		c.flushStderr()
		c.closeIdle()
	})
	return err
}

// live returns the current session, or an ErrUnavailable error.
func (c *Client) live() (*mcp.ClientSession, error) {
	cs, _, err := c.liveRelay()
	return cs, err
}

// liveRelay is live with the session's call relay (nil when it has none).
func (c *Client) liveRelay() (*mcp.ClientSession, *relay, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveLocked()
}

// liveLocked is liveRelay for a caller holding c.mu.
func (c *Client) liveLocked() (*mcp.ClientSession, *relay, error) {
	if c.session == nil {
		if why := c.oauth.needsLogin(); why != "" {
			return nil, nil, c.oauth.unauthorized(why)
		}
		why := c.lastErr
		if why == "" {
			why = string(c.state)
		}
		return nil, nil, fmt.Errorf("upstream %q is %s (%s): %w", c.srv.Name, c.state, why, ErrUnavailable)
	}
	return c.session, c.relay, nil
}

// scrub removes from msg the server's resolved values and, for an OAuth
// server, its tokens and client secret as they are now.
func (c *Client) scrub(msg string) string {
	return c.oauth.scrub(c.srv.Scrub(msg))
}

// mapErr turns a session error into what callers see: the upstream's own
// JSON-RPC error (scrubbed), the caller's context error, or ErrUnavailable.
func (c *Client) mapErr(ctx context.Context, op string, err error) error {
	if err == nil {
		return nil
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) {
		if d, ok := asTooLarge(rpc); ok {
			c.opts.Logger.Warn("upstream answer over the size limit dropped", "server", c.srv.Name, "op", op, "bytes", d.Bytes, "limit", d.Limit)
			return &TooLargeError{Server: c.srv.Name, Op: op, Bytes: d.Bytes, Limit: d.Limit}
		}
	}
	if errors.As(err, &rpc) && !transportRejected(rpc) {
		msg := c.scrub(rpc.Message)
		data, dropped := scrubData(rpc.Data, c.scrub)
		if dropped {
			msg += " (error data dropped: not valid JSON after removing resolved values)"
		}
		return &jsonrpc.Error{Code: rpc.Code, Message: msg, Data: data}
	}
	if ctx.Err() != nil {
		return fmt.Errorf("upstream %q: %s: %w", c.srv.Name, op, ctx.Err())
	}
	if why := c.oauth.needsLogin(); why != "" {
		return c.oauth.unauthorized(why)
	}
	return fmt.Errorf("upstream %q: %s: %s: %w", c.srv.Name, op, c.scrub(err.Error()), ErrUnavailable)
}

// hopMeta are the _meta keys (SEP-2575) that describe one client-server
// hop, not the request: the downstream client's values must not reach the
// upstream, whose session the SDK describes with toolprof's own.
func hopMeta(key string) bool {
	switch key {
	case mcp.MetaKeyProtocolVersion, mcp.MetaKeyClientInfo, mcp.MetaKeyClientCapabilities:
		return true
	}
	return false
}

// forwardMeta copies a request's _meta without the hop keys. It copies
// because the SDK adds its own keys to the map it is given, which is the
// caller's.
func forwardMeta(m mcp.Meta) mcp.Meta {
	if m == nil {
		return nil
	}
	out := make(mcp.Meta, len(m))
	for k, v := range m {
		if !hopMeta(k) {
			out[k] = v
		}
	}
	return out
}

// transportRejected reports whether rpc is the SDK's own "rejected by
// transport" error (jsonrpc2.ErrRejected, internal to the SDK), which wraps
// an HTTP request that could not be delivered: the upstream was not reached.
func transportRejected(rpc *jsonrpc.Error) bool {
	return rpc.Code == -32005 && rpc.Message == "rejected by transport"
}

// ListTools lists every tool the upstream offers, following its pagination.
func (c *Client) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	tools, _, err := c.listTools(ctx)
	return tools, err
}

// listTools is ListTools, also returning the session the tools were
// listed on (Health.Connection), or, when the listing failed once begun,
// the session it was asked of.
func (c *Client) listTools(ctx context.Context) ([]*mcp.Tool, uint64, error) {
	c.mu.Lock()
	cs, _, err := c.liveLocked()
	if err != nil {
		c.mu.Unlock()
		return nil, 0, err
	}
	c.listsBegun++
	seq, conn := c.listsBegun, c.conn
	c.mu.Unlock()
	// Paged here rather than with cs.Tools, which follows cursors without
	// noticing a cycle.
	tools, err := allPages(ctx, func(cursor string) ([]*mcp.Tool, string, error) {
		res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Tools, res.NextCursor, nil
	})
	if err != nil {
		return nil, conn, c.mapErr(ctx, "tools/list", err)
	}
	c.mu.Lock()
	// Listings overlap (one may react to list_changed while another is in
	// flight): an older one finishing last must not replace a newer result.
	if seq > c.toolsListed {
		c.tools, c.toolsSeen, c.toolsListed, c.toolsConn = tools, true, seq, conn
	}
	c.mu.Unlock()
	return tools, conn, nil
}

// stillOn reports whether conn is the session open now: a request on it
// that failed as unavailable (such as an HTTP 503, after which the SDK
// keeps the session) failed on a server that is up.
func (c *Client) stillOn(conn uint64) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return conn != 0 && c.session != nil && c.conn == conn
}

// KnownTools is the result of the last successful ListTools, and whether
// there was one: what a Set shows for an upstream that is down.
func (c *Client) KnownTools() ([]*mcp.Tool, bool) {
	tools, _, ok := c.knownTools()
	return tools, ok
}

// knownTools is KnownTools with the session they were listed on.
func (c *Client) knownTools() ([]*mcp.Tool, uint64, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.tools, c.toolsConn, c.toolsSeen
}

// CallTool forwards the call with its raw arguments and _meta (progress
// token included) and returns the upstream's result as it came.
func (c *Client) CallTool(ctx context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	cs, rl, err := c.liveRelay()
	if err != nil {
		return nil, err
	}
	p := &mcp.CallToolParams{Meta: forwardMeta(params.Meta), Name: params.Name, InputResponses: params.InputResponses, RequestState: params.RequestState}
	if len(params.Arguments) > 0 {
		p.Arguments = params.Arguments // forwarded byte for byte
	}
	var res *mcp.CallToolResult
	if !c.opts.sdkCalls && rl.usable() && relayable(cs, p) {
		res, err = c.relayCall(ctx, cs, rl, p) // waits for its notifications itself
	} else {
		res, err = cs.CallTool(ctx, p)
		if err == nil {
			// Read after the answer: a count at least that of the
			// notifications read before it (notecount.go).
			rl.notes.wait(ctx, rl.notes.readSoFar())
		}
	}
	if err != nil {
		return res, c.mapErr(ctx, fmt.Sprintf("tools/call %q", params.Name), err) // named only when it failed: a call pays no Sprintf
	}
	return res, nil
}

// ListResources passes one resources/list page through.
func (c *Client) ListResources(ctx context.Context, params *mcp.ListResourcesParams) (*mcp.ListResourcesResult, error) {
	return pass(c, ctx, "resources/list", func(cs *mcp.ClientSession) (*mcp.ListResourcesResult, error) {
		return cs.ListResources(ctx, forwardParams(params))
	})
}

// ReadResource passes resources/read through.
func (c *Client) ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return pass(c, ctx, "resources/read", func(cs *mcp.ClientSession) (*mcp.ReadResourceResult, error) {
		return cs.ReadResource(ctx, forwardParams(params))
	})
}

// ListResourceTemplates passes one resources/templates/list page through.
func (c *Client) ListResourceTemplates(ctx context.Context, params *mcp.ListResourceTemplatesParams) (*mcp.ListResourceTemplatesResult, error) {
	return pass(c, ctx, "resources/templates/list", func(cs *mcp.ClientSession) (*mcp.ListResourceTemplatesResult, error) {
		return cs.ListResourceTemplates(ctx, forwardParams(params))
	})
}

// ListPrompts passes one prompts/list page through.
func (c *Client) ListPrompts(ctx context.Context, params *mcp.ListPromptsParams) (*mcp.ListPromptsResult, error) {
	return pass(c, ctx, "prompts/list", func(cs *mcp.ClientSession) (*mcp.ListPromptsResult, error) {
		return cs.ListPrompts(ctx, forwardParams(params))
	})
}

// GetPrompt passes prompts/get through.
func (c *Client) GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return pass(c, ctx, "prompts/get", func(cs *mcp.ClientSession) (*mcp.GetPromptResult, error) {
		return cs.GetPrompt(ctx, forwardParams(params))
	})
}

// Complete passes completion/complete through.
func (c *Client) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return pass(c, ctx, "completion/complete", func(cs *mcp.ClientSession) (*mcp.CompleteResult, error) {
		return cs.Complete(ctx, forwardParams(params))
	})
}

// forwardParams copies pass-through params with their _meta forwarded.
func forwardParams[T any, P interface {
	*T
	GetMeta() map[string]any
	SetMeta(map[string]any)
}](params P) P {
	if params == nil {
		return nil
	}
	p := P(new(T))
	*p = *params
	p.SetMeta(forwardMeta(params.GetMeta()))
	return p
}

func pass[R any](c *Client, ctx context.Context, op string, f func(*mcp.ClientSession) (R, error)) (R, error) {
	var zero R
	cs, err := c.live()
	if err != nil {
		return zero, err
	}
	res, err := f(cs)
	if err != nil {
		return zero, c.mapErr(ctx, op, err)
	}
	return res, nil
}

// Health is one upstream's state as the health output shows it.
type Health struct {
	Name      string           `json:"name"`
	Transport launch.Transport `json:"transport"`
	State     State            `json:"state"`
	PID       int              `json:"pid,omitempty"` // stdio servers while ready
	Restarts  int              `json:"restarts"`
	LastError string           `json:"last_error,omitempty"` // scrubbed
	Tools     int              `json:"tools"`                // as last listed
	Shadowed  []string         `json:"shadowed,omitempty"`   // tool names hidden by a collision (Set only)
	ListError string           `json:"list_error,omitempty"` // why the last tools/list failed while up; Tools are those last listed (Set only)
	// Connection numbers the sessions opened, from 1: the current one's
	// while ready. Listing.Connections says which one a listing was made
	// on, so that the gateway can tell whether it serves this session's
	// tools (StateJoining).
	Connection uint64 `json:"-"`
}

// Health reports the Client's state.
func (c *Client) Health() Health {
	c.mu.Lock()
	defer c.mu.Unlock()
	h := Health{Name: c.srv.Name, Transport: c.srv.Transport, State: c.state, Restarts: c.restarts, LastError: c.lastErr, Tools: len(c.tools), Connection: c.conn}
	if c.session != nil {
		h.PID = c.pid
	}
	if why := c.oauth.needsLogin(); why != "" && h.State == StateReady {
		// The session is open but its token no longer works.
		h.State, h.LastError = StateNeedsLogin, c.oauth.unauthorized(why).Error()
	}
	return h
}
