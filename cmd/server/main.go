// Command server is toolprof's MCP gateway: it starts the upstream MCP
// servers of a launch document (--launch, see launch.go for the exit status
// of a bad one), or the one command after --, and serves their tools under a
// named profile over stdio or streamable HTTP, recording every session and
// call. Resources, prompts, completion, logging, progress, elicitation and
// sampling pass through (package gateway).
//
// Usage:
//
//	server [flags] --launch FILE [--persona NAME] [--require-all]
//	server [flags] -- CMD ARGS...
//
// Run "server -h" for the flags.
package main

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/opcontext"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/upstream"
)

// defaultProfilesPath is the profiles file read when none is named; it alone
// may be missing.
const defaultProfilesPath = "profiles.generated.toml"

// profilesEnv names the variable that names the profiles file when
// --profiles does not.
const profilesEnv = "TOOLPROF_PROFILES"

// usageError marks an error in how the command was called; it exits 2.
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error {
	return usageError{fmt.Errorf(format, args...)}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and maps it to the process exit status.
func exitCode(err error, stderr io.Writer) int {
	if err == nil || errors.Is(err, flag.ErrHelp) {
		return 0
	}
	fmt.Fprintln(stderr, "server:", err)
	var ue usageError
	if errors.As(err, &ue) {
		return 2
	}
	return 1
}

// config is the parsed command line.
type config struct {
	profilesPath string
	// profilesNamed is set when the profiles file was named (--profiles or
	// $TOOLPROF_PROFILES): it must then exist, since serving every tool
	// because of a typo would turn enforcement off.
	profilesNamed   bool
	profilesFromEnv bool
	profile         string
	pageSize        int
	telemetryDir    string
	rotate          time.Duration
	explore         float64
	httpAddr        string
	allowRemote     bool
	noAuth          bool // auth.go
	maxProfile      string
	health          bool
	replica         string
	readOnly        bool
	icons           string
	budget          handshakeBudget
	launchPath      string
	persona         string
	requireAll      bool
	upstream        []string
	hard            hardening // auth.go
	// maxFrameBytes bounds one stdio message; sessionCalls and calls bound
	// the tools/call in flight per session and in the gateway.
	maxFrameBytes int
	sessionCalls  int
	calls         int
	tokensFile    string // tokens.go
	usageIdleGap  time.Duration
	otel          bool
}

func parseFlags(args []string, stderr io.Writer) (*config, error) {
	c := &config{}
	fset := flag.NewFlagSet("server", flag.ContinueOnError)
	fset.SetOutput(stderr)
	fset.Usage = func() {
		fmt.Fprintln(stderr, "usage: server [flags] --launch FILE [--persona NAME] [--require-all]\n"+
			"       server [flags] -- CMD ARGS...\n\n"+
			"Serves the tools of the MCP servers declared in FILE (an .mcp.json), or of the one started by\n"+
			"CMD, under a profile: over stdio, or streamable HTTP with --http ADDR. Exits 2 on a usage error\n"+
			"or an unknown profile, 1 when the handshake is over --max-handshake-tokens or -bytes.\n\nflags:")
		fset.PrintDefaults()
	}
	c.register(fset)
	if err := fset.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	fset.Visit(func(f *flag.Flag) { c.profilesNamed = c.profilesNamed || f.Name == "profiles" })
	c.upstream = fset.Args()
	if err := c.check(); err != nil {
		return nil, err
	}
	return c, nil
}

// register declares the flags into c.
func (c *config) register(fset *flag.FlagSet) {
	fset.StringVar(&c.profilesPath, "profiles", defaultProfilesPath, "generated profiles `FILE` (profiles.toml beside it is merged in; default: $"+profilesEnv+", else this); a FILE named that does not exist exits 1, only the default may be absent (day one: every tool as profile full)")
	fset.StringVar(&c.profile, "profile", "", "profile `NAME` to serve (default: $TOOLPROF_PROFILE, else the file's default)")
	fset.IntVar(&c.pageSize, "page-size", gateway.DefaultPageSize, "tools per tools/list page when the client pages (cursor \""+gateway.StartCursor+"\" starts)")
	fset.StringVar(&c.telemetryDir, "telemetry", "telemetry", "telemetry `DIR`")
	fset.DurationVar(&c.rotate, "rotate", 0, "start a new telemetry segment after `DUR` (0: the telemetry default)")
	fset.Float64Var(&c.explore, "explore", 0, "share of sessions, 0 to 1, served the full profile and marked as exploration (2026-07-28 callers: picked by a stable hash of the token, else of the client name and UTC day)")
	fset.StringVar(&c.httpAddr, "http", "", "serve streamable HTTP on `ADDR` (loopback only unless --allow-remote) instead of stdio")
	fset.BoolVar(&c.allowRemote, "allow-remote", false, "allow --http on a non-loopback address; needs --auth-token-file, --tokens-file or --no-auth")
	fset.BoolVar(&c.noAuth, "no-auth", false, "with --allow-remote, serve without any bearer token: DANGEROUS, anyone who reaches the address can call every served tool")
	fset.StringVar(&c.maxProfile, "max-profile", "", "ceiling `NAME`: never serve a profile with a tool outside this profile")
	fset.BoolVar(&c.health, "health", false, "print the health report as JSON and exit")
	fset.StringVar(&c.replica, "replica", "", "replica `NAME` in session IDs (default: host name and process ID)")
	fset.BoolVar(&c.readOnly, "read-only", false, "list and run only read and evaluate tools; refuse others (envelope code read_only)")
	fset.StringVar(&c.icons, "icons", profiles.IconsKeep, "`keep` or drop the tools' icons members in every profile whose profiles.toml does not set icons (a profile's icons key wins)")
	fset.IntVar(&c.budget.tokens, "max-handshake-tokens", 0, "refuse to start when the served profile's tools and instructions cost more than `N` o200k_base tokens in the model measure, as a client sends them to the model (anthropic shape; 0: no limit)")
	fset.IntVar(&c.budget.bytes, "max-handshake-bytes", 0, "refuse to start when the initialize + tools/list exchange is more than `N` bytes on the wire (0: no limit)")
	fset.StringVar(&c.launchPath, "launch", "", "start the MCP servers declared in `FILE` (.mcp.json format: {\"mcpServers\": {...}})")
	fset.StringVar(&c.persona, "persona", "", "merge personas/`NAME`.mcp.json (beside the --launch file) over it; its entries replace same-named ones")
	fset.BoolVar(&c.requireAll, "require-all", false, "exit when any --launch server fails to start (default: serve the others and retry it)")
	fset.StringVar(&c.tokensFile, "tokens-file", "", "with --http, accept only the bearer tokens listed in `FILE` (TOML, SHA-256 hashes), each served its bound profile within its ceiling; reloaded on change")
	fset.DurationVar(&c.usageIdleGap, "usage-idle-gap", gateway.DefaultUsageIdleGap, "group a 2026-07-28 caller's calls without a trace id into one usage session until it is idle for `DUR`")
	fset.BoolVar(&c.otel, "otel", false, "export OpenTelemetry traces and metrics over OTLP/HTTP, configured by the OTEL_* variables (on too when $OTEL_EXPORTER_OTLP_ENDPOINT is set)")
	c.hard.addFlags(fset)
	fset.IntVar(&c.maxFrameBytes, "max-frame-bytes", jsonrpcwire.DefaultMaxFrameBytes, "over stdio, answer a message (one line) longer than `N` bytes with a JSON-RPC error and skip it")
	fset.IntVar(&c.sessionCalls, "max-session-calls", gateway.DefaultMaxSessionCalls, "answer a tools/call with the retryable envelope busy while `N` calls of its session are in flight")
	fset.IntVar(&c.calls, "max-calls", gateway.DefaultMaxCalls, "answer a tools/call with the retryable envelope busy while `N` calls of all sessions are in flight")
}

// check validates the flags after parsing.
func (c *config) check() error {
	switch {
	case len(c.upstream) == 0 && c.launchPath == "":
		return usagef("no upstream command: want server [flags] -- CMD ARGS..., or server [flags] --launch FILE")
	case len(c.upstream) > 0 && c.launchPath != "":
		return usagef("--launch %s and -- %s: give one of them (declare the command in the launch file to run both)", c.launchPath, c.upstream[0])
	case c.persona != "" && c.launchPath == "":
		return usagef("--persona %s needs --launch FILE (personas live beside it in %s/)", c.persona, launch.PersonaDir)
	}
	if c.pageSize < 1 {
		return usagef("--page-size %d: must be at least 1", c.pageSize)
	}
	if c.usageIdleGap <= 0 {
		return usagef("--usage-idle-gap %v: must be positive", c.usageIdleGap)
	}
	if c.explore < 0 || c.explore > 1 {
		return usagef("--explore %v: must be between 0 and 1", c.explore)
	}
	if c.icons != profiles.IconsKeep && c.icons != profiles.IconsDrop {
		return usagef("--icons %q: want %s or %s", c.icons, profiles.IconsKeep, profiles.IconsDrop)
	}
	if c.budget.tokens < 0 {
		return usagef("--max-handshake-tokens %d: must not be negative (0: no limit)", c.budget.tokens)
	}
	if c.budget.bytes < 0 {
		return usagef("--max-handshake-bytes %d: must not be negative (0: no limit)", c.budget.bytes)
	}
	if c.rotate < 0 {
		return usagef("--rotate %v: must not be negative", c.rotate)
	}
	if c.maxFrameBytes < 1 {
		return usagef("--max-frame-bytes %d: must be at least 1", c.maxFrameBytes)
	}
	if c.sessionCalls < 1 {
		return usagef("--max-session-calls %d: must be at least 1", c.sessionCalls)
	}
	if c.calls < 1 {
		return usagef("--max-calls %d: must be at least 1", c.calls)
	}
	if err := c.hard.check(c.httpAddr); err != nil {
		return err
	}
	if c.httpAddr != "" && !c.allowRemote {
		if err := checkLoopback(c.httpAddr); err != nil {
			return usageError{err}
		}
	}
	return checkRemoteAuth(c)
}

// checkLoopback refuses an address that would listen beyond this machine.
func checkLoopback(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--http %q: %v (want HOST:PORT, e.g. 127.0.0.1:8080)", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("--http %q is not a loopback address; use 127.0.0.1:PORT, or pass --allow-remote to serve beyond this machine", addr)
}

func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	c, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	key, err := cursorKey(os.Getenv(cursorKeyEnv))
	if err != nil {
		return usageError{err}
	}
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	oc, src, err := readConfiguration(c, logger, stderr)
	if err != nil {
		return err
	}

	exp, closeOTel, err := startOTel(ctx, c, logger)
	if err != nil {
		return err
	}
	defer closeOTel(stderr)
	// The upstreams are ours: started here and closed by the gateway.
	ref := &gatewayRef{otel: exp}
	toks, err := openTokens(c, ref)
	if err != nil {
		return err
	}
	up, err := startUpstreams(ctx, c, ref, logger, stderr)
	if err != nil {
		return err
	}
	opts, err := gatewayOptions(ctx, c, up, src, stderr)
	if err != nil {
		up.Close()
		return err
	}
	opts.CursorKey, opts.Logger, opts.OperatingContext = key, logger, oc
	opts.HTTP.Tokens = toks
	if c.budget.set() {
		if err := checkHandshake(ctx, opts, opts.Profiles.Default, c.budget, stderr); err != nil {
			up.Close()
			var pe *gateway.ProfileError
			if errors.As(err, &pe) {
				return usageError{err}
			}
			return err
		}
	}
	if exp != nil {
		opts.Observer = exp
	}
	g, closeRec, err := startGateway(ctx, c, opts, up, stderr)
	if err != nil {
		return err
	}
	defer closeRec()
	ref.g.Store(g)
	if err := checkTokensNow(toks, ref); err != nil {
		g.Close()
		return err
	}
	if toks != nil {
		go watchTokens(ctx, toks, logger)
	}
	c.hard.onNewSession = src.reloader(g.ProfilesChanged)
	if slices.ContainsFunc(g.Health().Upstreams, func(h upstream.Health) bool { return h.State == upstream.StateJoining }) {
		// One connected after the first listing, before the gateway could
		// hear it: list again now rather than at its next change.
		go g.ToolsChanged(ctx, "")
	}
	serveErr := serve(ctx, c, g, stdin, stdout, stderr)
	if err := g.Close(); err != nil {
		// The client has left or a signal came: ending the upstreams is
		// cleanup, and how one exits then (a status, a signal) is not the
		// gateway's failure.
		fmt.Fprintln(stderr, "server: warning:", err)
	}
	return serveErr
}

// readConfiguration completes c from the environment and reads what the
// server serves before it starts anything: the operating context, the
// launch document (checked first, so that a bad one is the first and only
// thing reported) and the profiles.
func readConfiguration(c *config, logger *slog.Logger, stderr io.Writer) (*opcontext.Source, *profileSource, error) {
	if c.profile == "" {
		c.profile = os.Getenv("TOOLPROF_PROFILE")
	}
	if v := os.Getenv(profilesEnv); v != "" && !c.profilesNamed {
		c.profilesPath, c.profilesNamed, c.profilesFromEnv = v, true, true
	}
	// Read once now, so that an invalid sidecar logs its warning at start;
	// the gateway rereads it on every use (tools/call: at most every
	// DefaultCheckEvery).
	home, _ := os.UserHomeDir()
	oc := opcontext.New(os.LookupEnv, home, logger)
	oc.CheckEvery = opcontext.DefaultCheckEvery
	oc.Active()

	if _, err := launchDocument(c); err != nil {
		return nil, nil, err
	}
	seen := lookProfiles(c.profilesPath)
	set, dayOne, err := loadProfiles(c)
	if err != nil {
		return nil, nil, err
	}
	if dayOne != "" {
		fmt.Fprintln(stderr, "server:", dayOne)
	}

	src := newProfileSource(c.profilesPath, seen, set, dayOne, stderr) // reloaded on change (reload.go)
	return oc, src, nil
}

// gatewayOptions lists the upstreams' tools, resolves the profiles
// against them and returns the gateway's options from the flags (without
// the cursor key, logger, operating context and tokens).
func gatewayOptions(ctx context.Context, c *config, up *upstream.Set, src *profileSource, stderr io.Writer) (gateway.Options, error) {
	listing, err := up.List(ctx)
	if err != nil {
		// None has started: serve no tools until one does (it joins
		// through ToolsChanged).
		fmt.Fprintf(stderr, "server: no upstream could be listed yet (%v); serving no tools until one starts\n", err)
		listing = &upstream.Listing{Tools: []*mcp.Tool{}}
	}
	tools := listing.Tools
	resolve := c.resolver(src)
	resolved, err := resolve(tools)
	if err != nil {
		return gateway.Options{}, err
	}
	if c.profile != "" {
		if _, ok := resolved.Profiles[c.profile]; !ok {
			return gateway.Options{}, usagef("unknown profile %q; valid profiles: %s", c.profile, strings.Join(resolved.Names(), ", "))
		}
	}
	// The gateway logs resolved.Warnings when it starts (tools a profile's
	// rules removed among them), and new ones on a reload.
	return gateway.Options{
		Upstream:        up,
		Tools:           tools,
		Connections:     listing.Connections,
		Profiles:        resolved,
		PageSize:        c.pageSize,
		ServerName:      version.Name,
		ServerVersion:   version.Version,
		Explore:         c.explore,
		MaxProfile:      c.maxProfile,
		ReadOnly:        c.readOnly,
		DropIcons:       c.icons == profiles.IconsDrop,
		Resolve:         resolve,
		CallTimeout:     c.hard.callTimeout,
		HTTP:            c.hard.httpOptions(),
		MaxSessionCalls: c.sessionCalls,
		MaxCalls:        c.calls,
		UsageIdleGap:    c.usageIdleGap,
	}, nil
}

// resolver resolves the profiles src serves against the upstreams'
// tools, with --profile as the default when it names one, and src's
// finding among the warnings.
func (c *config) resolver(src *profileSource) func([]*mcp.Tool) (*profiles.Resolved, error) {
	return func(tools []*mcp.Tool) (*profiles.Resolved, error) {
		set, finding := src.current()
		if set == nil {
			r := profiles.Full(tools)
			if c.profile != "" {
				r.Default = c.profile
			}
			return withFinding(r, finding), nil
		}
		r, err := set.Resolve(tools)
		if err != nil {
			return nil, fmt.Errorf("profiles %s: %w", c.profilesPath, err)
		}
		if _, ok := r.Profiles[c.profile]; ok {
			r.Default = c.profile // what stdio and /mcp serve
		}
		return withFinding(r, finding), nil
	}
}

// startGateway opens the recorder (not for --health) and makes the gateway
// over up. On an error everything opened is closed, up included; otherwise
// the caller closes the recorder with closeRec after the gateway.
func startGateway(ctx context.Context, c *config, opts gateway.Options, up *upstream.Set, stderr io.Writer) (g *gateway.Gateway, closeRec func(), err error) {
	closeRec = func() {}
	if !c.health {
		r, err := openRecorder(c)
		if err != nil {
			up.Close()
			return nil, nil, err
		}
		opts.Recorder = r
		closeRec = func() { closeTelemetry(r, c.telemetryDir, stderr) }
	}
	if g, err = gateway.New(ctx, opts); err != nil {
		up.Close()
		closeRec()
		var pe *gateway.ProfileError
		if errors.As(err, &pe) {
			return nil, nil, usageError{err}
		}
		return nil, nil, err
	}
	return g, closeRec, nil
}

// loadProfiles reads the profiles file. A missing default file is day one:
// no set, and dayOne says so (for stderr and the health warnings). A named
// file that is missing or unreadable is an error naming it.
func loadProfiles(c *config) (set *profiles.Set, dayOne string, err error) {
	set, err = profiles.Load(c.profilesPath)
	switch {
	case err == nil:
		return set, "", nil
	case errors.Is(err, fs.ErrNotExist) && !c.profilesNamed:
		return nil, fmt.Sprintf("no profiles file %s: serving every tool as profile %q (day one; name the file with --profiles once derived)", c.profilesPath, gateway.FullProfile), nil
	case errors.Is(err, fs.ErrNotExist):
		return nil, "", fmt.Errorf("%s %s: the profiles file named does not exist; fix the path, or name none to serve every tool as profile %q on day one: %w", c.profilesSource(), c.profilesPath, gateway.FullProfile, err)
	}
	return nil, "", err
}

// profilesSource names what named the profiles file.
func (c *config) profilesSource() string {
	if c.profilesFromEnv {
		return "$" + profilesEnv
	}
	return "--profiles"
}

// serve runs the selected mode until the client leaves or ctx is done.
func serve(ctx context.Context, c *config, g *gateway.Gateway, stdin io.Reader, stdout, stderr io.Writer) error {
	switch {
	case c.health:
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(g.Health())
	case c.httpAddr != "":
		if err := g.CheckDefault(); err != nil {
			return usageError{err} // as on stdio: /mcp would refuse every request
		}
		return serveHTTP(ctx, c.httpAddr, g, &c.hard, stderr)
	default:
		if _, err := g.Server(""); err != nil {
			var pe *gateway.ProfileError
			if errors.As(err, &pe) {
				return usageError{err}
			}
			return err
		}
		if ownStdin(stdin) {
			if n := stdioProcs(os.Getenv); n > 0 {
				runtime.GOMAXPROCS(n) // stdio.go
			}
		}
		if f, ok := stdin.(*os.File); ok {
			in := pollable(f)
			defer in.Close()
			stdin = in
		}
		t := &jsonrpcwire.Transport{Reader: stdin, Writer: stdout, MaxFrameBytes: c.maxFrameBytes}
		return g.ServeStdio(ctx, "", t)
	}
}

// serveHTTP serves g's handler, wrapped by hard, on addr until ctx is done.
func serveHTTP(ctx context.Context, addr string, g *gateway.Gateway, hard *hardening, stderr io.Writer) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("--http %s: %w", addr, err)
	}
	hard.openSessions = g.OpenSessions
	srv, conns := hard.server(hard.handler(g.HTTPHandler()))
	fmt.Fprintf(stderr, "server: serving profile %q on http://%s/mcp\n", g.Default(), ln.Addr())
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("serve http: %w", err)
	case <-ctx.Done():
	}
	// Sessions first, so that their open streams end and Shutdown can finish.
	g.Close()
	conns.closeNew()
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdownCtx); err != nil {
		srv.Close()
	}
	return nil
}

// cursorKeyEnv names the variable holding the tools/list cursor key.
const cursorKeyEnv = "TOOLPROF_CURSOR_KEY"

// cursorKey decodes the cursor key (hex, at least 16 bytes): replicas that
// share it accept each other's tools/list cursors. Empty: a random key. The
// value is a secret and never appears in an error.
func cursorKey(v string) ([]byte, error) {
	if v == "" {
		return nil, nil
	}
	k, err := hex.DecodeString(v)
	if err != nil || len(k) < 16 {
		return nil, fmt.Errorf("%s must be at least 32 hex digits (16 bytes); the value set is not", cursorKeyEnv)
	}
	return k, nil
}

// openRecorder opens the telemetry directory.
func openRecorder(c *config) (*telemetry.Recorder, error) {
	replica := c.replica
	if replica == "" {
		host, err := os.Hostname()
		if err != nil {
			host = "host"
		}
		// Replica names allow only [A-Za-z0-9_-]; host names may hold dots.
		host = strings.Map(func(r rune) rune {
			if r == '-' || r == '_' || ('0' <= r && r <= '9') || ('a' <= r && r <= 'z') || ('A' <= r && r <= 'Z') {
				return r
			}
			return '-'
		}, host)
		replica = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	r, err := telemetry.OpenRecorder(c.telemetryDir, telemetry.RecorderOptions{Replica: replica, Rotate: c.rotate})
	if err != nil {
		return nil, fmt.Errorf("open telemetry %s: %w", c.telemetryDir, err)
	}
	return r, nil
}
