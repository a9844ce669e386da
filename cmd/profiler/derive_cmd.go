package main

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// listFlag collects a repeatable string flag.
type listFlag []string

func (l *listFlag) String() string     { return strings.Join(*l, ",") }
func (l *listFlag) Set(v string) error { *l = append(*l, v); return nil }

// deriveFlags are profiler derive's settings after parsing.
type deriveFlags struct {
	telemetry, traces, profileSpecs listFlag
	catalog, policy, out            string
	target, holdout, defaultTarget  float64
	maxUnknownShare                 float64
	minSessions, budget, maxTools   int
	force, check, skipBad           bool
	search                          bool
	summary, plot                   string
	groups                          *deriveGroupsFlags // --groups (derive_groups.go)
	cache                           *price.CacheModel
}

func parseDeriveFlags(args []string, stderr io.Writer) (*deriveFlags, []derive.Spec, error) {
	f := &deriveFlags{}
	fl := newCommandFlags("derive", "(--telemetry DIR | --trace FILE) --catalog FILE [flags]",
		"Derives nested tool profiles (smallest first, full last) from measured sessions and writes\n"+
			"them to --out. Exits 1 below --min-sessions or above --max-unknown-share without --force,\n"+
			"and with --check when --out differs from what would be written.", stderr)
	fl.Var(&f.telemetry, "telemetry", "telemetry `DIR` to read (repeatable)")
	fl.Var(&f.traces, "trace", "session JSON Lines `FILE` to read instead of telemetry (repeatable)")
	fl.StringVar(&f.catalog, "catalog", "", "tools/list catalog `FILE` (required)")
	fl.StringVar(&f.policy, "policy", "", "hand-written profiles.toml (default: profiles.toml beside --out, if present)")
	fl.StringVar(&f.out, "out", "profiles.generated.toml", "generated profiles `FILE`")
	fl.Float64Var(&f.target, "target", 0, "derive a single profile, core, covering this `share` of sessions (instead of --profile)")
	fl.Var(&f.profileSpecs, "profile", "derived profile `NAME=SHARE`, smallest first (repeatable; default core=0.8 standard=0.95); full is always added")
	fl.IntVar(&f.budget, "budget-tokens", 0, "derive the smallest profile as the most sessions within `N` o200k_base tokens of the model measure (anthropic: the tools as a client sends them to the model) instead of a target")
	fl.IntVar(&f.maxTools, "max-tools", 0, "keep every derived profile (not full) at or under `N` tools, e.g. 40 for Cursor, 128 for VS Code (0: no cap)")
	fl.Float64Var(&f.holdout, "holdout", derive.DefaultHoldout, "newest `share` of sessions held out to test")
	fl.Float64Var(&f.defaultTarget, "default-target", derive.DefaultTarget, "the file's default is the smallest profile whose held-out coverage reaches this `share`")
	fl.IntVar(&f.minSessions, "min-sessions", derive.DefaultMinSessions, "refuse to write with fewer unrestricted sessions than `N` (see --force)")
	fl.Float64Var(&f.maxUnknownShare, "max-unknown-share", DefaultMaxUnknownShare, "refuse to write when more than this `share` of calls went to tools the catalog lacks (see --force)")
	fl.BoolVar(&f.force, "force", false, "write even below --min-sessions or above --max-unknown-share")
	fl.BoolVar(&f.check, "check", false, "write nothing; exit 1 when --out differs from what would be written")
	fl.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed trace lines (reported) instead of failing")
	fl.StringVar(&f.summary, "summary", "", "print what changed against the current --out: `markdown`")
	fl.StringVar(&f.plot, "plot", "", "draw the cost/coverage frontier to `FILE.png`")
	fl.BoolVar(&f.search, "search", false, "also write find_tools' ranking priors ([search]: each tool's share of sessions, its most co-used tools), learned from the derive part only")
	f.groups = addDeriveGroupsFlags(fl)
	f.cache = addCacheFlags(fl, "session cost: ")
	if help, err := parseCommandFlags("derive", fl, args); help {
		return nil, nil, flag.ErrHelp
	} else if err != nil {
		return nil, nil, err
	}
	set := map[string]bool{}
	fl.Visit(func(x *flag.Flag) { set[x.Name] = true })
	switch {
	case fl.NArg() > 0:
		return nil, nil, usagef("derive: unexpected argument %q (pass several inputs as repeated --telemetry or --trace)", fl.Arg(0))
	case len(f.telemetry) == 0 && len(f.traces) == 0:
		return nil, nil, usagef("derive: give sessions with --telemetry DIR or --trace FILE.jsonl")
	case len(f.telemetry) > 0 && len(f.traces) > 0:
		return nil, nil, usagef("derive: --telemetry and --trace are exclusive; import traces into telemetry (profiler import) to combine them")
	case f.catalog == "":
		return nil, nil, usagef("derive: --catalog FILE is required")
	case f.out == "":
		return nil, nil, usagef("derive: --out must name a file")
	case !(f.holdout >= 0 && f.holdout < 1):
		return nil, nil, usagef("derive: --holdout %v: want a share from 0 up to (not including) 1", f.holdout)
	case !(f.defaultTarget >= 0 && f.defaultTarget <= 1):
		return nil, nil, usagef("derive: --default-target %v: want a share from 0 to 1", f.defaultTarget)
	case !(f.maxUnknownShare >= 0 && f.maxUnknownShare <= 1):
		return nil, nil, usagef("derive: --max-unknown-share %v: want a share from 0 to 1", f.maxUnknownShare)
	case f.minSessions < 0:
		return nil, nil, usagef("derive: --min-sessions %d: want a count >= 0", f.minSessions)
	case f.maxTools < 0:
		return nil, nil, usagef("derive: --max-tools %d: want a tool count of at least 1 (0: no cap)", f.maxTools)
	case f.budget < 0:
		return nil, nil, usagef("derive: --budget-tokens %d: want a positive token count", f.budget)
	case f.summary != "" && f.summary != "markdown":
		return nil, nil, usagef("derive: --summary %q: want markdown", f.summary)
	case set["target"] && len(f.profileSpecs) > 0:
		return nil, nil, usagef("derive: --target and --profile are exclusive: --target T is short for --profile core=T")
	case set["target"] && !(f.target >= 0 && f.target <= 1):
		return nil, nil, usagef("derive: --target %v: want a share from 0 to 1", f.target)
	}
	specs := derive.DefaultSpecs()
	if set["target"] {
		specs = []derive.Spec{{Name: "core", Target: f.target}}
	}
	if len(f.profileSpecs) > 0 {
		specs = nil
		for _, v := range f.profileSpecs {
			name, val, ok := strings.Cut(v, "=")
			share, err := strconv.ParseFloat(val, 64)
			if !ok || name == "" || err != nil || !(share >= 0 && share <= 1) {
				return nil, nil, usagef("derive: --profile %q: want NAME=SHARE with SHARE from 0 to 1, e.g. core=0.8", v)
			}
			specs = append(specs, derive.Spec{Name: name, Target: share})
		}
	}
	if f.budget > 0 {
		specs[0].Budget = f.budget
	}
	if err := checkSpecNames(specs); err != nil {
		return nil, nil, err
	}
	if err := f.cache.Check(); err != nil {
		return nil, nil, usagef("derive: --cache-write, --cache-read or --turn-growth: %v", err)
	}
	if err := f.groups.check(set); err != nil {
		return nil, nil, err
	}
	return f, specs, nil
}

// runDerive implements profiler derive.
func runDerive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, specs, err := parseDeriveFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	cat, err := catalog.Load(f.catalog)
	if err != nil {
		return err
	}
	hash, err := cat.Hash()
	if err != nil {
		return fmt.Errorf("catalog %s: %w", f.catalog, err)
	}
	policy, err := loadDerivePolicy(f)
	if err != nil {
		return err
	}
	tools, err := bench.DeriveTools(ctx, cat, policy)
	if err != nil {
		return err
	}
	sessions, paths, toolCalls, unknownOutcomes, err := readDeriveSessions(ctx, f, stderr)
	if err != nil {
		return err
	}
	cfg := derive.Config{Tools: tools, Specs: specs, Policy: policy, Holdout: f.holdout, DefaultTarget: f.defaultTarget, MinSessions: f.minSessions, ToolCalls: toolCalls, MaxTools: f.maxTools,
		Paths: paths, Cache: *f.cache, PolicyPath: cmp.Or(f.policy, profiles.PolicyPathFor(f.out))}
	res, err := derive.Derive(sessions, cfg)
	if err != nil {
		return fmt.Errorf("derive: %w", err)
	}
	c := res.Counts
	fmt.Fprintf(stderr, "derive: %d sessions read; learning from %d (%d full or no profile recorded, %d exploration); %d served less than every tool (a smaller or read-only profile), skipped; %d with no tool call, covered by every profile; %d calling a tool the catalog lacks%s, covered by no profile; %d calls recorded as unknown_tool\n",
		c.Input, c.Used(), c.Full, c.Exploration, c.Restricted, c.ZeroCalls, c.UnknownToolSessions, unknownList(c.UnknownTools), unknownOutcomes)
	for _, w := range res.Warnings {
		fmt.Fprintf(stderr, "derive: warning: %s\n", w)
	}
	if share := c.UnknownCallShare(); share > f.maxUnknownShare {
		if !f.force {
			return exitError{1, fmt.Errorf("derive: %s of %d calls went to tools the catalog %s lacks (%s), above --max-unknown-share %g: the catalog is probably of another server version (a renamed tool is a new tool); give the catalog of the server the sessions were recorded with, or pass --force to write anyway",
				pct(share), c.Calls, f.catalog, unknownCallList(c.UnknownCalls, c.Calls), f.maxUnknownShare)}
		}
		fmt.Fprintf(stderr, "derive: --force given: writing with %s of calls to tools the catalog lacks, above --max-unknown-share %g\n", pct(share), f.maxUnknownShare)
	}
	// Below --min-sessions Derive has warned (the warning also goes into
	// the --summary, the nightly pull request's body); writing needs --force.
	if c.Used() < f.minSessions {
		if !f.force {
			return exitError{1, fmt.Errorf("derive: only %d unrestricted sessions (served full or exploration), below --min-sessions %d: coverage measured on so few says little; record more sessions served full (or with --explore), or pass --force to write anyway", c.Used(), f.minSessions)}
		}
		fmt.Fprintf(stderr, "derive: --force given: writing with %d unrestricted sessions, below --min-sessions %d\n", c.Used(), f.minSessions)
	}

	file := res.File()
	file.Provenance = &profiles.Provenance{
		Generator:   "toolprof profiler derive",
		Sessions:    c.Used(),
		CatalogHash: hash,
		Method:      derive.Method,
		Parameters:  res.Parameters(cfg),
		Tokenizer:   price.O200kBase,
	}
	if f.search {
		file.Search = res.SearchPriors()
	}
	if !res.DataFrom.IsZero() {
		file.Provenance.DataFrom = res.DataFrom.UTC().Format(time.RFC3339)
		file.Provenance.DataUntil = res.DataUntil.UTC().Format(time.RFC3339)
	}
	var buf bytes.Buffer
	if err := profiles.Encode(&buf, file); err != nil {
		return err
	}
	current, curBytes, err := loadCurrent(f.out)
	if err != nil {
		return err
	}
	if f.summary != "markdown" {
		printDeriveReport(stdout, res)
	}
	if f.plot != "" && !f.check { // --check writes nothing
		var png bytes.Buffer
		if err := res.Plot(&png); err != nil {
			return err
		}
		if err := writeDerivedAtomic(f.plot, png.Bytes()); err != nil {
			return err
		}
	}
	groupsReport := stdout
	if f.summary == "markdown" {
		groupsReport = io.Discard // the summary stays markdown
	}
	if err := f.groups.apply(ctx, deriveGroupsInput{Sessions: sessions, Catalog: cat, Policy: policy, Result: res, Holdout: f.holdout, Out: f.out, Check: f.check}, file, &buf, groupsReport); err != nil {
		return err
	}
	if f.summary == "markdown" {
		// After the groups step, so that it describes the file written,
		// grouped profile included.
		fmt.Fprint(stdout, derive.Markdown(filepath.Base(f.out), current, file, res))
	}
	if f.check {
		if curBytes != nil && bytes.Equal(curBytes, buf.Bytes()) {
			fmt.Fprintf(stderr, "derive: %s is up to date\n", f.out)
			return nil
		}
		why := "differs from"
		if curBytes == nil {
			why = "does not exist; it would be"
		}
		return exitError{1, fmt.Errorf("derive: %s %s what derive would write now; run profiler derive without --check to update it", f.out, why)}
	}
	if err := profiles.WriteFile(f.out, file); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "derive: wrote %s (default %s)\n", f.out, file.Default)
	return nil
}

// checkSpecNames rejects a --profile name the file could not hold.
func checkSpecNames(specs []derive.Spec) error {
	for _, sp := range specs {
		if sp.Name == profiles.FullProfile {
			return usagef("derive: --profile full: full is always derived (every tool); name only the profiles below it")
		}
		probe := &profiles.File{Version: profiles.Version, Default: sp.Name, Profiles: []profiles.Profile{{Name: sp.Name}}}
		if err := profiles.Encode(io.Discard, probe); err != nil {
			return usagef("derive: --profile %q: %v", sp.Name, err)
		}
	}
	return nil
}

// DefaultMaxUnknownShare is the share of calls to tools the catalog lacks
// above which derive refuses to write: a few calls to retired tools are
// normal, a larger share means the catalog does not match the sessions.
const DefaultMaxUnknownShare = 0.05

func pct(share float64) string { return fmt.Sprintf("%.1f%%", 100*share) }

// unknownCallList names the tools the catalog lacks, most called first,
// each with its share of all calls.
func unknownCallList(tools []derive.ToolShare, calls int) string {
	const show = 10
	var parts []string
	for i, t := range tools {
		if i == show {
			parts = append(parts, fmt.Sprintf("and %d more", len(tools)-show))
			break
		}
		parts = append(parts, fmt.Sprintf("%s %s", t.Name, pct(float64(t.Calls)/float64(calls))))
	}
	return strings.Join(parts, ", ")
}

func unknownList(names []string) string {
	if len(names) == 0 {
		return ""
	}
	const show = 5
	if len(names) > show {
		return fmt.Sprintf(" (%s, and %d more)", strings.Join(names[:show], ", "), len(names)-show)
	}
	return " (" + strings.Join(names, ", ") + ")"
}

func loadDerivePolicy(f *deriveFlags) (*profiles.Policy, error) {
	path := f.policy
	if path == "" {
		path = profiles.PolicyPathFor(f.out)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return profiles.LoadPolicy(path)
}

// servedToolCosts prices every tool of cat as the gateway lists it
// (bench.ServedCosts), for the groups step.
func servedToolCosts(ctx context.Context, cat *catalog.Catalog, policy *profiles.Policy, counter *price.Counter) (map[string]exchange.ToolCost, error) {
	return bench.ServedCosts(ctx, cat, policy, counter)
}

// loadCurrent reads the file at path: nil when it does not exist. A file
// that exists but does not load is still compared byte for byte by --check
// (and differs), but has no profiles to summarise against.
func loadCurrent(path string) (*profiles.File, []byte, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("read current %s: %w", path, err)
	}
	cur, err := profiles.DecodeFile(bytes.NewReader(b), path)
	if err != nil {
		return nil, b, nil
	}
	return cur, b, nil
}

// readDeriveSessions reads sessions from telemetry directories or trace
// files, in recorded or imported order, with each session's calls in
// order (and turns, from a trace's "turns") by session id, counts the
// calls per tool, and counts calls telemetry recorded as unknown_tool.
func readDeriveSessions(ctx context.Context, f *deriveFlags, stderr io.Writer) ([]telemetry.Usage, map[string]price.Session, map[string]int, int, error) {
	intern := map[string]string{}
	name := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		intern[s] = s
		return s
	}
	var out []telemetry.Usage
	unknown := 0
	add := func(u telemetry.Usage) {
		for i, t := range u.Tools {
			u.Tools[i] = name(t)
		}
		unknown += u.Unknown
		out = append(out, u)
	}
	paths := map[string]price.Session{}
	if len(f.telemetry) > 0 {
		snap, err := telemetry.ScanUsage(ctx, f.telemetry, telemetry.Window{})
		if err != nil {
			return nil, nil, nil, 0, err
		}
		out = snap.Usage[:0] // in place: add writes element i over itself, no second copy
		for _, u := range snap.Usage {
			add(u)
		}
		// Telemetry records no turns: each call is one, plus one answering.
		called := map[string][]string{}
		for _, c := range snap.Calls {
			called[c.Session] = append(called[c.Session], name(c.Tool))
		}
		for id, tools := range called {
			if paths[id], err = price.NewSession(tools, nil, 0); err != nil {
				return nil, nil, nil, 0, fmt.Errorf("session %q: %w", id, err)
			}
		}
		return out, paths, snap.ToolCalls, unknown, nil
	}
	toolCalls := map[string]int{}
	var rep telemetry.TraceReport
	for _, path := range f.traces {
		ss, st, err := telemetry.ReadTraceUsage(ctx, path, true)
		if err != nil {
			return nil, nil, nil, 0, err
		}
		rep.Bad = append(rep.Bad, st.Skipped...)
		rep.NoZone += st.NoZone
		unknown += st.UnknownOutcomes
		for t, n := range st.ToolCalls {
			toolCalls[t] += n
		}
		out = append(out, ss...)
		if err := readTracePaths(path, paths, f.skipBad); err != nil {
			return nil, nil, nil, 0, err
		}
	}
	if err := rep.Write(stderr, "derive", f.skipBad, "nothing written", "derive from the rest"); err != nil {
		return nil, nil, nil, 0, err
	}
	return out, paths, toolCalls, unknown, nil
}

// readTracePaths adds each session of the trace at path, its calls in
// order with their turns, to paths. Malformed lines are reported by
// ReadTraceUsage; a session whose calls' turns go backwards is an error
// unless skipBad, which prices it without turns.
func readTracePaths(path string, paths map[string]price.Session, skipBad bool) error {
	fh, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open trace: %w", err)
	}
	defer fh.Close()
	ts, _, err := telemetry.DecodeTrace(fh, path, true)
	if err != nil {
		return err
	}
	for _, t := range ts {
		s, err := bench.SessionsFromTrace([]telemetry.TraceSession{t})
		switch {
		case err != nil && !skipBad:
			return fmt.Errorf("trace %s: %w (--skip-bad prices it without turns)", path, err)
		case err == nil:
			paths[t.Session] = s[0]
		}
	}
	return nil
}

func printDeriveReport(w io.Writer, res *derive.Result) {
	full := res.Profiles[len(res.Profiles)-1]
	share := func(tokens int) string {
		if full.Tokens == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(tokens)/float64(full.Tokens))
	}
	cov := func(s derive.Score) string {
		v, ok := s.Share()
		if !ok {
			return "not evaluable"
		}
		return fmt.Sprintf("%.1f%% of %d", 100*v, s.Sessions)
	}
	fmt.Fprintf(w, "%-12s %5s %8s %8s %7s  %-18s %-18s | %s\n", "profile", "tools", "tokens", "of full", "gap<=", "coverage", "held-out", "top-k baseline: tools tokens of-full held-out")
	for _, p := range res.Profiles {
		base, gap := "", "-"
		if b := p.Baseline; b != nil {
			base = fmt.Sprintf("%d %d %s %s", len(b.Tools), b.Tokens, share(b.Tokens), cov(b.Holdout))
		}
		if sol := p.Solution; sol != nil && sol.LowerBound > 0 {
			gap = fmt.Sprintf("%.1f%%", 100*float64(sol.Cost-sol.LowerBound)/float64(sol.LowerBound))
		}
		fmt.Fprintf(w, "%-12s %5d %8d %8s %7s  %-18s %-18s | %s\n", p.Name, len(p.Tools), p.Tokens, share(p.Tokens), gap, cov(p.Derive), cov(p.Holdout), base)
	}
	fmt.Fprintln(w, "gap<=: how far the listing's tokens can be above the cheapest listing covering the target, from the Lagrangian lower bound")
	fmt.Fprintf(w, "per held-out session with prompt caching (%s):\n", derive.CostAssumptions(res.Cache))
	fmt.Fprintf(w, "%-12s %10s %10s %10s %8s\n", "profile", "mean", "p50", "p95", "of full")
	for _, p := range res.Profiles {
		if c := p.HoldoutCost; c.Sessions > 0 {
			fmt.Fprintf(w, "%-12s %10.0f %10.0f %10.0f %7.1f%%\n", p.Name, c.Mean, c.P50, c.P95, 100*c.ShareOfFull)
		}
	}
	fmt.Fprintf(w, "default: %s\n", res.Default)
}

// writeDerivedAtomic writes data to path through a temporary file in the same
// directory and a rename.
func writeDerivedAtomic(path string, data []byte) error {
	return atomicfile.Write(path, data, 0o644)
}
