package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// deriveFlags are profiler derive's settings after parsing: cfg is what
// generate.Run is given, the rest how its output is shown.
type deriveFlags struct {
	cfg           generate.Config
	profileSpecs  listFlag
	target        float64
	budget        int
	check         bool
	summary, plot string
	groups        *deriveGroupsFlags // --groups (derive_groups.go)
	choose        *deriveChooseFlags // --choose-default (derive_choose.go)
	cache         *price.CacheModel
}

func parseDeriveFlags(args []string, stderr io.Writer) (*deriveFlags, error) {
	f := &deriveFlags{}
	c := &f.cfg
	fl := newCommandFlags("derive", "(--telemetry DIR | --trace FILE) --catalog FILE [flags]",
		"Derives nested tool profiles (smallest first, full last) from measured sessions and writes\n"+
			"them to --out. Exits 1 below --min-sessions or above --max-unknown-share without --force,\n"+
			"and with --check when --out differs from what would be written.", stderr)
	fl.Var((*listFlag)(&c.Telemetry), "telemetry", "telemetry `DIR` to read (repeatable)")
	fl.Var((*listFlag)(&c.Traces), "trace", "session JSON Lines `FILE` to read instead of telemetry (repeatable)")
	fl.StringVar(&c.Catalog, "catalog", "", "tools/list catalog `FILE` (required)")
	fl.StringVar(&c.Policy, "policy", "", "hand-written profiles.toml (default: profiles.toml beside --out, if present)")
	fl.StringVar(&c.Out, "out", "profiles.generated.toml", "generated profiles `FILE`")
	fl.Float64Var(&f.target, "target", 0, "derive a single profile, core, covering this `share` of sessions (instead of --profile)")
	fl.Var(&f.profileSpecs, "profile", "derived profile `NAME=SHARE`, smallest first (repeatable; default core=0.8 standard=0.95); full is always added")
	fl.IntVar(&f.budget, "budget-tokens", 0, "derive the smallest profile as the most sessions within `N` o200k_base tokens of the model measure (anthropic: the tools as a client sends them to the model) instead of a target")
	fl.IntVar(&c.MaxTools, "max-tools", 0, "keep every derived profile (not full) at or under `N` tools, e.g. 40 for Cursor, 128 for VS Code (0: no cap)")
	fl.Float64Var(&c.Holdout, "holdout", derive.DefaultHoldout, "newest `share` of sessions held out to test")
	fl.Float64Var(&c.DefaultTarget, "default-target", derive.DefaultTarget, "the file's default is, of the profiles whose held-out coverage reaches this `share`, the cheapest per derive session with prompt caching")
	fl.IntVar(&c.MinSessions, "min-sessions", derive.DefaultMinSessions, "refuse to write with fewer unrestricted sessions than `N` (see --force)")
	fl.Float64Var(&c.MaxUnknownShare, "max-unknown-share", generate.DefaultMaxUnknownShare, "refuse to write when more than this `share` of calls went to tools the catalog lacks (see --force)")
	fl.BoolVar(&c.Force, "force", false, "write even below --min-sessions or above --max-unknown-share")
	fl.BoolVar(&f.check, "check", false, "write nothing; exit 1 when --out differs from what would be written")
	fl.BoolVar(&c.SkipBad, "skip-bad", false, "skip malformed trace lines (reported) instead of failing")
	fl.StringVar(&f.summary, "summary", "", "print what changed against the current --out: `markdown`")
	fl.StringVar(&f.plot, "plot", "", "draw the cost/coverage frontier to `FILE.png` (replaces only a plot derive drew)")
	fl.BoolVar(&c.Search, "search", false, "also write find_tools' ranking priors ([search]: each tool's share of sessions, its most co-used tools, each profile's measured demand from the sessions served it), learned from the derive part only")
	f.groups = addDeriveGroupsFlags(fl)
	f.choose = addDeriveChooseFlags(fl)
	f.cache = addCacheFlags(fl, "session cost: ")
	if help, err := parseCommandFlags("derive", fl, args); help {
		return nil, flag.ErrHelp
	} else if err != nil {
		return nil, err
	}
	set := map[string]bool{}
	fl.Visit(func(x *flag.Flag) { set[x.Name] = true })
	if fl.NArg() > 0 {
		return nil, usagef("derive: unexpected argument %q (pass several inputs as repeated --telemetry or --trace)", fl.Arg(0))
	}
	if err := c.Check(); err != nil {
		return nil, usageError{Err: err}
	}
	if f.summary != "" && f.summary != "markdown" {
		return nil, usagef("derive: --summary %q: want markdown", f.summary)
	}
	var err error
	if c.Specs, err = generate.ParseSpecs(generate.SpecFlags{Profiles: f.profileSpecs, Target: f.target, TargetSet: set["target"], Budget: f.budget}); err != nil {
		return nil, usageError{Err: err}
	}
	if err := f.cache.Check(); err != nil {
		return nil, usagef("derive: --cache-write, --cache-read or --turn-growth: %v", err)
	}
	if f.plot != "" {
		if err := derive.CheckPlotReplace(f.plot); err != nil {
			return nil, usageError{Err: err}
		}
	}
	if err := f.groups.check(set); err != nil {
		return nil, err
	}
	if err := f.choose.check(set, len(c.Traces)); err != nil {
		return nil, err
	}
	c.Cache, c.Groups, c.Choose, c.Log = *f.cache, f.groups.config(), f.choose.config(), stderr
	return f, nil
}

// runDerive implements profiler derive.
func runDerive(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	f, err := parseDeriveFlags(args, stderr)
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	out, err := generate.Run(ctx, f.cfg)
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
		fmt.Fprint(stdout, derive.Markdown(filepath.Base(f.cfg.Out), out.Current, out.File, out.Result))
		if out.Choice != nil {
			fmt.Fprint(stdout, "\n"+out.Choice.Markdown())
		}
	} else if out.Choice != nil {
		fmt.Fprint(stdout, out.Choice.Markdown())
	}
	if f.check {
		if out.CurrentBytes != nil && bytes.Equal(out.CurrentBytes, out.Encoded) {
			fmt.Fprintf(stderr, "derive: %s is up to date\n", f.cfg.Out)
			return nil
		}
		why := "differs from"
		if out.CurrentBytes == nil {
			why = "does not exist; it would be"
		}
		return exitError{Code: 1, Err: fmt.Errorf("derive: %s %s what derive would write now; run profiler derive without --check to update it", f.cfg.Out, why)}
	}
	if err := profiles.WriteFile(f.cfg.Out, out.File); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "derive: wrote %s (default %s)\n", f.cfg.Out, out.File.Default)
	return nil
}
