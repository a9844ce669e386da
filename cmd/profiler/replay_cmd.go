package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"

	"github.com/toolprof/toolprof/internal/cli"
	"github.com/toolprof/toolprof/replay"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/toolsource"
)

// replayFlags are profiler replay's settings after parsing.
type replayFlags struct {
	trace, url, profile, format string
	src                         toolsource.Spec
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
	f.src.Register(fs, false)
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
	f.src.Command = fs.Args()
	targets := 0
	for _, set := range []bool{f.url != "", f.src.Launch != "", len(f.src.Command) > 0} {
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
	case f.src.Persona != "" && f.src.Launch == "":
		return nil, usagef("replay: --persona needs --launch")
	case f.profilesExplicit && f.src.Launch == "":
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
	stderr = &serialWriter{W: stderr}
	f, err := parseReplayFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	sessions, err := replay.ReadTrace(f.trace, f.skipBad, stderr)
	if err != nil {
		return err
	}
	target, stop, err := replay.OpenTarget(ctx, replay.TargetConfig{URL: f.url, Command: f.src.Command, Profile: f.profile, Concurrency: f.concurrency,
		Gateway: replay.GatewayConfig{Launch: f.src.Launch, Persona: f.src.Persona, ProfilesPath: f.profilesPath, ProfilesExplicit: f.profilesExplicit}}, stderr)
	if unknown := (*replay.UnknownProfileError)(nil); errors.As(err, &unknown) {
		return usageError{Err: err}
	} else if err != nil {
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
	} else if err := rep.WriteTable(stdout); err != nil {
		return err
	}
	if ctx.Err() != nil {
		return fmt.Errorf("replay: interrupted after %d of %d sessions", rep.SessionsRun, len(sessions))
	}
	if rep.SessionErrors > 0 {
		return fmt.Errorf("replay: %d of %d sessions could not be opened against %s (first: %s)", rep.SessionErrors, rep.Sessions, rep.Target, rep.FirstSessionError())
	}
	if notOK := rep.Calls - rep.Outcomes[replay.OK]; f.strict && notOK > 0 {
		return exitError{Code: 1, Err: fmt.Errorf("replay: %d of %d calls were not ok (--strict)", notOK, rep.Calls)}
	}
	return nil
}

// replayWithProgress runs the replay, drawing a progress bar on stderr
// when it is a terminal.
func replayWithProgress(ctx context.Context, target replay.Target, sessions []telemetry.TraceSession, f *replayFlags, stderr io.Writer) *replay.Report {
	step, finish := cli.Progress(stderr, len(sessions), "replay")
	defer finish()
	return replay.Run(ctx, target, sessions, replay.Options{Concurrency: f.concurrency, Timeout: f.timeout, Done: step})
}

// isTerminal reports whether w is a terminal (cli.IsTerminal).
func isTerminal(w io.Writer) bool { return cli.IsTerminal(w) }
