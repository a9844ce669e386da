package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// checkFlags are profiler check's settings after parsing.
type checkFlags struct {
	profilesPath, tracePath, catalogPath, profile string
	refusedOnly, strict, skipBad                  bool
}

// runCheck answers, without a server, which sessions of a trace a profiles
// file would have refused, and why. It exits 0 and reports; --strict exits 1
// when any session would be refused (for CI before deploying new profiles).
func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("check", "--profiles FILE --trace FILE.jsonl [flags]",
		"Says, without a server, which sessions of a trace the profiles file would refuse and why\n"+
			"(excluded, unknown-tool, unknown-profile). Exits 1 with --strict when any would be.", stderr)
	var f checkFlags
	fs.StringVar(&f.profilesPath, "profiles", "", "generated profiles `FILE` (its sibling profiles.toml is applied too) (required)")
	fs.StringVar(&f.tracePath, "trace", "", "session trace `FILE.jsonl`, one session per line (required)")
	fs.StringVar(&f.catalogPath, "catalog", "", "tools/list catalog `FILE`: what the upstreams offer; without it, the tools named in the profiles file")
	fs.StringVar(&f.profile, "profile", "", "check every session against profile `NAME` instead of the one it names (or the default)")
	fs.BoolVar(&f.refusedOnly, "refused-only", false, "list only sessions that would be refused")
	fs.BoolVar(&f.strict, "strict", false, "exit 1 when any session would be refused")
	fs.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed trace lines (reported on stderr) instead of failing")
	if help, err := parseCommandFlags("check", fs, args); help || err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("check: unexpected argument %q", fs.Arg(0))
	case f.profilesPath == "":
		return usagef("check: --profiles FILE is required")
	case f.tracePath == "":
		return usagef("check: --trace FILE.jsonl is required")
	}
	snap, err := checkSnapshot(&f, stderr)
	if err != nil {
		return err
	}
	sessions, err := telemetry.ReadTraceFile(f.tracePath, "check", f.skipBad, stderr, "nothing checked", "check the rest")
	if err != nil {
		return err
	}
	verdicts := make([]policy.Verdict, len(sessions))
	for i, s := range sessions {
		name := s.Profile
		if f.profile != "" {
			name = f.profile
		} else if name == "" {
			name = snap.Resolved.Default
		}
		calls := make([]policy.Call, len(s.Calls))
		for j, c := range s.Calls {
			calls[j] = policy.Call{Tool: c.Tool, Arguments: c.Arguments, ViaSearch: c.Search}
		}
		verdicts[i] = policy.CheckSession(snap, s.Session, calls, name)
	}
	if err := policy.WriteVerdicts(stdout, verdicts, f.refusedOnly); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	refused := policy.WriteVerdictSummary(stdout, verdicts, f.profilesPath, f.tracePath)
	if f.strict && refused > 0 {
		return exitError{Code: 1, Err: fmt.Errorf("check: %d of %d sessions would be refused (--strict)", refused, len(verdicts))}
	}
	return nil
}

// checkSnapshot loads the profiles file and resolves it against the
// catalog, or without one against the tools the file names.
func checkSnapshot(f *checkFlags, stderr io.Writer) (*policy.Snapshot, error) {
	set, err := profiles.Load(f.profilesPath)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	var tools []*mcp.Tool
	if f.catalogPath != "" {
		c, err := catalog.Load(f.catalogPath)
		if err != nil {
			return nil, fmt.Errorf("check: %w", err)
		}
		tools = c.Tools
	} else {
		tools = policy.NamedTools(set)
		fmt.Fprintf(stderr, "note: no --catalog: the offered tools are taken to be the %d named in %s; annotation-based destructive and read-only rules are not applied\n", len(tools), f.profilesPath)
	}
	res, err := set.Resolve(tools)
	if err != nil {
		return nil, fmt.Errorf("check: %w", err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if f.profile != "" {
		if _, ok := res.Profiles[f.profile]; !ok {
			return nil, usagef("check: --profile %q: no such profile; valid profiles: %s", f.profile, strings.Join(res.Names(), ", "))
		}
	}
	snap := &policy.Snapshot{Resolved: res, Tools: make(map[string]*mcp.Tool, len(tools)), Search: policy.SearchServed(res)}
	for _, t := range tools {
		snap.Tools[t.Name] = t
	}
	return snap, nil
}
