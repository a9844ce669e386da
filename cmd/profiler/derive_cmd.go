package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

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
	choose                          *deriveChooseFlags // --choose-default (derive_choose.go)
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
	fl.Float64Var(&f.defaultTarget, "default-target", derive.DefaultTarget, "the file's default is, of the profiles whose held-out coverage reaches this `share`, the cheapest per derive session with prompt caching")
	fl.IntVar(&f.minSessions, "min-sessions", derive.DefaultMinSessions, "refuse to write with fewer unrestricted sessions than `N` (see --force)")
	fl.Float64Var(&f.maxUnknownShare, "max-unknown-share", generate.DefaultMaxUnknownShare, "refuse to write when more than this `share` of calls went to tools the catalog lacks (see --force)")
	fl.BoolVar(&f.force, "force", false, "write even below --min-sessions or above --max-unknown-share")
	fl.BoolVar(&f.check, "check", false, "write nothing; exit 1 when --out differs from what would be written")
	fl.BoolVar(&f.skipBad, "skip-bad", false, "skip malformed trace lines (reported) instead of failing")
	fl.StringVar(&f.summary, "summary", "", "print what changed against the current --out: `markdown`")
	fl.StringVar(&f.plot, "plot", "", "draw the cost/coverage frontier to `FILE.png`")
	fl.BoolVar(&f.search, "search", false, "also write find_tools' ranking priors ([search]: each tool's share of sessions, its most co-used tools, each profile's measured demand from the sessions served it), learned from the derive part only")
	f.groups = addDeriveGroupsFlags(fl)
	f.choose = addDeriveChooseFlags(fl)
	f.cache = addCacheFlags(fl, "session cost: ")
	if help, err := parseCommandFlags("derive", fl, args); help {
		return nil, nil, flag.ErrHelp
	} else if err != nil {
		return nil, nil, err
	}
	set := map[string]bool{}
	fl.Visit(func(x *flag.Flag) { set[x.Name] = true })
	if err := f.validate(fl.Args(), set); err != nil {
		return nil, nil, err
	}
	specs, err := f.specs(set)
	if err != nil {
		return nil, nil, err
	}
	if err := f.cache.Check(); err != nil {
		return nil, nil, usagef("derive: --cache-write, --cache-read or --turn-growth: %v", err)
	}
	if err := f.groups.check(set); err != nil {
		return nil, nil, err
	}
	if err := f.choose.check(set, len(f.traces)); err != nil {
		return nil, nil, err
	}
	return f, specs, nil
}

// validate checks the flags after parsing: args are the arguments after
// them, set the flags given.
func (f *deriveFlags) validate(args []string, set map[string]bool) error {
	switch {
	case len(args) > 0:
		return usagef("derive: unexpected argument %q (pass several inputs as repeated --telemetry or --trace)", args[0])
	case len(f.telemetry) == 0 && len(f.traces) == 0:
		return usagef("derive: give sessions with --telemetry DIR or --trace FILE.jsonl")
	case len(f.telemetry) > 0 && len(f.traces) > 0:
		return usagef("derive: --telemetry and --trace are exclusive; import traces into telemetry (profiler import) to combine them")
	case f.catalog == "":
		return usagef("derive: --catalog FILE is required")
	case f.out == "":
		return usagef("derive: --out must name a file")
	case !(f.holdout >= 0 && f.holdout < 1):
		return usagef("derive: --holdout %v: want a share from 0 up to (not including) 1", f.holdout)
	case !(f.defaultTarget >= 0 && f.defaultTarget <= 1):
		return usagef("derive: --default-target %v: want a share from 0 to 1", f.defaultTarget)
	case !(f.maxUnknownShare >= 0 && f.maxUnknownShare <= 1):
		return usagef("derive: --max-unknown-share %v: want a share from 0 to 1", f.maxUnknownShare)
	case f.minSessions < 0:
		return usagef("derive: --min-sessions %d: want a count >= 0", f.minSessions)
	case f.maxTools < 0:
		return usagef("derive: --max-tools %d: want a tool count of at least 1 (0: no cap)", f.maxTools)
	case f.budget < 0:
		return usagef("derive: --budget-tokens %d: want a positive token count", f.budget)
	case f.summary != "" && f.summary != "markdown":
		return usagef("derive: --summary %q: want markdown", f.summary)
	case set["target"] && len(f.profileSpecs) > 0:
		return usagef("derive: --target and --profile are exclusive: --target T is short for --profile core=T")
	case set["target"] && !(f.target >= 0 && f.target <= 1):
		return usagef("derive: --target %v: want a share from 0 to 1", f.target)
	}
	return nil
}

// specs are the profiles to derive, smallest first, from --target or
// --profile (default core=0.8 standard=0.95) and --budget-tokens.
func (f *deriveFlags) specs(set map[string]bool) ([]derive.Spec, error) {
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
				return nil, usagef("derive: --profile %q: want NAME=SHARE with SHARE from 0 to 1, e.g. core=0.8", v)
			}
			specs = append(specs, derive.Spec{Name: name, Target: share})
		}
	}
	if f.budget > 0 {
		specs[0].Budget = f.budget
	}
	if err := checkSpecNames(specs); err != nil {
		return nil, err
	}
	return specs, nil
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
	out, err := generate.Run(ctx, generate.Config{Telemetry: f.telemetry, Traces: f.traces, SkipBad: f.skipBad, Catalog: f.catalog, Policy: f.policy, Out: f.out,
		Specs: specs, Holdout: f.holdout, DefaultTarget: f.defaultTarget, MinSessions: f.minSessions, MaxTools: f.maxTools, Cache: *f.cache,
		MaxUnknownShare: f.maxUnknownShare, Force: f.force, Search: f.search, Groups: f.groups.config(), Choose: f.choose.config(), Log: stderr})
	if refused := (*generate.RefusedError)(nil); errors.As(err, &refused) {
		return exitError{Code: 1, Err: err}
	}
	if out == nil {
		return err
	}
	if f.summary != "markdown" {
		out.Result.WriteTable(stdout)
	}
	if f.plot != "" && !f.check { // --check writes nothing
		var png bytes.Buffer
		if err := out.Result.Plot(&png); err != nil {
			return err
		}
		if err := atomicfile.Write(f.plot, png.Bytes(), 0o644); err != nil {
			return err
		}
	}
	if err != nil { // the groups step failed
		return err
	}
	if err := f.groups.writeReport(out.Groups, f.summary != "markdown", f.check, stdout); err != nil {
		return err
	}
	if f.summary == "markdown" {
		// After the groups step, so that it describes the file written,
		// grouped profile included.
		fmt.Fprint(stdout, derive.Markdown(filepath.Base(f.out), out.Current, out.File, out.Result))
		if out.Choice != nil {
			fmt.Fprint(stdout, "\n"+out.Choice.Markdown())
		}
	} else if out.Choice != nil {
		fmt.Fprint(stdout, out.Choice.Markdown())
	}
	if f.check {
		if out.CurrentBytes != nil && bytes.Equal(out.CurrentBytes, out.Encoded) {
			fmt.Fprintf(stderr, "derive: %s is up to date\n", f.out)
			return nil
		}
		why := "differs from"
		if out.CurrentBytes == nil {
			why = "does not exist; it would be"
		}
		return exitError{Code: 1, Err: fmt.Errorf("derive: %s %s what derive would write now; run profiler derive without --check to update it", f.out, why)}
	}
	if err := profiles.WriteFile(f.out, out.File); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "derive: wrote %s (default %s)\n", f.out, out.File.Default)
	return nil
}

// checkSpecNames rejects a --profile name the file could not hold.
func checkSpecNames(specs []derive.Spec) error {
	for _, sp := range specs {
		if sp.Name == profiles.FullProfile {
			return usagef("derive: --profile full: full is always derived (every tool); name only the profiles below it")
		}
		if err := profiles.CheckProfileName(sp.Name); err != nil {
			return usagef("derive: --profile %q: %v", sp.Name, err)
		}
	}
	return nil
}
