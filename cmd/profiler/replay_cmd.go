package main

import (
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
	"path/filepath"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/replay"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/upstream"
)

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
	sessions, err := readReplayTrace(f, stderr)
	if err != nil {
		return err
	}
	target, stop, err := replayTarget(ctx, f, stderr)
	if err != nil {
		return err
	}
	defer func() {
		if cerr := stop(); cerr != nil && err == nil {
			err = fmt.Errorf("replay: stop gateway: %w", cerr)
		}
	}()
	rep := replayWithProgress(ctx, target, sessions, f, stderr)
	if h, ok := target.(*replay.HTTPTarget); ok {
		h.CloseIdleConnections() // before the gateway (if ours) stops
	}
	rep.Trace = f.trace
	if f.format == "json" {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			return err
		}
	} else if err := writeReplayTable(stdout, rep); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("replay: interrupted after %d of %d sessions", rep.SessionsRun, len(sessions))
	}
	if rep.SessionErrors > 0 {
		return fmt.Errorf("replay: %d of %d sessions could not be opened against %s (first: %s)", rep.SessionErrors, rep.Sessions, rep.Target, rep.FirstSessionError())
	}
	if notOK := rep.Calls - rep.Outcomes[replay.OK]; f.strict && notOK > 0 {
		return exitError{code: 1, err: fmt.Errorf("replay: %d of %d calls were not ok (--strict)", notOK, rep.Calls)}
	}
	return nil
}

// readReplayTrace decodes --trace, reporting the lines --skip-bad skipped,
// and checks the calls' arguments.
func readReplayTrace(f *replayFlags, stderr io.Writer) ([]telemetry.TraceSession, error) {
	file, err := os.Open(f.trace)
	if err != nil {
		return nil, fmt.Errorf("replay: open trace: %w", err)
	}
	sessions, bad, err := telemetry.DecodeTrace(file, f.trace, true)
	file.Close()
	if err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	if err := telemetry.DecodedTraceReport(sessions, bad).Write(stderr, "replay", f.skipBad, "nothing replayed", "replay the rest"); err != nil {
		return nil, err
	}
	if err := replay.CheckArguments(sessions, f.trace); err != nil {
		return nil, fmt.Errorf("replay: %w", err)
	}
	return sessions, nil
}

// replayTarget is the server the flags name; stop stops the gateway
// started here for --launch (for the others it does nothing).
func replayTarget(ctx context.Context, f *replayFlags, stderr io.Writer) (target replay.Target, stop func() error, err error) {
	switch {
	case f.url != "":
		return replay.NewHTTPTarget(f.url, f.profile, f.concurrency), func() error { return nil }, nil
	case f.src.launch != "":
		endpoint, stop, err := startLaunchGateway(ctx, f, stderr)
		if err != nil {
			return nil, nil, err
		}
		return replay.NewHTTPTarget(endpoint, f.profile, f.concurrency), stop, nil
	default:
		return replay.CommandTarget{Command: f.src.command, Profile: f.profile}, func() error { return nil }, nil
	}
}

// replayWithProgress runs the replay, drawing a progress bar on stderr
// when it is a terminal.
func replayWithProgress(ctx context.Context, target replay.Target, sessions []telemetry.TraceSession, f *replayFlags, stderr io.Writer) *replay.Report {
	opts := replay.Options{Concurrency: f.concurrency, Timeout: f.timeout}
	if !isTerminal(stderr) {
		return replay.Run(ctx, target, sessions, opts)
	}
	bar := progressbar.NewOptions(len(sessions),
		progressbar.OptionSetWriter(stderr),
		progressbar.OptionSetDescription("replay"),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish())
	opts.Done = func() { bar.Add(1) }
	rep := replay.Run(ctx, target, sessions, opts)
	bar.Finish()
	return rep
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

// writeReplayTable prints the per-tool outcomes, the totals and the first
// errors.
func writeReplayTable(w io.Writer, r *replay.Report) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tCALLS\tOK\tTOOL_ERROR\tDENIED\tUNKNOWN_TOOL\tERROR\t")
	for _, t := range r.Tools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Name, t.Calls, t.Outcomes[replay.OK], t.Outcomes[replay.ToolError], t.Outcomes[replay.Denied], t.Outcomes[replay.UnknownTool], t.Outcomes[replay.Error])
	}
	o := r.Outcomes
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Calls, o[replay.OK], o[replay.ToolError], o[replay.Denied], o[replay.UnknownTool], o[replay.Error])
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d sessions of %s replayed against %s in %.1fs: %d calls, %d ok, %d tool_error, %d denied, %d unknown_tool, %d error; %d sessions could not be opened\n",
		r.SessionsRun, r.Trace, r.Target, r.Duration, r.Calls, o[replay.OK], o[replay.ToolError], o[replay.Denied], o[replay.UnknownTool], o[replay.Error], r.SessionErrors)
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
