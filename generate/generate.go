package generate

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/internal/cli"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/toolsearch"
)

// DefaultMaxUnknownShare is the share of calls to tools the catalog lacks
// above which Run refuses: a few calls to retired tools are normal, a
// larger share means the catalog does not match the sessions.
const DefaultMaxUnknownShare = 0.05

// Config is what to generate from and how.
type Config struct {
	// Telemetry names telemetry directories to read; Traces, session JSON
	// Lines files instead. Exactly one of them is given.
	Telemetry, Traces []string
	// SkipBad skips malformed trace lines (reported to Log) instead of
	// failing, and prices a session whose turns go backwards without turns.
	SkipBad bool
	Catalog string // tools/list catalog file (required)
	// Policy is the hand-written profiles.toml; "": profiles.toml beside
	// Out, when there is one.
	Policy string
	// Out is the generated file. Its current content is what the output
	// is compared with (Output.Current) and defines the groups the
	// sessions served a grouped profile switched on.
	Out string

	Specs         []derive.Spec // smallest first; full is always added
	Holdout       float64       // newest share of sessions held out to test
	DefaultTarget float64       // the default is the smallest profile reaching it held out
	MinSessions   int           // refuse below this many unrestricted sessions (0: never)
	MaxTools      int           // cap on every derived profile's tools (0: no cap)
	Cache         price.CacheModel
	// MaxUnknownShare is the share of calls to tools the catalog lacks
	// above which Run refuses (callers give DefaultMaxUnknownShare).
	MaxUnknownShare float64
	Force           bool    // generate even when Run would refuse
	Search          bool    // also write find_tools' ranking priors
	Groups          *Groups // nil: no tool groups
	// Choose makes the default the arm with the least held-out cost per
	// session that serves its target (package evaluate); nil keeps the
	// derived default. It needs Traces: their turns are search's queries.
	Choose *Choose
	// Log receives what Run says on the way, each line prefixed
	// "derive: "; nil discards it.
	Log io.Writer
}

// Groups are the settings of the groups step: tool groups a session can
// switch on, chosen jointly with a base profile (package groups).
type Groups struct {
	Profile     string  // the grouped profile's name (groups.DefaultProfile)
	MaxSwitches float64 // most switches per session on average (groups.DefaultMaxSwitches)
}

// Choose is the settings of the default-arm step.
type Choose struct {
	ServedTarget float64 // the share of held-out needed tool uses the default must serve
	// SearchLimit is find_tools' limit the search arms are measured at; 0
	// is toolsearch.DefaultLimit.
	SearchLimit int
}

// Output is what Run generated.
type Output struct {
	Result  *derive.Result
	File    *profiles.File   // with provenance, search priors and groups as configured
	Encoded []byte           // File encoded, the bytes to write to Out
	Groups  *groups.Result   // nil without Config.Groups
	Choice  *evaluate.Choice // nil without Config.Choose
	// Current is Out's content before Run: nil when it does not exist or
	// does not load; CurrentBytes its bytes, nil when it does not exist.
	Current      *profiles.File
	CurrentBytes []byte
	// UnknownOutcomes counts the calls recorded as unknown_tool.
	UnknownOutcomes int
}

// RefusedError is Run's refusal to generate from sessions that cannot
// support a file; Config.Force overrides it.
type RefusedError struct{ Err error }

func (e *RefusedError) Error() string { return e.Err.Error() }
func (e *RefusedError) Unwrap() error { return e.Err }

// Run generates the profiles file from cfg. When the groups step fails,
// Run returns the family derived without groups with the error, so that
// the caller can still report it.
func Run(ctx context.Context, cfg Config) (*Output, error) {
	log := cfg.Log
	if log == nil {
		log = io.Discard
	}
	cat, err := catalog.Load(cfg.Catalog)
	if err != nil {
		return nil, err
	}
	hash, err := cat.Hash()
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", cfg.Catalog, err)
	}
	policy, err := loadPolicy(cfg.Policy, cfg.Out)
	if err != nil {
		return nil, err
	}
	if err := cfg.Choose.checkPolicy(policy, policyPath(cfg, policy)); err != nil {
		return nil, err
	}
	// Pricing the tools (loading the tokenizer, listing the catalog
	// through a gateway) and reading the sessions need nothing of each
	// other: the tools are priced on the other core meanwhile. What the
	// read says is held until the pricing has succeeded, so that a
	// failing pricing reports alone, as when it ran first.
	type pricedTools struct {
		tools []derive.Tool
		err   error
	}
	priced := make(chan pricedTools, 1)
	go func() {
		tools, err := bench.DeriveTools(ctx, cat, policy)
		priced <- pricedTools{tools, err}
	}()
	var readLog bytes.Buffer
	in, readErr := readSessions(ctx, cfg.Telemetry, cfg.Traces, cfg.SkipBad, &readLog)
	pt := <-priced
	if pt.err != nil {
		return nil, pt.err
	}
	tools := pt.tools
	readLog.WriteTo(log) // as Run's other lines, unchecked
	if readErr != nil {
		return nil, readErr
	}
	dcfg := derive.Config{Tools: tools, Specs: cfg.Specs, Policy: policy, Holdout: cfg.Holdout, DefaultTarget: cfg.DefaultTarget, MinSessions: cfg.MinSessions, ToolCalls: in.toolCalls, MaxTools: cfg.MaxTools,
		Paths: in.paths, Cache: cfg.Cache, PolicyPath: cmp.Or(cfg.Policy, profiles.PolicyPathFor(cfg.Out))}
	res, err := derive.Derive(in.sessions, dcfg)
	if err != nil {
		return nil, fmt.Errorf("derive: %w", err)
	}
	if err := gate(res, cfg, in.unknown, log); err != nil {
		return nil, err
	}
	out := &Output{Result: res, File: res.File(), UnknownOutcomes: in.unknown}
	c := res.Counts
	out.File.Provenance = &profiles.Provenance{
		Generator:   "toolprof profiler derive",
		Sessions:    c.Used(),
		CatalogHash: hash,
		Method:      derive.Method,
		Parameters:  res.Parameters(dcfg),
		Tokenizer:   price.O200kBase,
	}
	if cfg.Search {
		out.File.Search = res.SearchPriors()
	}
	if !res.DataFrom.IsZero() {
		out.File.Provenance.DataFrom = res.DataFrom.UTC().Format(time.RFC3339)
		out.File.Provenance.DataUntil = res.DataUntil.UTC().Format(time.RFC3339)
	}
	if out.Encoded, err = encode(out.File); err != nil {
		return nil, err
	}
	if out.Current, out.CurrentBytes, err = LoadCurrent(cfg.Out); err != nil {
		return nil, err
	}
	if err := cfg.Groups.step(ctx, groupsInput{Sessions: in.sessions, Catalog: cat, Policy: policy, Result: res, Holdout: cfg.Holdout, Prior: out.Current,
		Paths: in.paths, Cache: cfg.Cache}, out); err != nil {
		return out, err
	}
	if err := cfg.Choose.step(ctx, cfg, cat, policy, out); err != nil {
		return out, err
	}
	return out, nil
}

// checkPolicy refuses, as a usage error, to choose the default under a
// policy that sets its own: Set.Default prefers profiles.toml's, so the
// chosen one would be written and reported but never served.
func (c *Choose) checkPolicy(policy *profiles.Policy, path string) error {
	if c == nil || policy == nil || policy.Default == "" {
		return nil
	}
	return cli.UsageError{Err: fmt.Errorf("derive --choose-default: %w", &profiles.Error{File: path, Line: profiles.KeyLine(path, "default"), Key: "default",
		Msg: fmt.Sprintf("profiles.toml's default %q is served over any chosen one: remove the default key to choose it with --choose-default, or derive without --choose-default", policy.Default)})}
}

// step chooses the default arm on derive's held-out sessions, makes it
// out.File's default and re-encodes it. With c nil it does nothing.
func (c *Choose) step(ctx context.Context, cfg Config, cat *catalog.Catalog, policy *profiles.Policy, out *Output) error {
	if c == nil {
		return nil
	}
	if c.SearchLimit < 0 || c.SearchLimit > toolsearch.MaxLimit {
		return fmt.Errorf("derive --choose-default: search limit %d: want 1 to %d (0: %d)", c.SearchLimit, toolsearch.MaxLimit, toolsearch.DefaultLimit)
	}
	var all []evaluate.Session
	for _, path := range cfg.Traces {
		ss, err := evaluate.LoadTrace(path)
		if err != nil {
			return err
		}
		all = append(all, ss...)
	}
	held, err := evaluate.HeldOut(all, out.Result.HoldoutSessions())
	if err != nil {
		return fmt.Errorf("derive --choose-default: %w", err)
	}
	choice, err := evaluate.ChooseDefault(ctx, evaluate.ChooseConfig{Target: c.ServedTarget, Learn: evaluate.Learning(all, out.Result.HoldoutSessions()),
		Config: evaluate.Config{Catalog: cat, Profiles: &profiles.Set{File: out.File, Policy: policy, PolicyPath: policyPath(cfg, policy)}, Sessions: held, Cache: cfg.Cache, Limit: c.SearchLimit}})
	if err != nil {
		return &RefusedError{fmt.Errorf("derive --choose-default: %w; nothing written: lower --served-target or derive without --choose-default", err)}
	}
	if err := choice.Apply(out.File); err != nil {
		return fmt.Errorf("derive --choose-default: %w", err)
	}
	if out.File.Provenance != nil {
		out.File.Provenance.Parameters = append(out.File.Provenance.Parameters, fmt.Sprintf("choose.served_target=%g", c.ServedTarget), fmt.Sprintf("choose.search_limit=%d", choice.Limit), "choose.arm="+choice.Chosen.Name)
		slices.Sort(out.File.Provenance.Parameters)
	}
	if out.Encoded, err = encode(out.File); err != nil {
		return fmt.Errorf("derive --choose-default: %w", err)
	}
	out.Choice = choice
	return nil
}

func encode(f *profiles.File) ([]byte, error) {
	var buf bytes.Buffer
	if err := profiles.Encode(&buf, f); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// gate logs what was read and refuses, unless cfg.Force, sessions that
// cannot support a file.
func gate(res *derive.Result, cfg Config, unknownOutcomes int, log io.Writer) error {
	c := res.Counts
	fmt.Fprintf(log, "derive: %d sessions read; learning from %d (%d full or no profile recorded, %d exploration); %d served less than every tool (a smaller or read-only profile), skipped; %d with no tool call, covered by every profile; %d calling a tool the catalog lacks%s, covered by no profile; %d calls recorded as unknown_tool\n",
		c.Input, c.Used(), c.Full, c.Exploration, c.Restricted, c.ZeroCalls, c.UnknownToolSessions, unknownList(c.UnknownTools), unknownOutcomes)
	for _, w := range res.Warnings {
		fmt.Fprintf(log, "derive: warning: %s\n", w)
	}
	if share := c.UnknownCallShare(); share > cfg.MaxUnknownShare {
		if !cfg.Force {
			return &RefusedError{fmt.Errorf("derive: %s of %d calls went to tools the catalog %s lacks (%s), above --max-unknown-share %g: the catalog is probably of another server version (a renamed tool is a new tool); give the catalog of the server the sessions were recorded with, or pass --force to write anyway",
				pct(share), c.Calls, cfg.Catalog, unknownCallList(c.UnknownCalls, c.Calls), cfg.MaxUnknownShare)}
		}
		fmt.Fprintf(log, "derive: --force given: writing with %s of calls to tools the catalog lacks, above --max-unknown-share %g\n", pct(share), cfg.MaxUnknownShare)
	}
	// Below MinSessions Derive has warned (the warning also goes into the
	// summary, the nightly pull request's body); generating needs Force.
	if c.Used() < cfg.MinSessions {
		if !cfg.Force {
			return &RefusedError{fmt.Errorf("derive: only %d unrestricted sessions (served full or exploration), below --min-sessions %d: coverage measured on so few says little; record more sessions served full (or with --explore), or pass --force to write anyway", c.Used(), cfg.MinSessions)}
		}
		fmt.Fprintf(log, "derive: --force given: writing with %d unrestricted sessions, below --min-sessions %d\n", c.Used(), cfg.MinSessions)
	}
	return nil
}

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

// loadPolicy loads the policy at path, or when path is "" the
// profiles.toml beside out if there is one (nil when there is none).
func loadPolicy(path, out string) (*profiles.Policy, error) {
	if path == "" {
		path = profiles.PolicyPathFor(out)
		if _, err := os.Stat(path); errors.Is(err, fs.ErrNotExist) {
			return nil, nil
		}
	}
	return profiles.LoadPolicy(path)
}

// policyPath names the policy Run loaded: "" when there is none.
func policyPath(cfg Config, policy *profiles.Policy) string {
	if policy == nil {
		return ""
	}
	return cmp.Or(cfg.Policy, profiles.PolicyPathFor(cfg.Out))
}

// LoadCurrent reads the file at path: nil when it does not exist. A file
// that exists but does not load is still returned as bytes (a comparison
// finds it different) but has no profiles to summarise against.
func LoadCurrent(path string) (*profiles.File, []byte, error) {
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

// sessionsRead is what readSessions read.
type sessionsRead struct {
	sessions  []telemetry.Usage
	paths     map[string]price.Session
	toolCalls map[string]int
	unknown   int // calls recorded as unknown_tool
}

// readSessions reads sessions from telemetry directories or trace files,
// in recorded or imported order, with each session's calls in order (and
// turns, from a trace's "turns") by session id, counts the calls per
// tool, and counts calls telemetry recorded as unknown_tool.
func readSessions(ctx context.Context, dirs, traces []string, skipBad bool, log io.Writer) (*sessionsRead, error) {
	intern := map[string]string{}
	name := func(s string) string {
		if v, ok := intern[s]; ok {
			return v
		}
		intern[s] = s
		return s
	}
	r := &sessionsRead{paths: map[string]price.Session{}}
	if len(dirs) > 0 {
		snap, err := telemetry.ScanUsage(ctx, dirs, telemetry.Window{})
		if err != nil {
			return nil, err
		}
		// The reader names tools from each segment's one table, shared
		// by its sessions: interning them again saves next to nothing.
		r.sessions = snap.Usage
		for i := range r.sessions {
			r.unknown += r.sessions[i].Unknown
		}
		// Telemetry records no turns: each call is one, plus one answering.
		called := map[string][]string{}
		for _, c := range snap.Calls {
			called[c.Session] = append(called[c.Session], name(c.Tool))
		}
		for id, tools := range called {
			if r.paths[id], err = price.NewSession(tools, nil, 0); err != nil {
				return nil, fmt.Errorf("session %q: %w", id, err)
			}
		}
		r.toolCalls = snap.ToolCalls
		return r, nil
	}
	r.toolCalls = map[string]int{}
	var rep telemetry.TraceReport
	for _, path := range traces {
		ss, st, err := telemetry.ReadTraceUsage(ctx, path, true)
		if err != nil {
			return nil, err
		}
		rep.Bad = append(rep.Bad, st.Skipped...)
		rep.NoZone += st.NoZone
		r.unknown += st.UnknownOutcomes
		for t, n := range st.ToolCalls {
			r.toolCalls[t] += n
		}
		r.sessions = append(r.sessions, ss...)
		if err := readTracePaths(path, r.paths, skipBad); err != nil {
			return nil, err
		}
	}
	if err := rep.Write(log, "derive", skipBad, "nothing written", "derive from the rest"); err != nil {
		return nil, err
	}
	return r, nil
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

// groupsInput is what the groups step works on.
type groupsInput struct {
	Sessions []telemetry.Usage // the sessions derive read, in the same order (switches included)
	Catalog  *catalog.Catalog
	Policy   *profiles.Policy
	Result   *derive.Result
	Holdout  float64
	Prior    *profiles.File           // the current file: the groups its sessions switched on
	Paths    map[string]price.Session // calls in order with their turns, by session id
	Cache    price.CacheModel
}

// step is the groups step of Run: it applies the groups to out.File,
// re-encodes it into out.Encoded and sets out.Groups. With g nil it does
// nothing.
func (g *Groups) step(ctx context.Context, in groupsInput, out *Output) error {
	if g == nil {
		return nil
	}
	res, err := g.apply(ctx, in, out.File)
	if err != nil {
		return err
	}
	if out.Encoded, err = encode(out.File); err != nil {
		return fmt.Errorf("derive --groups: %w", err)
	}
	out.Groups = res
	return nil
}

// apply chooses the base and groups and writes them into file
// (File.Groups and the grouped profile) with their parameters in the
// provenance.
func (g *Groups) apply(ctx context.Context, in groupsInput, file *profiles.File) (*groups.Result, error) {
	counter, err := price.NewCounter()
	if err != nil {
		return nil, err
	}
	var bases []groups.Base
	for _, p := range in.Result.Profiles {
		if p.Name != profiles.FullProfile {
			bases = append(bases, groups.Base{Name: p.Name, Tools: p.Tools})
		}
	}
	allow := false
	if in.Policy != nil {
		for _, pp := range in.Policy.Profiles {
			if pp.Name == g.Profile {
				allow = pp.AllowDestructive
			}
		}
	}
	// Price tools as derive does (as the gateway lists them), so that the
	// full catalog and the bases cost the same in both reports.
	costs, err := bench.ServedCosts(ctx, in.Catalog, in.Policy, counter)
	if err != nil {
		return nil, err
	}
	res, err := groups.Choose(in.Sessions, groups.Config{Catalog: in.Catalog.Tools, Counter: counter, Costs: costs, Policy: in.Policy, AllowDestructive: allow,
		Holdout: in.Holdout, Bases: bases, MaxSwitches: g.MaxSwitches, Prior: in.Prior, Paths: in.Paths, Cache: in.Cache})
	if err != nil {
		return nil, fmt.Errorf("derive --groups: %w", err)
	}
	if err := res.Apply(file, g.Profile); err != nil {
		return nil, fmt.Errorf("derive --groups: %w", err)
	}
	g.recordParameters(file, res)
	return res, nil
}

// recordParameters adds the groups' parameters to file's provenance.
func (g *Groups) recordParameters(file *profiles.File, res *groups.Result) {
	if file.Provenance == nil {
		return
	}
	file.Provenance.Parameters = append(file.Provenance.Parameters,
		"groups.profile="+g.Profile,
		fmt.Sprintf("groups.max_switches=%g", g.MaxSwitches),
		"groups.base_from="+res.BaseFrom,
		fmt.Sprintf("groups.resolution=%g", res.Resolution),
		fmt.Sprintf("groups.switch_penalty=%d", res.Penalty),
		fmt.Sprintf("groups.count=%d", len(res.Groups)),
	)
	slices.Sort(file.Provenance.Parameters)
}

// WriteGroupsTable writes the groups step's held-out report, as profiler
// derive prints it.
func WriteGroupsTable(w io.Writer, res *groups.Result) error {
	fmt.Fprintln(w, "tool groups (expected tool-definition tokens per session, o200k_base):")
	return res.WriteTable(w)
}
