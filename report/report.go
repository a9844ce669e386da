package report

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// Options says what a report reads. Telemetry and Catalog are required.
type Options struct {
	Telemetry []string         // telemetry directories, one per replica
	Window    telemetry.Window // zero: everything
	Catalog   string           // tools/list catalog file
	// Profiles is a generated profiles file (its profiles.toml beside it is
	// read too); "" reports against "full" alone, every catalog tool.
	Profiles string
	// Out is the output directory, named in the reproducing commands only.
	Out string
}

// Unprefixed names the server row of catalog tools without a "server__"
// prefix: a catalog of one server, dumped from that server directly.
const Unprefixed = "(one server)"

// NotInCatalog is the effect kind of a tool the telemetry called but the
// catalog lacks.
const NotInCatalog = telemetry.NotInCatalog

// Report is everything the page shows, aggregated. Its JSON form is the
// page's embedded data block.
type Report struct {
	Since    *time.Time `json:"since,omitempty"` // as profiler stats: nil without sessions
	Until    *time.Time `json:"until,omitempty"`
	Sessions int        `json:"sessions"`
	Calls    int        `json:"calls"`
	Dropped  uint64     `json:"dropped_events"`
	Segments int        `json:"segments"`
	Skipped  []string   `json:"skipped_segments,omitempty"`

	Catalog      string `json:"catalog"`
	CatalogHash  string `json:"catalog_hash"`
	CatalogTools int    `json:"catalog_tools"`
	// FullTokens is the model measure of every catalog tool, summed.
	FullTokens int    `json:"full_tokens"`
	Profiles   string `json:"profiles,omitempty"`
	Policy     string `json:"policy,omitempty"` // the profiles.toml read, if any
	Default    string `json:"default_profile"`

	Servers  []Server            `json:"servers"`
	Tools    []Tool              `json:"tools"`
	Outcomes []telemetry.StatRow `json:"outcomes"`
	Clients  []telemetry.StatRow `json:"clients"`
	Days     []Day               `json:"days"`
	Points   []ProfilePoint      `json:"profiles_points"`
	Grid     []GridPoint         `json:"solver_grid"`
	Deny     []Deny              `json:"deny"`
	Commands []Command           `json:"commands"`

	problem derive.Problem // the frontier's instance, for the chart
}

// Server is one upstream server's row.
type Server struct {
	Name     string `json:"name"`
	Declared int    `json:"tools_declared"` // catalog tools
	Used     int    `json:"tools_used"`     // catalog tools called in the window
	Calls    int    `json:"calls"`          // calls to its tools, catalog or not
	Sessions int    `json:"sessions"`       // sessions that called one of its tools
	Tokens   int    `json:"tokens"`         // model measure of its catalog tools
	// UnusedTokens is the part of Tokens spent on tools never called;
	// UnusedShare is UnusedTokens / Tokens (0 when Tokens is 0).
	UnusedTokens int     `json:"unused_tokens"`
	UnusedShare  float64 `json:"unused_share"`
}

// Tool is one tool's row: every catalog tool, and every tool called.
type Tool struct {
	Name      string         `json:"name"`
	Server    string         `json:"server"`
	Calls     int            `json:"calls"`
	Sessions  int            `json:"sessions"`
	Outcomes  map[string]int `json:"outcomes,omitempty"` // calls per outcome ("(not recorded)" without one)
	Kind      string         `json:"kind"`               // effect kind, or NotInCatalog
	Tokens    int            `json:"tokens"`             // model measure; 0 for a tool not in the catalog
	Profiles  []string       `json:"profiles"`           // profiles holding it, in file order
	LastUsed  *time.Time     `json:"last_used,omitempty"`
	InCatalog bool           `json:"in_catalog"`
}

// NeverCalled reports whether t is a catalog tool no session called.
func (t Tool) NeverCalled() bool { return t.InCatalog && t.Calls == 0 }

// Day is one UTC day of the window.
type Day struct {
	Day      string `json:"day"`      // YYYY-MM-DD
	Sessions int    `json:"sessions"` // sessions started that day
	Calls    int    `json:"calls"`    // calls started that day
	// Served counts the day's sessions whose every call went to a tool of
	// the default profile (a session without calls is served).
	Served      int     `json:"served_by_default"`
	ServedShare float64 `json:"served_by_default_share"`
}

// ProfilePoint is one profile on the frontier chart.
type ProfilePoint struct {
	Name    string `json:"name"`
	Tools   int    `json:"tools"`
	Tokens  int    `json:"tokens"`
	Covered int    `json:"covered"` // sessions whose every call it holds
	Total   int    `json:"total"`
}

// GridPoint is the solver's own tool set at one target share of the
// window's sessions (derive.SolverGrid): the frontier chart's solver series.
type GridPoint struct {
	Target  float64 `json:"target"`
	Tokens  int     `json:"tokens"`
	Covered int     `json:"covered"`
}

// Deny is the profiles.toml entry that would take a profile's never-called
// tools out of it.
type Deny struct {
	Profile string   `json:"profile"`
	Tools   []string `json:"tools"`
	Tokens  int      `json:"tokens"`
}

// TOML is the entry as profiles.toml lines.
func (d Deny) TOML() string {
	q := make([]string, len(d.Tools))
	for i, t := range d.Tools {
		q[i] = fmt.Sprintf("%q", t)
	}
	return fmt.Sprintf("[[profile]]\nname = %q\ndeny = [%s]\n", d.Profile, strings.Join(q, ", "))
}

// Command is a command line that reproduces some of the page's figures.
type Command struct {
	What string `json:"what"`
	Line string `json:"line"`
}

// ServerOf is the server a gateway tool name belongs to: the part before
// "__", or Unprefixed.
func ServerOf(tool string) string {
	if s, _, ok := strings.Cut(tool, "__"); ok && s != "" {
		return s
	}
	return Unprefixed
}

// solverGrid solves the window's frontier at derive --plot's grid of
// targets, with its search cut short as derive --plot does; none without
// sessions.
func solverGrid(p derive.Problem) ([]GridPoint, error) {
	if p.Free+p.Uncoverable+len(p.Sigs) == 0 {
		return []GridPoint{}, nil
	}
	grid, err := derive.SolverGrid(p, derive.PlotGridTargets, derive.Options{SearchWork: derive.PlotSearchWork})
	if err != nil {
		return nil, err
	}
	out := make([]GridPoint, len(grid))
	for i, g := range grid {
		out[i] = GridPoint{Target: g.Target, Tokens: g.Cost, Covered: g.Covered}
	}
	return out, nil
}

// Build reads what opt names and aggregates it.
func Build(ctx context.Context, opt Options) (*Report, error) {
	if len(opt.Telemetry) == 0 {
		return nil, errors.New("report: no telemetry directory given")
	}
	if opt.Catalog == "" {
		return nil, errors.New("report: no catalog given")
	}
	cat, err := catalog.Load(opt.Catalog)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	hash, err := cat.Hash()
	if err != nil {
		return nil, fmt.Errorf("report: catalog %s: %w", opt.Catalog, err)
	}
	var set *profiles.Set
	var resolved *profiles.Resolved
	var policy *profiles.Policy
	if opt.Profiles != "" {
		if set, err = profiles.Load(opt.Profiles); err != nil {
			return nil, fmt.Errorf("report: %w", err)
		}
		policy = set.Policy
		if resolved, err = set.Resolve(cat.Tools); err != nil {
			return nil, fmt.Errorf("report: profiles %s: %w", opt.Profiles, err)
		}
	} else {
		resolved = profiles.Full(cat.Tools)
	}
	priced, err := bench.DeriveTools(ctx, cat, policy)
	if err != nil {
		return nil, fmt.Errorf("report: price catalog %s: %w", opt.Catalog, err)
	}
	snap, err := telemetry.Scan(ctx, opt.Telemetry, opt.Window)
	if err != nil {
		return nil, fmt.Errorf("report: %w", err)
	}
	r := aggregate(snap, cat, priced, resolved)
	if r.Grid, err = solverGrid(r.problem); err != nil {
		return nil, fmt.Errorf("report: frontier: %w", err)
	}
	r.Catalog, r.CatalogHash = opt.Catalog, hash
	if set != nil {
		r.Profiles, r.Policy = set.Path, set.PolicyPath
	}
	r.Commands = opt.commands()
	return r, nil
}

// aggregate computes the report's figures from a snapshot: one pass over
// the calls, one over the sessions' usage.
func aggregate(snap *telemetry.Snapshot, cat *catalog.Catalog, priced []derive.Tool, res *profiles.Resolved) *Report {
	st := telemetry.Summarize(snap)
	r := &Report{Since: st.Since, Until: st.Until, Sessions: st.Sessions, Calls: st.Calls, Dropped: st.Dropped,
		Segments: st.Segments, Skipped: st.Skipped, Outcomes: st.Outcomes, Clients: st.Clients,
		CatalogTools: len(cat.Tools), Default: res.Default}
	if r.Default == "" {
		r.Default = profiles.FullProfile
	}

	tools := map[string]*Tool{}
	index := map[string]int{} // catalog tool -> index in priced
	for i, t := range priced {
		index[t.Name] = i
		r.FullTokens += t.Tokens
		e := res.Effect(t.Name)
		tools[t.Name] = &Tool{Name: t.Name, Server: ServerOf(t.Name), Kind: string(e.Kind), Tokens: t.Tokens, InCatalog: true}
	}
	for _, row := range st.Tools {
		t := tools[row.Name]
		if t == nil {
			t = &Tool{Name: row.Name, Server: ServerOf(row.Name), Kind: NotInCatalog}
			tools[row.Name] = t
		}
		t.Calls, t.Sessions = row.Calls, row.Sessions
	}
	for _, name := range res.Order {
		p := res.Profiles[name]
		if p == nil {
			continue
		}
		for _, tn := range p.Tools {
			if t := tools[tn]; t != nil {
				t.Profiles = append(t.Profiles, name)
			}
		}
	}

	servers := map[string]*Server{}
	server := func(name string) *Server {
		s := servers[name]
		if s == nil {
			s = &Server{Name: name}
			servers[name] = s
		}
		return s
	}
	serverSessions := map[string]map[string]bool{}
	days := map[string]*Day{}
	day := func(t time.Time) *Day {
		k := t.UTC().Format(time.DateOnly)
		d := days[k]
		if d == nil {
			d = &Day{Day: k}
			days[k] = d
		}
		return d
	}
	for _, c := range snap.Calls {
		t := tools[c.Tool]
		o := string(c.Outcome)
		if o == "" {
			o = "(not recorded)"
		}
		if t.Outcomes == nil {
			t.Outcomes = map[string]int{}
		}
		t.Outcomes[o]++
		if end := c.Start.Add(c.Duration).UTC(); t.LastUsed == nil || end.After(*t.LastUsed) {
			t.LastUsed = &end
		}
		s := server(t.Server)
		s.Calls++
		if serverSessions[t.Server] == nil {
			serverSessions[t.Server] = map[string]bool{}
		}
		serverSessions[t.Server][c.Session] = true
		day(c.Start).Calls++
	}

	def := res.Profiles[r.Default]
	prob := derive.Problem{Costs: make([]int, len(priced))}
	for i, t := range priced {
		prob.Costs[i] = t.Tokens
	}
	sigs := map[string]int{} // tool indices joined -> index in prob.Sigs
	for _, u := range snap.Usage {
		d := day(u.Session.Start)
		d.Sessions++
		served, coverable := true, true
		idx := make([]int, 0, len(u.Tools))
		for _, tn := range u.Tools {
			if def == nil || !def.Has(tn) {
				served = false
			}
			i, ok := index[tn]
			if !ok {
				coverable = false
				continue
			}
			idx = append(idx, i)
		}
		if served {
			d.Served++
		}
		switch {
		case !coverable:
			prob.Uncoverable++
		case len(idx) == 0:
			prob.Free++
		default:
			slices.Sort(idx)
			key := fmt.Sprint(idx)
			if j, ok := sigs[key]; ok {
				prob.Sigs[j].Weight++
			} else {
				sigs[key] = len(prob.Sigs)
				prob.Sigs = append(prob.Sigs, derive.Signature{Tools: idx, Weight: 1})
			}
		}
	}
	r.problem = prob

	for _, t := range tools {
		s := server(t.Server)
		if t.InCatalog {
			s.Declared++
			s.Tokens += t.Tokens
			if t.Calls > 0 {
				s.Used++
			} else {
				s.UnusedTokens += t.Tokens
			}
		}
		r.Tools = append(r.Tools, *t)
	}
	for name, s := range servers {
		s.Sessions = len(serverSessions[name])
		if s.Tokens > 0 {
			s.UnusedShare = float64(s.UnusedTokens) / float64(s.Tokens)
		}
		r.Servers = append(r.Servers, *s)
	}
	// Most called first, then by name, as profiler stats orders its rows.
	sort.Slice(r.Tools, func(i, j int) bool {
		a, b := r.Tools[i], r.Tools[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.Name < b.Name
	})
	sort.Slice(r.Servers, func(i, j int) bool {
		a, b := r.Servers[i], r.Servers[j]
		if a.Calls != b.Calls {
			return a.Calls > b.Calls
		}
		return a.Name < b.Name
	})
	r.Days = dayRange(days)

	for _, name := range res.Order {
		p := res.Profiles[name]
		if p == nil {
			continue
		}
		pt := ProfilePoint{Name: name, Tools: len(p.Tools)}
		var idx []int
		for _, tn := range p.Tools {
			if i, ok := index[tn]; ok {
				idx = append(idx, i)
				pt.Tokens += prob.Costs[i]
			}
		}
		pt.Covered, pt.Total = derive.Evaluate(prob, idx)
		r.Points = append(r.Points, pt)
		if name == profiles.FullProfile {
			continue // full holds every tool: profiles.toml may not deny in it
		}
		d := Deny{Profile: name}
		for _, tn := range p.Tools {
			if t := tools[tn]; t != nil && t.NeverCalled() {
				d.Tools = append(d.Tools, tn)
				d.Tokens += t.Tokens
			}
		}
		if len(d.Tools) > 0 {
			r.Deny = append(r.Deny, d)
		}
	}
	return r
}

// dayRange lists the days from the first to the last, days without
// sessions or calls included, so the trend's x axis is time.
func dayRange(days map[string]*Day) []Day {
	if len(days) == 0 {
		return []Day{}
	}
	keys := make([]string, 0, len(days))
	for k := range days {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	first, _ := time.Parse(time.DateOnly, keys[0])
	last, _ := time.Parse(time.DateOnly, keys[len(keys)-1])
	var out []Day
	for t := first; !t.After(last); t = t.AddDate(0, 0, 1) {
		k := t.Format(time.DateOnly)
		d := Day{Day: k}
		if p := days[k]; p != nil {
			d = *p
		}
		if d.Sessions > 0 {
			d.ServedShare = float64(d.Served) / float64(d.Sessions)
		}
		out = append(out, d)
	}
	return out
}

// commands are the command lines that reproduce the page's figures.
func (o Options) commands() []Command {
	var tel []string
	for _, d := range o.Telemetry {
		tel = append(tel, "--telemetry", shellQuote(d))
	}
	if !o.Window.Since.IsZero() {
		tel = append(tel, "--since", o.Window.Since.UTC().Format(time.RFC3339))
	}
	if !o.Window.Until.IsZero() {
		tel = append(tel, "--until", o.Window.Until.UTC().Format(time.RFC3339))
	}
	t := strings.Join(tel, " ")
	cat := "--catalog " + shellQuote(o.Catalog)
	prof := ""
	if o.Profiles != "" {
		prof = " --profiles " + shellQuote(o.Profiles)
	}
	out := []Command{
		{"this page", "profiler report " + t + " " + cat + prof + " --out " + shellQuote(o.Out)},
		{"window, totals, calls and sessions per tool, outcomes, clients", "profiler stats " + t + " --format json"},
		{"calls per effect kind", "profiler stats " + t + " " + cat + prof + " --format json"},
		{"the sessions, one per line (days, per-session tool sets, last used)", "profiler export " + t},
	}
	if o.Profiles != "" {
		out = append(out, Command{"each profile's tokens (wire and model measure)", "profiler bench --profiles " + shellQuote(o.Profiles) + " " + cat})
	}
	return out
}

// shellQuote quotes s for a POSIX shell when it needs it.
func shellQuote(s string) string {
	if s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:=+,@", r))
	}) < 0 {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// NeverCalled counts the catalog tools no session of the window called.
func (r *Report) NeverCalled() int {
	n := 0
	for _, t := range r.Tools {
		if t.NeverCalled() {
			n++
		}
	}
	return n
}
