package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsource"
)

// budgetFlag collects repeated --max-tokens or --max-bytes NAME=N into one
// list of budgets.
type budgetFlag struct {
	unit bench.Unit
	list *[]bench.Budget
}

func (b budgetFlag) String() string {
	if b.list == nil {
		return ""
	}
	var parts []string
	for _, x := range *b.list {
		if x.Unit == b.unit {
			parts = append(parts, x.Profile+"="+strconv.Itoa(x.Limit))
		}
	}
	return strings.Join(parts, ",")
}

func (b budgetFlag) Set(v string) error {
	what := "o200k_base tokens"
	if b.unit == bench.UnitBytes {
		what = "bytes"
	}
	name, n, ok := strings.Cut(v, "=")
	if !ok || name == "" {
		return fmt.Errorf("%q: want NAME=N, e.g. core=2000", v)
	}
	limit, err := strconv.Atoi(n)
	if err != nil || limit < 0 {
		return fmt.Errorf("%q: N must be a whole number of %s, e.g. %s=2000", v, what, name)
	}
	for _, x := range *b.list {
		if x.Profile == name && x.Unit == b.unit {
			return fmt.Errorf("%q: profile %q already has a budget in %s", v, name, what)
		}
	}
	*b.list = append(*b.list, bench.Budget{Profile: name, Unit: b.unit, Limit: limit})
	return nil
}

// sourceFlags say where tools come from: a recorded catalog, a launch
// document, or a command after --.
type sourceFlags struct {
	catalog, launch, persona string
	command                  []string
}

func (s *sourceFlags) register(fs *flag.FlagSet, withCatalog bool) {
	if withCatalog {
		fs.StringVar(&s.catalog, "catalog", "", "recorded tools/list catalog `FILE` to price, served by the gateway's code")
	}
	fs.StringVar(&s.launch, "launch", "", "launch document `FILE` (.mcp.json) whose servers are started and asked for their tools")
	fs.StringVar(&s.persona, "persona", "", "persona `NAME` merged into the launch document (with --launch)")
}

// parse parses args into fs (where register declared the source flags),
// takes what follows the flags as the upstream command and checks that
// exactly one source was given. help is true when -h was asked for.
func (s *sourceFlags) parse(cmd string, fs *flag.FlagSet, args []string, withCatalog bool) (help bool, err error) {
	if help, err := parseCommandFlags(cmd, fs, args); help || err != nil {
		return help, err
	}
	s.command = fs.Args()
	return false, s.check(cmd, withCatalog)
}

// check validates that exactly one source was given.
func (s *sourceFlags) check(cmd string, withCatalog bool) error {
	n := 0
	for _, set := range []bool{s.catalog != "", s.launch != "", len(s.command) > 0} {
		if set {
			n++
		}
	}
	want := "--launch FILE or -- CMD ARGS"
	if withCatalog {
		want = "--catalog FILE, --launch FILE or -- CMD ARGS"
	}
	switch {
	case n == 0:
		return usagef("%s: no tool source: give %s", cmd, want)
	case n > 1:
		return usagef("%s: more than one tool source: give only one of %s", cmd, want)
	case s.persona != "" && s.launch == "":
		return usagef("%s: --persona needs --launch", cmd)
	}
	return nil
}

// serialWriter serialises writes: started upstreams copy their stderr
// into it from their own goroutines while the command writes too.
type serialWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *serialWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}

// open starts or loads the source. The caller closes it. stderr should be a
// serialWriter when the command also writes to it.
func (s *sourceFlags) open(ctx context.Context, stderr io.Writer) (*toolsource.Source, error) {
	return toolsource.Open(ctx, toolsource.Spec{Catalog: s.catalog, Launch: s.launch, Persona: s.persona, Command: s.command}, stderr)
}

// benchFlags are profiler bench's settings after parsing.
type benchFlags struct {
	src                            sourceFlags
	profilesPath, format, baseline string
	tracePath, out                 string
	profilesExplicit, results      bool
	paginate                       bool
	pageSize                       int
	budgets                        []bench.Budget
	cache                          *price.CacheModel
}

func parseBenchFlags(args []string, stderr io.Writer) (*benchFlags, bool, error) {
	fs := newCommandFlags("bench", "[flags] (--catalog FILE | --launch FILE | -- CMD ARGS)",
		"Prices every profile as the gateway serves it: model (the tools and instructions sent to the\n"+
			"model, the headline) and wire (the initialize + tools/list exchange); with --trace, the\n"+
			"cost per session with prompt caching. Exits 1 over a --max-tokens or --max-bytes budget.", stderr)
	f := &benchFlags{}
	f.src.register(fs, true)
	fs.StringVar(&f.profilesPath, "profiles", "profiles.generated.toml", "generated profiles `FILE` (profiles.toml beside it is merged in); when the default is absent, only the full catalog is measured")
	fs.StringVar(&f.format, "format", "table", "output `format`: table, markdown or json")
	fs.StringVar(&f.baseline, "baseline", "", "earlier JSON report or profiles `FILE` to compare against (adds before/after/delta)")
	fs.Var(budgetFlag{bench.UnitTokens, &f.budgets}, "max-tokens", "`NAME=N`: exit 1 when that profile costs more than N o200k_base tokens in the model measure (anthropic) (repeatable)")
	fs.Var(budgetFlag{bench.UnitBytes, &f.budgets}, "max-bytes", "`NAME=N`: exit 1 when that profile's exchange is more than N bytes on the wire (repeatable)")
	fs.StringVar(&f.tracePath, "trace", "", "session JSON Lines `FILE` whose sessions are priced per profile with prompt caching (turns from \"turns\", else one per call plus one)")
	f.cache = addCacheFlags(fs, "with --trace: ")
	fs.BoolVar(&f.paginate, "paginate", false, "measure a client that pages tools/list (starting with cursor \""+gateway.StartCursor+"\") instead of one request without cursor")
	fs.IntVar(&f.pageSize, "page-size", gateway.DefaultPageSize, "tools per page when paging")
	fs.StringVar(&f.out, "out", "", "write the report to `FILE` (atomically) instead of stdout")
	fs.BoolVar(&f.results, "results", false, "write a results document: the markdown table headed by the command, date, source and tokenizers")
	if help, err := f.src.parse("bench", fs, args, true); help || err != nil {
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
	}
	if err := f.cache.Check(); err != nil {
		return nil, false, usagef("bench: --cache-write, --cache-read or --turn-growth: %v", err)
	}
	return f, false, nil
}

// runBench measures what each profile's initialize + tools/list exchange
// costs, served by the gateway's own code.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	stderr = &serialWriter{w: stderr}
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
	set, err := profiles.Load(f.profilesPath)
	switch {
	case errors.Is(err, os.ErrNotExist) && !f.profilesExplicit:
		fmt.Fprintf(stderr, "bench: no %s here: measuring the full catalog only (--profiles FILE to measure profiles)\n", f.profilesPath)
		set, f.profilesPath = nil, ""
	case err != nil:
		return err
	}
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
	source, err := f.src.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer source.CloseInto(&err)
	m, err := bench.MeasureSource(ctx, source, set, f.profilesPath, bench.SourceConfig{
		PageSize: f.pageSize, Paginate: f.paginate, Budgets: f.budgets, Counter: counter,
		Sessions: sessions, Cache: *f.cache}, stderr)
	if unknown := (*bench.UnknownBudgetError)(nil); errors.As(err, &unknown) {
		return usageError{err: err}
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
	if over, _ := m.Report.CheckBudgets(f.budgets); len(over) > 0 {
		errs := make([]error, len(over))
		for i, o := range over {
			errs[i] = o
		}
		return exitError{1, fmt.Errorf("over budget: %w", errors.Join(errs...))}
	}
	return nil
}
