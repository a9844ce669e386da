package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsource"
)

// benchFlags are profiler bench's settings after parsing.
type benchFlags struct {
	src                            toolsource.Spec
	profilesPath, format, baseline string
	tracePath, out                 string
	profilesExplicit, results      bool
	paginate                       bool
	pageSize                       int
	icons                          string
	budgets                        []bench.Budget
	cache                          *price.CacheModel
}

func parseBenchFlags(args []string, stderr io.Writer) (*benchFlags, bool, error) {
	fs := newCommandFlags("bench", "[flags] (--catalog FILE | --launch FILE | -- CMD ARGS)",
		"Prices every profile as the gateway serves it: model (the tools and instructions sent to the\n"+
			"model, the headline) and wire (the initialize + tools/list exchange); with --trace, the\n"+
			"cost per session with prompt caching. Exits 1 over a --max-tokens or --max-bytes budget.", stderr)
	f := &benchFlags{}
	f.src.Register(fs, true)
	fs.StringVar(&f.profilesPath, "profiles", "profiles.generated.toml", "generated profiles `FILE` (profiles.toml beside it is merged in); when the default is absent, only the full catalog is measured")
	fs.StringVar(&f.format, "format", "table", "output `format`: table, markdown or json")
	fs.StringVar(&f.baseline, "baseline", "", "earlier JSON report or profiles `FILE` to compare against (adds before/after/delta)")
	fs.Var(bench.BudgetFlag{Unit: bench.UnitTokens, List: &f.budgets}, "max-tokens", "`NAME=N`: exit 1 when that profile costs more than N o200k_base tokens in the model measure (anthropic) (repeatable)")
	fs.Var(bench.BudgetFlag{Unit: bench.UnitBytes, List: &f.budgets}, "max-bytes", "`NAME=N`: exit 1 when that profile's exchange is more than N bytes on the wire (repeatable)")
	fs.StringVar(&f.tracePath, "trace", "", "session JSON Lines `FILE` whose sessions are priced per profile with prompt caching (turns from \"turns\", else one per call plus one)")
	f.cache = addCacheFlags(fs, "with --trace: ")
	fs.BoolVar(&f.paginate, "paginate", false, "measure a client that pages tools/list (starting with cursor \""+gateway.StartCursor+"\") instead of one request without cursor")
	fs.IntVar(&f.pageSize, "page-size", gateway.DefaultPageSize, "tools per page when paging")
	fs.StringVar(&f.icons, "icons", profiles.IconsKeep, "price profiles as a server started with --icons `keep` or drop serves them (a profile's icons key wins)")
	fs.StringVar(&f.out, "out", "", "write the report to `FILE` (atomically) instead of stdout; replaces only a report bench wrote")
	fs.BoolVar(&f.results, "results", false, "write a results document: the markdown table headed by the command, date, source and tokenizers")
	if help, err := f.src.Parse("bench", fs, args, true); help || err != nil {
		return nil, help, err
	}
	fs.Visit(func(x *flag.Flag) { f.profilesExplicit = f.profilesExplicit || x.Name == "profiles" })
	switch {
	case f.format != "table" && f.format != "markdown" && f.format != "json":
		return nil, false, usagef("bench: --format %q: want table, markdown or json", f.format)
	case f.results && f.format == "json":
		return nil, false, usagef("bench: --results writes markdown; drop --format json")
	case f.pageSize < 1:
		return nil, false, usagef("bench: --page-size %d: must be at least 1", f.pageSize)
	case f.icons != profiles.IconsKeep && f.icons != profiles.IconsDrop:
		return nil, false, usagef("bench: --icons %q: want %s or %s", f.icons, profiles.IconsKeep, profiles.IconsDrop)
	}
	if f.out != "" {
		if err := bench.CheckReplace(f.out); err != nil {
			return nil, false, usageError{Err: err}
		}
	}
	if err := f.cache.Check(); err != nil {
		return nil, false, usagef("bench: --cache-write, --cache-read or --turn-growth: %v", err)
	}
	return f, false, nil
}

// runBench measures what each profile's initialize + tools/list exchange
// costs, served by the gateway's own code.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	stderr = &serialWriter{W: stderr}
	f, help, err := parseBenchFlags(args, stderr)
	if help || err != nil {
		return err
	}
	var sessions []price.Session
	if f.tracePath != "" {
		if sessions, err = bench.ReadTraceSessions(f.tracePath); err != nil {
			return err
		}
	}
	set, measured, err := bench.LoadProfiles(f.profilesPath, f.profilesExplicit, stderr)
	if err != nil {
		return err
	}
	f.profilesPath = measured
	var baseline *bench.Baseline
	if f.baseline != "" {
		if baseline, err = bench.LoadBaseline(f.baseline); err != nil {
			return err
		}
	}
	counter, err := price.NewCounter()
	if err != nil {
		return err
	}
	source, err := toolsource.Open(ctx, f.src, stderr)
	if err != nil {
		return err
	}
	defer source.CloseInto(&err)
	m, err := bench.MeasureSource(ctx, source, set, f.profilesPath, bench.SourceConfig{
		PageSize: f.pageSize, Paginate: f.paginate, Budgets: f.budgets, Counter: counter,
		Sessions: sessions, Cache: *f.cache, DropIcons: f.icons == profiles.IconsDrop}, stderr)
	if unknown := (*bench.UnknownBudgetError)(nil); errors.As(err, &unknown) {
		return usageError{Err: err}
	} else if err != nil {
		return err
	}
	var buf bytes.Buffer
	render := bench.RenderOptions{Budgets: f.budgets, Baseline: baseline}
	switch {
	case f.results:
		var prov *profiles.Provenance
		if set != nil {
			prov = set.File.Provenance
		}
		err = bench.WriteResults(&buf, m.Report, render, bench.ResultsHeader{Command: "profiler bench " + strings.Join(args, " "), Date: time.Now().UTC(),
			Source: source.Desc, Profiles: f.profilesPath, Hash: m.Hash, Derived: m.DerivedOn, Prov: prov})
	case f.format == "json":
		err = m.Report.WriteJSON(&buf)
	case f.format == "markdown":
		err = m.Report.WriteMarkdown(&buf, render)
	default:
		err = m.Report.WriteTable(&buf, render)
	}
	if err != nil {
		return err
	}
	if f.out != "" {
		if err := atomicfile.Write(f.out, buf.Bytes(), 0o644); err != nil {
			return err
		}
	} else if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}
	if err := m.Report.BudgetError(f.budgets); err != nil {
		return exitError{Code: 1, Err: err}
	}
	return nil
}
