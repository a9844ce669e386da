package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/upstream"
)

// Outcomes of a replayed call, as the client saw them.
const (
	replayOK          = "ok"           // a result without isError
	replayToolError   = "tool_error"   // the tool ran and answered isError
	replayDenied      = "denied"       // the gateway's policy envelope (e.g. tool_not_in_profile)
	replayUnknownTool = "unknown_tool" // JSON-RPC -32602: no upstream offers the tool
	replayError       = "error"        // anything else: transport, other JSON-RPC error, upstream envelope, no session
)

// replayOutcomes is the order outcomes are reported in.
var replayOutcomes = []string{replayOK, replayToolError, replayDenied, replayUnknownTool, replayError}

// replayFlags are profiler replay's settings after parsing.
type replayFlags struct {
	trace, url, profile, format string
	src                         sourceFlags
	profilesPath                string
	profilesExplicit            bool
	concurrency                 int
	timeout                     time.Duration
	strict, skipBad             bool
}

func parseReplayFlags(args []string, stderr io.Writer) (*replayFlags, error) {
	f := &replayFlags{}
	fs := newCommandFlags("replay", "--trace FILE.jsonl [flags] (--url URL | --launch FILE | -- CMD ARGS)",
		"Drives one real MCP session per trace line against a running gateway (--url), one started\n"+
			"here (--launch) or a stdio server started per session (-- CMD ARGS), and counts call outcomes:\n"+
			"ok, tool_error, denied, unknown_tool, error. Exits 1 with --strict when any call is not ok.", stderr)
	fs.StringVar(&f.trace, "trace", "", "session trace `FILE.jsonl`, one session per line (required)")
	fs.StringVar(&f.url, "url", "", "streamable HTTP endpoint `URL` of a running server")
	f.src.register(fs, false)
	fs.Lookup("launch").Usage = "launch document `FILE` (.mcp.json): its servers are started here behind an in-process gateway serving --profiles"
	fs.StringVar(&f.profilesPath, "profiles", "profiles.generated.toml", "with --launch: generated profiles `FILE` to serve (profiles.toml beside it merged in); absent default: every tool as full")
	fs.StringVar(&f.profile, "profile", "", "profile `NAME` to ask for in every session, instead of the one each trace line names (URL path /mcp/NAME with --url or --launch, TOOLPROF_PROFILE for a command)")
	fs.IntVar(&f.concurrency, "concurrency", 4, "sessions run at once (`N`)")
	fs.DurationVar(&f.timeout, "timeout", 30*time.Second, "limit for one session's connect, listing and calls (`DUR`)")
	fs.StringVar(&f.format, "format", "table", "output `format`: table or json")
	fs.BoolVar(&f.strict, "strict", false, "exit 1 when any call was not ok")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed trace lines (reported on stderr) instead of failing")
	if help, err := parseCommandFlags("replay", fs, args); help {
		return nil, flag.ErrHelp
	} else if err != nil {
		return nil, err
	}
	fs.Visit(func(x *flag.Flag) { f.profilesExplicit = f.profilesExplicit || x.Name == "profiles" })
	f.src.command = fs.Args()
	targets := 0
	for _, set := range []bool{f.url != "", f.src.launch != "", len(f.src.command) > 0} {
		if set {
			targets++
		}
	}
	switch {
	case f.trace == "":
		return nil, usagef("replay: --trace FILE.jsonl is required")
	case targets == 0:
		return nil, usagef("replay: no server: give --url URL, --launch FILE or -- CMD ARGS")
	case targets > 1:
		return nil, usagef("replay: more than one server: give only one of --url URL, --launch FILE or -- CMD ARGS")
	case f.src.persona != "" && f.src.launch == "":
		return nil, usagef("replay: --persona needs --launch")
	case f.profilesExplicit && f.src.launch == "":
		return nil, usagef("replay: --profiles applies to --launch only (a running or started server reads its own)")
	case f.concurrency < 1:
		return nil, usagef("replay: --concurrency %d: want at least 1", f.concurrency)
	case f.timeout <= 0:
		return nil, usagef("replay: --timeout %v: want a positive duration", f.timeout)
	case f.format != "table" && f.format != "json":
		return nil, usagef("replay: --format %q: want table or json", f.format)
	}
	if f.url != "" {
		u, err := url.Parse(f.url)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return nil, usagef("replay: --url %q: want an http(s) URL such as http://127.0.0.1:8080/mcp", f.url)
		}
	}
	if f.profile != "" && (strings.Contains(f.profile, "/") || strings.TrimSpace(f.profile) != f.profile) {
		return nil, usagef("replay: --profile %q: want a profile name", f.profile)
	}
	return f, nil
}

// runReplay implements profiler replay. It exits 0 after reporting unless
// --strict is given and a call was not ok, or a session could not be
// opened at all (the server is unreachable or broken: the figures would
// mean nothing), which exits 1.
func runReplay(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	stderr = &serialWriter{w: stderr}
	f, err := parseReplayFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	file, err := os.Open(f.trace)
	if err != nil {
		return fmt.Errorf("replay: open trace: %w", err)
	}
	sessions, bad, err := telemetry.DecodeTrace(file, f.trace, true)
	file.Close()
	if err != nil {
		return fmt.Errorf("replay: %w", err)
	}
	if err := decodedTraceReport(sessions, bad).report(stderr, "replay", f.skipBad, "nothing replayed", "replay the rest"); err != nil {
		return err
	}
	if err := checkArguments(sessions, f.trace); err != nil {
		return err
	}

	var target replayTarget
	switch {
	case f.url != "":
		target = newHTTPTarget(f.url, f.profile, f.concurrency)
	case f.src.launch != "":
		endpoint, stop, err := startLaunchGateway(ctx, f, stderr)
		if err != nil {
			return err
		}
		defer func() {
			if cerr := stop(); cerr != nil && err == nil {
				err = fmt.Errorf("replay: stop gateway: %w", cerr)
			}
		}()
		target = newHTTPTarget(endpoint, f.profile, f.concurrency)
	default:
		target = commandTarget{command: f.src.command, profile: f.profile}
	}

	var bar *progressbar.ProgressBar
	if isTerminal(stderr) {
		bar = progressbar.NewOptions(len(sessions),
			progressbar.OptionSetWriter(stderr),
			progressbar.OptionSetDescription("replay"),
			progressbar.OptionShowCount(),
			progressbar.OptionClearOnFinish())
	}
	rep := replay(ctx, target, sessions, f.concurrency, f.timeout, func() {
		if bar != nil {
			bar.Add(1)
		}
	})
	if bar != nil {
		bar.Finish()
	}
	if h, ok := target.(httpTarget); ok {
		h.client.CloseIdleConnections() // before the gateway (if ours) stops
	}
	rep.Trace, rep.Target = f.trace, target.describe()
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := rep.writeTable(stdout); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("replay: interrupted after %d of %d sessions", rep.SessionsRun, len(sessions))
	}
	if rep.SessionErrors > 0 {
		return fmt.Errorf("replay: %d of %d sessions could not be opened against %s (first: %s)", rep.SessionErrors, rep.Sessions, rep.Target, rep.firstSessionError())
	}
	if notOK := rep.Calls - rep.Outcomes[replayOK]; f.strict && notOK > 0 {
		return exitError{code: 1, err: fmt.Errorf("replay: %d of %d calls were not ok (--strict)", notOK, rep.Calls)}
	}
	return nil
}

// checkArguments refuses a call whose "arguments" is not a JSON object:
// sent as is, the server would answer -32602 and the call would be
// miscounted as an unknown tool.
func checkArguments(sessions []telemetry.TraceSession, file string) error {
	for _, s := range sessions {
		for i, c := range s.Calls {
			a := bytes.TrimSpace(c.Arguments)
			if len(a) == 0 || bytes.Equal(a, []byte("null")) || a[0] == '{' {
				continue
			}
			return fmt.Errorf("replay: %s: session %q calls[%d] (%s): \"arguments\" is %s; want a JSON object such as {\"path\": \"README.md\"}, or no \"arguments\" for {}", file, s.Session, i, c.Tool, a)
		}
	}
	return nil
}

// isTerminal reports whether w is a terminal (the progress bar is drawn
// only there, never into a log or a pipe).
func isTerminal(w io.Writer) bool {
	if s, ok := w.(*serialWriter); ok {
		w = s.w
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// withProfile appends /NAME to an endpoint's path: the gateway serves
// profile NAME at /mcp/NAME.
func withProfile(endpoint, profile string) string {
	if profile == "" {
		return endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + profile
	return u.String()
}

// replayTarget opens the transport of one replayed session. profile is
// the profile the trace says the session was served ("" for none); a
// target given --profile ignores it.
type replayTarget interface {
	transport(ctx context.Context, profile string) (sessionTransport, error)
	describe() string
}

// sessionTransport is one session's way to the server.
type sessionTransport struct {
	mcp.Transport
	stderr *limitedBuffer // a started command's stderr, shown when the session fails; nil for HTTP
	where  string         // the endpoint, or the profile a command is asked for, for errors
}

// httpTarget connects to a streamable HTTP endpoint, sharing one pool of
// connections among the sessions.
type httpTarget struct {
	endpoint string // with /NAME appended when --profile is given
	fixed    bool   // --profile given: sessions' own profiles are ignored
	client   *http.Client
}

func newHTTPTarget(endpoint, profile string, concurrency int) httpTarget {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	return httpTarget{endpoint: withProfile(endpoint, profile), fixed: profile != "", client: &http.Client{Transport: tr}}
}

func (h httpTarget) transport(_ context.Context, profile string) (sessionTransport, error) {
	endpoint := h.endpoint
	if !h.fixed {
		endpoint = withProfile(endpoint, profile)
	}
	// No standalone SSE stream: a replayed session only reads the answers
	// to its own requests, and it saves a connection per session.
	t := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: h.client, DisableStandaloneSSE: true, MaxRetries: -1}
	return sessionTransport{Transport: t, where: endpoint}, nil
}

func (h httpTarget) describe() string { return h.endpoint }

// commandTarget starts a stdio server command per session. Its stderr is
// kept and shown only when the session fails, so that a hundred sessions'
// start-up notes do not bury the report.
type commandTarget struct {
	command []string
	profile string
}

func (c commandTarget) transport(_ context.Context, profile string) (sessionTransport, error) {
	cmd := exec.Command(c.command[0], c.command[1:]...)
	if c.profile != "" {
		profile = c.profile
	}
	if profile != "" {
		cmd.Env = append(os.Environ(), "TOOLPROF_PROFILE="+profile)
	}
	errBuf := &limitedBuffer{max: 8 << 10}
	cmd.Stderr = errBuf
	where := "the command"
	if profile != "" {
		where = fmt.Sprintf("the command with TOOLPROF_PROFILE=%s", profile)
	}
	return sessionTransport{Transport: &mcp.CommandTransport{Command: cmd}, stderr: errBuf, where: where}, nil
}

func (c commandTarget) describe() string { return strings.Join(c.command, " ") }

// limitedBuffer keeps the first max bytes written and discards the rest,
// without failing the writer (a child blocked on a full pipe would hang).
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// String returns what was kept, trimmed; the command may still be writing.
func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.buf.String())
}

// startLaunchGateway starts, in this process, the gateway over the launch
// document's upstreams, serving the --profiles file on a free loopback
// port, and returns its /mcp endpoint. Nothing is recorded: this is a
// rehearsal of a profiles file before it is deployed.
func startLaunchGateway(ctx context.Context, f *replayFlags, stderr io.Writer) (string, func() error, error) {
	set, err := profiles.Load(f.profilesPath)
	switch {
	case errors.Is(err, os.ErrNotExist) && !f.profilesExplicit:
		fmt.Fprintf(stderr, "replay: no %s here: serving every tool as profile %q (--profiles FILE to rehearse profiles)\n", f.profilesPath, gateway.FullProfile)
		set = nil
	case err != nil:
		return "", nil, fmt.Errorf("replay: %w", err)
	}
	// The launch document's servers, started here; the gateway owns them
	// once it is made (its Close closes them).
	doc, err := launch.Load(f.src.launch, f.src.persona)
	if err != nil {
		return "", nil, fmt.Errorf("replay: %w", err)
	}
	spec, err := doc.Resolve(os.LookupEnv)
	if err != nil {
		return "", nil, fmt.Errorf("replay: resolve %s: %w", f.src.launch, err)
	}
	up, err := upstream.StartSet(ctx, spec, upstream.SetOptions{RequireAll: true, Client: upstream.Options{Stderr: stderr}})
	if err != nil {
		return "", nil, fmt.Errorf("replay: launch %s: %w", f.src.launch, err)
	}
	desc := "launch document " + filepath.ToSlash(f.src.launch)
	tools, err := up.ListTools(ctx)
	if err != nil {
		up.Close()
		return "", nil, fmt.Errorf("replay: list tools of %s: %w", desc, err)
	}
	resolved := profiles.Full(tools)
	if set != nil {
		if resolved, err = set.Resolve(tools); err != nil {
			up.Close()
			return "", nil, fmt.Errorf("replay: profiles %s: %w", f.profilesPath, err)
		}
	}
	for _, w := range resolved.Warnings {
		fmt.Fprintln(stderr, "replay: warning:", w)
	}
	g, err := gateway.New(ctx, gateway.Options{Upstream: up, Tools: tools, Profiles: resolved, ServerName: servedName, ServerVersion: servedVersion})
	if err != nil {
		up.Close()
		return "", nil, fmt.Errorf("replay: %w", err)
	}
	if f.profile != "" {
		if _, ok := resolved.Profiles[f.profile]; !ok {
			g.Close()
			return "", nil, usagef("replay: --profile %q: no such profile; valid profiles: %s", f.profile, strings.Join(resolved.Names(), ", "))
		}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.Close()
		return "", nil, fmt.Errorf("replay: listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: g.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	fmt.Fprintf(stderr, "replay: gateway over %s on http://%s/mcp (default profile %q)\n", desc, ln.Addr(), resolved.Default)
	stop := func() error {
		// Sessions first, so that their open streams end and Shutdown can finish.
		err := g.Close()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := srv.Shutdown(shutdownCtx); serr != nil {
			srv.Close()
		}
		<-done
		return err
	}
	return "http://" + ln.Addr().String() + "/mcp", stop, nil
}

// replayReport is what profiler replay prints (--format json is this
// shape).
type replayReport struct {
	Trace         string         `json:"trace"`
	Target        string         `json:"target"`
	Sessions      int            `json:"sessions"`
	SessionsRun   int            `json:"sessions_run"`
	SessionErrors int            `json:"session_errors"`
	Calls         int            `json:"calls"`
	Outcomes      map[string]int `json:"outcomes"`
	DeniedCodes   map[string]int `json:"denied_codes"`
	Tools         []replayTool   `json:"tools"`
	Errors        []replayIssue  `json:"errors"` // the first maxReplayIssues failures
	Duration      float64        `json:"duration_seconds"`
}

// replayTool counts one tool's outcomes.
type replayTool struct {
	Name     string         `json:"name"`
	Calls    int            `json:"calls"`
	Outcomes map[string]int `json:"outcomes"`
}

// replayIssue is one session or call that ended in an error.
type replayIssue struct {
	Session string `json:"session"`
	Call    int    `json:"call"` // index in the session's calls; -1: the session itself
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

const maxReplayIssues = 20

// callResult is one replayed call's outcome.
type callResult struct {
	tool, outcome, code, message string
}

// sessionResult is one replayed session.
type sessionResult struct {
	session string
	err     error // the session could not be opened or listed
	calls   []callResult
}

// replay runs sessions against target, concurrency at a time, in trace
// order of start, and tallies the outcomes. done is called after each
// session.
func replay(ctx context.Context, target replayTarget, sessions []telemetry.TraceSession, concurrency int, timeout time.Duration, done func()) *replayReport {
	start := time.Now()
	results := make([]*sessionResult, len(sessions))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(concurrency, max(len(sessions), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = replaySession(ctx, target, sessions[i], timeout)
				done()
			}
		}()
	}
feed:
	for i := range sessions {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	rep := &replayReport{Sessions: len(sessions), Outcomes: map[string]int{}, DeniedCodes: map[string]int{}, Tools: []replayTool{}, Errors: []replayIssue{}}
	for _, o := range replayOutcomes {
		rep.Outcomes[o] = 0
	}
	perTool := map[string]*replayTool{}
	issue := func(is replayIssue) {
		if len(rep.Errors) < maxReplayIssues {
			rep.Errors = append(rep.Errors, is)
		}
	}
	for i, r := range results {
		if r == nil {
			continue // not run: interrupted
		}
		rep.SessionsRun++
		if r.err != nil {
			rep.SessionErrors++
			issue(replayIssue{Session: sessions[i].Session, Call: -1, Message: r.err.Error()})
		}
		for j, c := range r.calls {
			rep.Calls++
			rep.Outcomes[c.outcome]++
			t := perTool[c.tool]
			if t == nil {
				t = &replayTool{Name: c.tool, Outcomes: map[string]int{}}
				perTool[c.tool] = t
			}
			t.Calls++
			t.Outcomes[c.outcome]++
			switch c.outcome {
			case replayDenied:
				rep.DeniedCodes[c.code]++
			case replayError:
				if r.err == nil { // a session not opened is listed once, above
					issue(replayIssue{Session: r.session, Call: j, Tool: c.tool, Message: c.message})
				}
			}
		}
	}
	for _, t := range perTool {
		rep.Tools = append(rep.Tools, *t)
	}
	sort.Slice(rep.Tools, func(a, b int) bool {
		if rep.Tools[a].Calls != rep.Tools[b].Calls {
			return rep.Tools[a].Calls > rep.Tools[b].Calls
		}
		return rep.Tools[a].Name < rep.Tools[b].Name
	})
	rep.Duration = time.Since(start).Seconds()
	return rep
}

// replaySession opens one session as the traced client, lists the tools
// like a client does, and makes the session's calls in order. When the
// session cannot be opened, each of its calls counts as an error.
func replaySession(ctx context.Context, target replayTarget, s telemetry.TraceSession, timeout time.Duration) *sessionResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &sessionResult{session: s.Session}
	fail := func(err error) *sessionResult {
		res.err = err
		res.calls = res.calls[:0]
		for _, c := range s.Calls {
			res.calls = append(res.calls, callResult{tool: c.Tool, outcome: replayError, message: "session not opened: " + err.Error()})
		}
		return res
	}
	t, err := target.transport(ctx, s.Profile)
	if err != nil {
		return fail(err)
	}
	name, ver := s.Client.Name, s.Client.Version
	if name == "" {
		name = "toolprof-replay"
	}
	if ver == "" {
		ver = "0"
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: ver}, nil)
	cs, err := client.Connect(ctx, t.Transport, nil)
	if err != nil {
		if t.stderr != nil {
			if msg := t.stderr.String(); msg != "" {
				err = fmt.Errorf("%w; server stderr: %s", err, msg)
			}
		}
		return fail(fmt.Errorf("connect to %s: %w", t.where, err))
	}
	defer cs.Close()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		return fail(fmt.Errorf("tools/list: %w", err))
	}
	for _, c := range s.Calls {
		var args any = map[string]any{}
		if len(c.Arguments) > 0 && !bytes.Equal(c.Arguments, []byte("null")) {
			args = c.Arguments
		}
		out, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.Tool, Arguments: args})
		res.calls = append(res.calls, classifyCall(c.Tool, out, err))
	}
	return res
}

// classifyCall maps a call's result or error to its outcome.
func classifyCall(tool string, out *mcp.CallToolResult, err error) callResult {
	r := callResult{tool: tool}
	var werr *jsonrpc.Error
	switch {
	case err != nil && errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams:
		r.outcome, r.message = replayUnknownTool, werr.Message
	case err != nil:
		r.outcome, r.message = replayError, err.Error()
	case !out.IsError:
		r.outcome = replayOK
	default:
		env, ok := envelopeOf(out)
		switch {
		case ok && env.Category == gateway.CategoryPolicy:
			r.outcome, r.code, r.message = replayDenied, env.Code, env.Message
		case ok:
			r.outcome, r.code, r.message = replayError, env.Code, env.Code+": "+env.Message
		default:
			r.outcome = replayToolError
		}
	}
	return r
}

// envelopeOf reads the gateway's error envelope from a result's
// structuredContent, if it carries one.
func envelopeOf(out *mcp.CallToolResult) (gateway.Envelope, bool) {
	var env gateway.Envelope
	if out.StructuredContent == nil {
		return env, false
	}
	b, err := json.Marshal(out.StructuredContent)
	if err != nil || json.Unmarshal(b, &env) != nil || env.Code == "" || env.Category == "" {
		return env, false
	}
	return env, true
}

func (r *replayReport) firstSessionError() string {
	for _, e := range r.Errors {
		if e.Call == -1 {
			return e.Session + ": " + e.Message
		}
	}
	return "none listed"
}

// writeTable prints the per-tool outcomes, the totals and the first errors.
func (r *replayReport) writeTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tCALLS\tOK\tTOOL_ERROR\tDENIED\tUNKNOWN_TOOL\tERROR\t")
	for _, t := range r.Tools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Name, t.Calls, t.Outcomes[replayOK], t.Outcomes[replayToolError], t.Outcomes[replayDenied], t.Outcomes[replayUnknownTool], t.Outcomes[replayError])
	}
	o := r.Outcomes
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Calls, o[replayOK], o[replayToolError], o[replayDenied], o[replayUnknownTool], o[replayError])
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d sessions of %s replayed against %s in %.1fs: %d calls, %d ok, %d tool_error, %d denied, %d unknown_tool, %d error; %d sessions could not be opened\n",
		r.SessionsRun, r.Trace, r.Target, r.Duration, r.Calls, o[replayOK], o[replayToolError], o[replayDenied], o[replayUnknownTool], o[replayError], r.SessionErrors)
	if len(r.DeniedCodes) > 0 {
		codes := make([]string, 0, len(r.DeniedCodes))
		for c := range r.DeniedCodes {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%s %d", c, r.DeniedCodes[c])
		}
		fmt.Fprintf(w, "denied by code: %s\n", strings.Join(parts, ", "))
	}
	for _, e := range r.Errors {
		if e.Call < 0 {
			fmt.Fprintf(w, "error: session %s: %s\n", e.Session, e.Message)
		} else {
			fmt.Fprintf(w, "error: session %s call %d (%s): %s\n", e.Session, e.Call, e.Tool, e.Message)
		}
	}
	return nil
}
