package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/upstream"
)

// servedName and servedVersion are the identity cmd/server gives the
// gateway; the bench uses the same so that initialize costs what it costs
// in production.
const (
	servedName    = version.Name
	servedVersion = version.Version
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

// toolSource is an opened source of tools. up is the upstream itself, not
// a wrapper, so that a gateway serving it sees everything it implements
// (prompts, resources); a gateway closes it when closed.
type toolSource struct {
	up    gateway.Upstream
	desc  string // what was measured, for reports
	close func() error
}

// closeInto closes the source, setting *err to the failure when *err is
// still nil: for a deferred close in a function with a named error result.
func (t *toolSource) closeInto(err *error) {
	if cerr := t.close(); cerr != nil && *err == nil {
		*err = fmt.Errorf("close %s: %w", t.desc, cerr)
	}
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
func (s *sourceFlags) open(ctx context.Context, stderr io.Writer) (*toolSource, error) {
	switch {
	case s.catalog != "":
		cat, err := catalog.Load(s.catalog)
		if err != nil {
			return nil, err
		}
		hash, err := cat.Hash()
		if err != nil {
			return nil, fmt.Errorf("catalog %s: %w", s.catalog, err)
		}
		return &toolSource{
			up:    gateway.NewCatalogUpstream(cat),
			desc:  fmt.Sprintf("catalog %s (%d tools, %s)", filepath.ToSlash(s.catalog), len(cat.Tools), hash),
			close: func() error { return nil },
		}, nil
	case s.launch != "":
		doc, err := launch.Load(s.launch, s.persona)
		if err != nil {
			return nil, err
		}
		if len(doc.Servers) == 0 {
			return nil, fmt.Errorf("--launch %s: %w", s.launch, launch.ErrNoServers)
		}
		resolved, err := doc.Resolve(os.LookupEnv)
		if err != nil {
			return nil, fmt.Errorf("resolve %s: %w", s.launch, err)
		}
		set, err := upstream.StartSet(ctx, resolved, upstream.SetOptions{
			RequireAll: true,
			Client:     upstream.Options{Stderr: stderr, ProtocolVersion: upstream.ProtocolVersion},
		})
		if err != nil {
			return nil, fmt.Errorf("launch %s: %w", s.launch, err)
		}
		return &toolSource{up: set, desc: "launch document " + filepath.ToSlash(s.launch), close: set.Close}, nil
	default:
		// One upstream.Client, as the gateway connects it (capabilities,
		// protocol version), not a Set: a plain upstream, served with its
		// tools and instructions, so its exchange prices as a recorded
		// catalog's does. The command was typed on this command line: it
		// gets the whole environment.
		c := upstream.NewClient(launch.ResolvedServer{Name: "upstream", Transport: launch.Stdio, Command: s.command[0], Args: s.command[1:]},
			upstream.Options{Stderr: stderr, ProtocolVersion: upstream.ProtocolVersion, InheritEnv: environNames()})
		if err := c.Start(ctx); err != nil {
			c.Close()
			return nil, fmt.Errorf("start upstream %q: %w", strings.Join(s.command, " "), err)
		}
		return &toolSource{up: commandUpstream{c}, desc: "upstream " + strings.Join(s.command, " "), close: c.Close}, nil
	}
}

// commandUpstream is the one server of -- CMD ARGS, its instructions
// named as a gateway in front of one command names them.
type commandUpstream struct{ *upstream.Client }

func (u commandUpstream) Instructions() []catalog.ServerInstructions {
	text := u.Client.Instructions()
	if text == "" {
		return nil
	}
	return []catalog.ServerInstructions{{Server: gateway.ClientUpstreamName, Instructions: text}}
}

// runBench measures what each profile's initialize + tools/list exchange
// costs, served by the gateway's own code.
func runBench(ctx context.Context, args []string, stdout, stderr io.Writer) (err error) {
	stderr = &serialWriter{w: stderr}
	fs := newCommandFlags("bench", "[flags] (--catalog FILE | --launch FILE | -- CMD ARGS)",
		"Prices every profile as the gateway serves it: model (the tools and instructions sent to the\n"+
			"model, the headline) and wire (the initialize + tools/list exchange); with --trace, the\n"+
			"cost per session with prompt caching. Exits 1 over a --max-tokens or --max-bytes budget.", stderr)
	var src sourceFlags
	src.register(fs, true)
	profilesPath := fs.String("profiles", "profiles.generated.toml", "generated profiles `FILE` (profiles.toml beside it is merged in); when the default is absent, only the full catalog is measured")
	format := fs.String("format", "table", "output `format`: table, markdown or json")
	baselinePath := fs.String("baseline", "", "earlier JSON report or profiles `FILE` to compare against (adds before/after/delta)")
	var budgets []bench.Budget
	fs.Var(budgetFlag{bench.UnitTokens, &budgets}, "max-tokens", "`NAME=N`: exit 1 when that profile costs more than N o200k_base tokens in the model measure (anthropic) (repeatable)")
	fs.Var(budgetFlag{bench.UnitBytes, &budgets}, "max-bytes", "`NAME=N`: exit 1 when that profile's exchange is more than N bytes on the wire (repeatable)")
	tracePath := fs.String("trace", "", "session JSON Lines `FILE` whose sessions are priced per profile with prompt caching (turns from \"turns\", else one per call plus one)")
	cache := addCacheFlags(fs, "with --trace: ")
	paginate := fs.Bool("paginate", false, "measure a client that pages tools/list (starting with cursor \""+gateway.StartCursor+"\") instead of one request without cursor")
	pageSize := fs.Int("page-size", gateway.DefaultPageSize, "tools per page when paging")
	icons := fs.String("icons", profiles.IconsKeep, "price profiles as a server started with --icons `keep` or drop serves them (a profile's icons key wins)")
	out := fs.String("out", "", "write the report to `FILE` (atomically) instead of stdout")
	results := fs.Bool("results", false, "write a results document: the markdown table headed by the command, date, source and tokenizers")
	if help, err := src.parse("bench", fs, args, true); help || err != nil {
		return err
	}
	if *format != "table" && *format != "markdown" && *format != "json" {
		return usagef("bench: --format %q: want table, markdown or json", *format)
	}
	if *results && *format == "json" {
		return usagef("bench: --results writes markdown; drop --format json")
	}
	if *pageSize < 1 {
		return usagef("bench: --page-size %d: must be at least 1", *pageSize)
	}
	if *icons != profiles.IconsKeep && *icons != profiles.IconsDrop {
		return usagef("bench: --icons %q: want %s or %s", *icons, profiles.IconsKeep, profiles.IconsDrop)
	}
	if err := cache.Check(); err != nil {
		return usagef("bench: --cache-write, --cache-read or --turn-growth: %v", err)
	}
	var sessions []price.Session
	if *tracePath != "" {
		if sessions, err = readPriceSessions(*tracePath); err != nil {
			return err
		}
	}

	var set *profiles.Set
	explicit := false
	fs.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "profiles" })
	set, err = profiles.Load(*profilesPath)
	switch {
	case errors.Is(err, os.ErrNotExist) && !explicit:
		fmt.Fprintf(stderr, "bench: no %s here: measuring the full catalog only (--profiles FILE to measure profiles)\n", *profilesPath)
		set, *profilesPath = nil, ""
	case err != nil:
		return err
	}
	var baseline *bench.Baseline
	if *baselinePath != "" {
		if baseline, err = bench.LoadBaseline(*baselinePath); err != nil {
			return err
		}
	}
	counter, err := price.NewCounter()
	if err != nil {
		return err
	}

	source, err := src.open(ctx, stderr)
	if err != nil {
		return err
	}
	defer source.closeInto(&err)
	m, err := measureSource(ctx, source, set, *profilesPath, measureConfig{
		pageSize: *pageSize, paginate: *paginate, budgets: budgets, counter: counter,
		sessions: sessions, cache: *cache, dropIcons: *icons == profiles.IconsDrop}, stderr)
	if err != nil {
		return err
	}
	report := m.report

	var buf bytes.Buffer
	render := bench.RenderOptions{Budgets: budgets, Baseline: baseline}
	switch {
	case *results:
		err = writeResultsDocument(&buf, report, render, resultsHeader{
			command:  "profiler bench " + strings.Join(args, " "),
			date:     time.Now().UTC(),
			source:   source.desc,
			profiles: *profilesPath,
			hash:     m.hash,
			derived:  m.derivedOn,
			prov:     provenanceOf(set),
		})
	case *format == "json":
		err = report.WriteJSON(&buf)
	case *format == "markdown":
		err = report.WriteMarkdown(&buf, render)
	default:
		err = report.WriteTable(&buf, render)
	}
	if err != nil {
		return err
	}
	if *out != "" {
		if err := atomicfile.Write(*out, buf.Bytes(), 0o644); err != nil {
			return err
		}
	} else if _, err := stdout.Write(buf.Bytes()); err != nil {
		return err
	}

	over, _ := report.CheckBudgets(budgets)
	if len(over) > 0 {
		errs := make([]error, len(over))
		for i, o := range over {
			errs[i] = o
		}
		return exitError{1, fmt.Errorf("over budget: %w", errors.Join(errs...))}
	}
	return nil
}

// measureConfig is how to measure.
type measureConfig struct {
	pageSize int
	paginate bool
	budgets  []bench.Budget
	counter  *price.Counter
	sessions []price.Session // priced per profile when set
	cache    price.CacheModel
	// dropIcons is the server's --icons drop (gateway.Options.DropIcons).
	dropIcons bool
}

// measured is what measureSource found.
type measured struct {
	report    *bench.Report
	hash      string // of the tools the source offers
	derivedOn string // catalog hash in the profiles file's provenance
}

// measureSource resolves the profiles against the source's tools, serves
// them with the gateway's code and measures every profile's exchange. set
// may be nil (the full catalog only). Problems that do not stop measuring
// are warned about on stderr.
func measureSource(ctx context.Context, source *toolSource, set *profiles.Set, profilesPath string, cfg measureConfig, stderr io.Writer) (*measured, error) {
	tools, err := source.up.ListTools(ctx)
	if err != nil {
		return nil, fmt.Errorf("list tools of %s: %w", source.desc, err)
	}
	resolved := profiles.Full(tools)
	var missing map[string][]string
	if set != nil {
		if resolved, err = set.Resolve(tools); err != nil {
			return nil, fmt.Errorf("profiles %s: %w", profilesPath, err)
		}
		missing = bench.MissingTools(set, tools)
	}
	for _, b := range cfg.budgets {
		if _, ok := resolved.Profiles[b.Profile]; !ok {
			return nil, usagef("bench: budget for unknown profile %q; valid profiles: %s", b.Profile, strings.Join(resolved.Order, ", "))
		}
	}
	for _, w := range resolved.Warnings {
		fmt.Fprintln(stderr, "bench: warning:", w)
	}
	m := &measured{}
	if m.hash, err = (&catalog.Catalog{Tools: tools}).Hash(); err != nil {
		return nil, fmt.Errorf("hash tools of %s: %w", source.desc, err)
	}
	if set != nil && set.File.Provenance != nil {
		m.derivedOn = set.File.Provenance.CatalogHash
	}
	if m.derivedOn != "" && m.derivedOn != m.hash {
		fmt.Fprintf(stderr, "bench: warning: %s was derived on catalog %s, but %s offers catalog %s\n", profilesPath, m.derivedOn, source.desc, m.hash)
	}
	g, err := gateway.New(ctx, gateway.Options{
		Upstream:      source.up,
		Tools:         tools,
		Profiles:      resolved,
		PageSize:      cfg.pageSize,
		DropIcons:     cfg.dropIcons,
		ServerName:    servedName,
		ServerVersion: servedVersion,
	})
	if err != nil {
		return nil, err
	}
	defer func() {
		// The gateway ends its sessions and closes the upstream; the
		// caller's close then only reports how that went.
		cerr := g.Close()
		source.close = func() error { return cerr }
	}()
	opts := bench.MeasureOptions{Missing: missing, Sessions: cfg.sessions, Cache: cfg.cache}
	if cfg.paginate {
		opts.Paginate, opts.FirstCursor = true, gateway.StartCursor
	}
	if m.report, err = bench.MeasureProfiles(ctx, resolved, g.Server, cfg.counter, opts); err != nil {
		return nil, err
	}
	return m, nil
}

// resultsHeader is what a results document states about how it was made.
type resultsHeader struct {
	command  string
	date     time.Time
	source   string
	profiles string
	hash     string // of the tools measured
	derived  string // catalog hash in the profiles file's provenance
	prov     *profiles.Provenance
}

func provenanceOf(set *profiles.Set) *profiles.Provenance {
	if set == nil {
		return nil
	}
	return set.File.Provenance
}

// writeResultsDocument writes the committed benchmark result: how it was
// produced, then the markdown table.
func writeResultsDocument(w io.Writer, r *bench.Report, opts bench.RenderOptions, h resultsHeader) error {
	profilesDesc := "none (full catalog only)"
	if h.profiles != "" {
		profilesDesc = "`" + filepath.ToSlash(h.profiles) + "`"
	}
	fmt.Fprintf(w, "# Token cost of the initialize + tools/list exchange, per profile\n\n")
	fmt.Fprintf(w, "Generated by `%s` (from the repository root) on %s. Do not edit by hand: rerun the command.\n\n", h.command, h.date.Format("2006-01-02 15:04 UTC"))
	fmt.Fprintf(w, "- Tools: %s\n", h.source)
	fmt.Fprintf(w, "- Profiles: %s\n", profilesDesc)
	if p := h.prov; p != nil {
		fmt.Fprintf(w, "- Derived by %s from %d sessions", p.Generator, p.Sessions)
		if p.DataFrom != "" {
			fmt.Fprintf(w, " (%s to %s)", p.DataFrom, p.DataUntil)
		}
		fmt.Fprintf(w, "; method: %s", p.Method)
		if len(p.Parameters) > 0 {
			fmt.Fprintf(w, "; parameters: %s", strings.Join(p.Parameters, ", "))
		}
		fmt.Fprintln(w)
	}
	switch {
	case h.derived == "":
		fmt.Fprintf(w, "- Catalog hash: %s\n", h.hash)
	case h.derived == h.hash:
		fmt.Fprintf(w, "- Catalog hash: %s, the catalog the profiles were derived on\n", h.hash)
	default:
		fmt.Fprintf(w, "- Catalog hash: %s; **the profiles were derived on another catalog, %s**\n", h.hash, h.derived)
	}
	fmt.Fprintf(w, "- Tokenizers: %s (tiktoken BPE, github.com/tiktoken-go/tokenizer, offline); o200k_base counts OpenAI models exactly and Claude models approximately (no offline Claude tokenizer exists)\n", strings.Join(r.Tokenizers, ", "))
	fmt.Fprintf(w, "- Model measure (the headline): the tokens of the tools and instructions a client sends the model, as the %s and %s APIs carry them (see package price); share of full and saved vs full are on it, %s in o200k_base\n", price.Anthropic, price.OpenAI, price.DefaultFamily)
	fmt.Fprintf(w, "- Wire measure, beside it: the JSON-RPC messages a client speaking MCP %s sends and receives over stdio: initialize and its result, notifications/initialized, tools/list and its result; bytes exclude the newline framing\n", exchange.ProtocolVersion)
	fmt.Fprintf(w, "- Before is the full catalog (profile `full`), after each profile; bytes/4 is shown only as a labelled estimate\n\n")
	return r.WriteMarkdown(w, opts)
}

// environNames are the names of every variable in the environment.
func environNames() []string {
	names := []string{}
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			names = append(names, k)
		}
	}
	return names
}

// readPriceSessions reads a trace for the session cost: every line must be
// well formed, since a skipped session would move the mean.
func readPriceSessions(path string) ([]price.Session, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer fh.Close()
	ts, _, err := telemetry.DecodeTrace(fh, path, false)
	if err != nil {
		return nil, err
	}
	sessions, err := bench.SessionsFromTrace(ts)
	if err != nil {
		return nil, fmt.Errorf("trace %s: %w", path, err)
	}
	if len(sessions) == 0 {
		return nil, fmt.Errorf("trace %s: no sessions to price", path)
	}
	return sessions, nil
}
