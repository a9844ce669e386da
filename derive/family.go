package derive

import (
	"cmp"
	"encoding/binary"
	"fmt"
	"math"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// sessionClass is how the derivation treats a session.
type sessionClass int

const (
	classRestricted  sessionClass = iota // saw fewer than every tool: skipped
	classFull                            // served full, or no profile recorded
	classExploration                     // explored, and served full
)

// classify tells whether a session saw every tool. An exploration session
// counts only when it was served full: under a --max-profile ceiling the
// gateway explores with the ceiling, and under --read-only only read tools
// are served, so such a session saw a smaller profile.
func classify(s telemetry.Usage) sessionClass {
	if !SawEveryTool(s.Session.Profile, s.Session.Exploration, s.Session.ReadOnly) {
		return classRestricted
	}
	if s.Session.Exploration {
		return classExploration
	}
	return classFull
}

// SawEveryTool reports whether a session served profile (empty when not
// recorded), as an exploration session or not, and read-only or not, was
// offered every tool, so that its calls show unrestricted demand. The
// groups derivation applies the same rule.
func SawEveryTool(profile string, exploration, readOnly bool) bool {
	return !readOnly && (profile == profiles.FullProfile || (!exploration && profile == ""))
}

// Tool is one catalog tool with its cost.
type Tool struct {
	Name        string
	Bytes       int
	Tokens      int // o200k_base tokens of its tools/list entry; what the solver minimises
	Destructive bool
	// Mutates marks a tool that changes state (effect mutate or
	// destructive): a read_only profile cannot hold it.
	Mutates bool
}

// Spec asks for one derived profile: the cheapest set covering Target of the
// sessions, or, when Budget > 0, the set covering the most sessions within
// Budget tokens.
type Spec struct {
	Name   string
	Target float64
	Budget int
}

// DefaultSpecs is the default nested family below full.
func DefaultSpecs() []Spec {
	return []Spec{{Name: "core", Target: 0.80}, {Name: "standard", Target: 0.95}}
}

// Documented defaults.
const (
	// DefaultHoldout is the newest share of sessions held out to test the
	// profiles on (see Split), in derive and groups alike.
	DefaultHoldout = 0.2
	// DefaultTarget is the held-out coverage the file's default profile must
	// reach: the same share as the default core target, so that the default
	// serves about four sessions in five without a miss.
	DefaultTarget = 0.80
	// DefaultMinSessions is the smallest unrestricted sample worth deriving
	// from: with 30 sessions a Wilson interval around 80% coverage is still
	// about ±14 points wide; fewer say little.
	DefaultMinSessions = 30
)

// Config is a derivation's input besides the sessions.
type Config struct {
	Tools         []Tool           // the catalog, with costs
	Specs         []Spec           // smallest first; full is always added last
	Policy        *profiles.Policy // may be nil
	Holdout       float64          // newest share of sessions kept for testing
	DefaultTarget float64
	// MinSessions is the unrestricted sample (full and exploration
	// sessions) below which Derive warns that it is small; 0: no warning.
	MinSessions int
	// ToolCalls counts the calls read per tool name, over every session
	// read; nil when not counted. Derive reports from it the calls to
	// tools the catalog lacks (Counts.UnknownCalls).
	ToolCalls map[string]int
	// PolicyPath names the policy in warnings; "" reads as profiles.toml.
	PolicyPath string
	// MaxTools, when > 0, caps every derived profile (not full) at that
	// many tools (CapTools), for clients that take only so many.
	MaxTools int
	// Paths gives sessions' calls in order with their turns, by session
	// id, for the cost per session with prompt caching that target
	// profiles are chosen by; a session without one is taken as its
	// distinct tools called once each in name order, a turn each, plus a
	// turn answering.
	Paths map[string]price.Session
	// Cache prices those sessions; zero multipliers mean
	// price.DefaultCache.
	Cache   price.CacheModel
	Options Options
}

// ToolShare is a tool with its calls.
type ToolShare struct {
	Name  string
	Calls int
}

// Counts says which sessions the derivation used and why it skipped others.
type Counts struct {
	Input               int // sessions read
	Full                int // served full, or with no profile recorded
	Exploration         int // exploration sessions
	Restricted          int // served a smaller profile, or read-only: not used
	ZeroCalls           int // used sessions with no tool call: covered by every profile
	UnknownToolSessions int // used sessions calling a tool the catalog lacks: no profile covers them
	UnknownTools        []string
	// Calls counts the calls of every session read to upstream tools (the
	// gateway's own left out), and UnknownCalls those of them to tools the
	// catalog lacks, most called first; both from Config.ToolCalls.
	Calls        int
	UnknownCalls []ToolShare
	Derive       int // used sessions in the derive (oldest) part
	Holdout      int // used sessions in the held-out (newest) part
}

// Used is the number of sessions learned from.
func (c Counts) Used() int { return c.Full + c.Exploration }

// UnknownCallShare is the share of Calls that went to tools the catalog
// lacks; 0 when no call was counted.
func (c Counts) UnknownCallShare() float64 {
	n := 0
	for _, u := range c.UnknownCalls {
		n += u.Calls
	}
	if c.Calls == 0 {
		return 0
	}
	return float64(n) / float64(c.Calls)
}

// ProfileResult is one derived profile and how it measures.
type ProfileResult struct {
	Name     string
	Tools    []string
	Solution *Solution // nil for full
	Budget   int
	Target   float64
	Bytes    int
	Tokens   int
	Derive   Score
	Holdout  Score
	// DeriveCost and HoldoutCost are the cost per session with prompt
	// caching on each part (Config.Cache).
	DeriveCost, HoldoutCost SessionCost
	Baseline                *Baseline // top-k comparison; nil for full
	Destructive             int       // destructive tools held
	// Removed lists the tools sessions called that the profile's own
	// destructive or read-only rule keeps out, by name.
	Removed []profiles.Removal
}

// Score is coverage on a set of sessions.
type Score struct {
	Covered, Sessions int
}

// Share returns the covered share, and false when there are no sessions.
func (s Score) Share() (float64, bool) {
	if s.Sessions == 0 {
		return 0, false
	}
	return float64(s.Covered) / float64(s.Sessions), true
}

// Baseline is the top-k-by-popularity set for the same goal.
type Baseline struct {
	Tools   []string
	Tokens  int
	Derive  Score
	Holdout Score
	// DeriveCost and HoldoutCost are its cost per session with prompt
	// caching on each part.
	DeriveCost, HoldoutCost SessionCost
}

// Result is a derived family of profiles.
type Result struct {
	Counts    Counts
	Profiles  []ProfileResult // smallest first, full last
	Default   string
	DataFrom  time.Time // first dated session start, zero when none
	DataUntil time.Time
	Warnings  []string
	// Problem is the derive part over all catalog tools, without pins or
	// denials, for drawing the frontier.
	Problem Problem
	Names   []string // tool index -> name for Problem
	// Cache is what the session costs were priced with.
	Cache   price.CacheModel
	options Options
	learned [][]int               // each derive session's tools, for SearchPriors
	holdout []string              // the held-out part's session ids, oldest first
	demand  map[string][][]string // by profile, its sessions before the held-out part, for SearchPriors
}

// HoldoutSessions are the ids of the held-out sessions, oldest first: the
// part no profile or prior was learned from, to test them on.
func (r *Result) HoldoutSessions() []string { return slices.Clone(r.holdout) }

// Derive learns a nested family of profiles from sessions (in recorded or
// imported order). Of a session it reads the tools called, the number of
// calls, the start and what it was served (profile, exploration, read-only).
func Derive(sessions []telemetry.Usage, cfg Config) (*Result, error) {
	if cfg.Holdout < 0 || cfg.Holdout >= 1 || math.IsNaN(cfg.Holdout) {
		return nil, fmt.Errorf("holdout %v: want a share in [0,1)", cfg.Holdout)
	}
	if err := checkSpecs(cfg.Specs); err != nil {
		return nil, err
	}
	names := make([]string, len(cfg.Tools))
	tools := slices.Clone(cfg.Tools)
	slices.SortFunc(tools, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	index := make(map[string]int, len(tools))
	costs := make([]int, len(tools))
	for i, t := range tools {
		if _, dup := index[t.Name]; dup {
			return nil, fmt.Errorf("catalog lists tool %q twice", t.Name)
		}
		index[t.Name] = i
		names[i] = t.Name
		costs[i] = t.Tokens
	}
	cache := cfg.Cache
	if cache.Write == 0 && cache.Read == 0 {
		cache = price.CacheModel{Write: price.DefaultCache().Write, Read: price.DefaultCache().Read, Growth: cache.Growth}
	}
	if err := cache.Check(); err != nil {
		return nil, err
	}
	res := &Result{Names: names, options: cfg.Options, Cache: cache}

	sel, counts, unknown := selectSessions(sessions, index, cfg.Paths)
	res.Counts = counts
	res.Counts.UnknownTools = unknown
	res.Counts.Calls, res.Counts.UnknownCalls = unknownCalls(cfg.ToolCalls, index)
	for _, k := range sel.kept {
		if s := sel.usage(k).Session.Start; !s.IsZero() {
			if res.DataFrom.IsZero() || s.Before(res.DataFrom) {
				res.DataFrom = s
			}
			if s.After(res.DataUntil) {
				res.DataUntil = s
			}
		}
	}
	derivePart, holdPart := Split(sel.kept, cfg.Holdout, nil)
	res.Counts.Derive, res.Counts.Holdout = len(derivePart), len(holdPart)
	res.learned = make([][]int, len(derivePart))
	for i, k := range derivePart {
		res.learned[i] = sel.sets[k.set]
	}
	for _, k := range holdPart {
		res.holdout = append(res.holdout, sel.usage(k).Session.ID)
	}
	firstHeld := ""
	if len(holdPart) > 0 {
		firstHeld = sel.usage(holdPart[0]).Session.ID
	}
	// The signatures, the profiles' demand and the cost models read the
	// parts independently: the first two are found on the other cores
	// meanwhile.
	var train, test *sample
	var wg sync.WaitGroup
	wg.Go(func() { train, test = sel.reduce(derivePart), sel.reduce(holdPart) })
	wg.Go(func() { res.demand = profileDemand(sessions, index, firstHeld) })
	// One cost model per part, shared by every profile priced on it.
	trainCost := newCostModel(costs, sel.paths(derivePart), cache)
	testCost := newCostModel(costs, sel.paths(holdPart), cache)
	wg.Wait()
	res.Problem = Problem{Costs: costs, Sigs: train.sigs, Free: train.free, Uncoverable: train.uncoverable}

	pins, denies, removed, err := constraints(cfg, index)
	if err != nil {
		return nil, err
	}
	called := make([]bool, len(tools))
	for _, part := range []*sample{train, test} {
		for _, sg := range part.sigs {
			for _, t := range sg.Tools {
				called[t] = true
			}
		}
	}
	policyName := cmp.Or(cfg.PolicyPath, profiles.PolicyFile)
	var prev []int
	for k, sp := range cfg.Specs {
		p := Problem{Costs: costs, Sigs: train.sigs, Free: train.free, Uncoverable: train.uncoverable, Denied: denies[k]}
		p.Pinned = union(prev, pins[k])
		for _, t := range p.Pinned {
			if slices.Contains(p.Denied, t) {
				return nil, fmt.Errorf("profile %q: tool %q is pinned (or held by a smaller profile) but denied or destructive here; nested profiles must agree: deny it in the smaller profile too, or allow_destructive in every larger one", sp.Name, names[t])
			}
		}
		var sol, base *Solution
		if sp.Budget > 0 {
			sol, err = SolveBudget(p, sp.Budget, cfg.Options)
			if err == nil {
				base, err = TopKBudget(p, sp.Budget)
			}
		} else {
			sol, err = solveSession(p, trainCost, sp.Target, cfg.Options)
			if err == nil {
				base, err = TopK(p, sp.Target)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("profile %q: %w", sp.Name, err)
		}
		capped := cfg.MaxTools > 0 && len(sol.Tools) > cfg.MaxTools
		if capped {
			n := len(sol.Tools)
			if sol, err = CapTools(p, sol, cfg.MaxTools); err != nil {
				return nil, fmt.Errorf("profile %q: %w", sp.Name, err)
			}
			res.Warnings = append(res.Warnings, fmt.Sprintf("profile %q: capped at %d tools (max tools) from the %d the goal chose; it covers %d of %d derive sessions", sp.Name, cfg.MaxTools, n, sol.Covered, sol.Total))
		}
		if !sol.Feasible && !capped {
			if sp.Budget > 0 {
				res.Warnings = append(res.Warnings, fmt.Sprintf("profile %q: the pinned tools alone cost %d tokens, over the budget of %d", sp.Name, sol.Cost, sp.Budget))
			} else {
				res.Warnings = append(res.Warnings, fmt.Sprintf("profile %q: target %.2f unreachable (denied or destructive tools, and tools the catalog lacks, leave %d of %d derive sessions coverable); kept the best reachable set", sp.Name, sp.Target, sol.Covered, sol.Total))
			}
		}
		pr := res.profile(sp.Name, sol.Tools, tools, train, test)
		pr.DeriveCost = trainCost.sessionStats(sol.Tools)
		pr.HoldoutCost = testCost.sessionStats(sol.Tools)
		pr.Solution, pr.Target, pr.Budget = sol, sp.Target, sp.Budget
		for _, rm := range removed[k] {
			if called[index[rm.Tool]] {
				pr.Removed = append(pr.Removed, rm)
			}
		}
		if len(pr.Removed) > 0 {
			res.Warnings = append(res.Warnings, fmt.Sprintf("profile %q cannot hold %d tool(s) sessions called: %s", sp.Name, len(pr.Removed), profiles.DescribeRemovals(sp.Name, policyName, pr.Removed)))
		}
		pr.Baseline = &Baseline{Tools: pick(names, base.Tools), Tokens: base.Cost, Derive: train.score(base.Tools), Holdout: test.score(base.Tools),
			DeriveCost: trainCost.sessionStats(base.Tools), HoldoutCost: testCost.sessionStats(base.Tools)}
		res.Profiles = append(res.Profiles, pr)
		prev = sol.Tools
	}
	all := make([]int, len(tools))
	for i := range all {
		all[i] = i
	}
	fp := res.profile(profiles.FullProfile, all, tools, train, test)
	fp.DeriveCost = trainCost.sessionStats(all)
	fp.HoldoutCost = testCost.sessionStats(all)
	res.Profiles = append(res.Profiles, fp)

	// An empty profile serves no upstream tool: it is the default only
	// when no session learned from called one.
	allIdle := res.Counts.ZeroCalls == res.Counts.Used()
	res.Default = profiles.FullProfile
	bestCost := math.Inf(1)
	for _, pr := range res.Profiles {
		if len(pr.Tools) == 0 && !allIdle && pr.Name != profiles.FullProfile {
			continue
		}
		// Of the profiles meeting the coverage target, the one costing
		// least per derive session with prompt caching (a refused session
		// pays full from that turn), the smaller on a tie.
		if share, ok := pr.Holdout.Share(); ok && share >= cfg.DefaultTarget && pr.DeriveCost.Mean < bestCost {
			res.Default, bestCost = pr.Name, pr.DeriveCost.Mean
		}
	}
	if n := res.Counts.Used(); n < cfg.MinSessions {
		res.Warnings = append(res.Warnings, fmt.Sprintf("only %d unrestricted sessions (served full or exploration), below %d: coverage measured on so few says little", n, cfg.MinSessions))
	}
	if n := res.Counts.Holdout; n > 0 && n < DefaultMinSessions {
		res.Warnings = append(res.Warnings, fmt.Sprintf("only %d held-out sessions: held-out coverage is uncertain (see holdout_ci), and the default rests on it", n))
	}
	if res.Counts.Holdout == 0 {
		res.Warnings = append(res.Warnings, "no held-out sessions: default is full, since no profile's coverage could be tested")
	}
	return res, nil
}

func checkSpecs(specs []Spec) error {
	seen := map[string]bool{}
	for i, sp := range specs {
		switch {
		case sp.Name == "" || sp.Name == profiles.FullProfile:
			return fmt.Errorf("profile %d: name %q is empty or reserved (full is always derived, holding every tool)", i, sp.Name)
		case seen[sp.Name]:
			return fmt.Errorf("profile %q given twice", sp.Name)
		case sp.Budget < 0:
			return fmt.Errorf("profile %q: budget %d: want a positive token count", sp.Name, sp.Budget)
		case sp.Budget == 0 && !(sp.Target >= 0 && sp.Target <= 1):
			return fmt.Errorf("profile %q: target %v: want a share in [0,1]", sp.Name, sp.Target)
		case i > 0 && sp.Budget == 0 && specs[i-1].Budget == 0 && sp.Target < specs[i-1].Target:
			return fmt.Errorf("profile %q: target %v is below the smaller profile %q's %v; list profiles smallest first", sp.Name, sp.Target, specs[i-1].Name, specs[i-1].Target)
		}
		seen[sp.Name] = true
	}
	return nil
}

// constraints returns, per spec, the pinned and the denied tool indices,
// and the tools the spec's own destructive or read-only rule removes. A
// tool denied, destructive and not allowed, or changing state in a
// read_only profile is denied there; a profile is nested in every larger
// one, so such a tool of any larger non-full profile is denied here too.
func constraints(cfg Config, index map[string]int) (pins, denies [][]int, removed [][]profiles.Removal, err error) {
	n := len(cfg.Specs)
	pins, denies, removed = make([][]int, n), make([][]int, n), make([][]profiles.Removal, n)
	pol := map[string]profiles.PolicyProfile{}
	if cfg.Policy != nil {
		for _, pp := range cfg.Policy.Profiles {
			pol[pp.Name] = pp
		}
	}
	lookup := func(profile, what string, names []string) ([]int, error) {
		var out []int
		for _, name := range names {
			i, ok := index[name]
			if !ok {
				if strings.Contains(name, "*") {
					return nil, fmt.Errorf("profiles.toml: profile %q %s %q: patterns are not accepted here; name tools exactly", profile, what, name)
				}
				continue // not offered: the server warns; nothing to derive
			}
			out = append(out, i)
		}
		return out, nil
	}
	for k := n - 1; k >= 0; k-- {
		name := cfg.Specs[k].Name
		pp := pol[name]
		if pins[k], err = lookup(name, "pin", pp.Pin); err != nil {
			return nil, nil, nil, err
		}
		d, err := lookup(name, "deny", pp.Deny)
		if err != nil {
			return nil, nil, nil, err
		}
		readOnly := pp.ReadOnly != nil && *pp.ReadOnly
		for i, t := range sortedTools(cfg.Tools) {
			switch {
			case t.Destructive && !pp.AllowDestructive:
				removed[k] = append(removed[k], profiles.Removal{Tool: t.Name, Rule: profiles.RuleDestructive})
			case t.Mutates && readOnly:
				removed[k] = append(removed[k], profiles.Removal{Tool: t.Name, Rule: profiles.RuleReadOnly})
			default:
				continue
			}
			d = append(d, i)
		}
		if k+1 < n {
			d = append(d, denies[k+1]...)
		}
		slices.Sort(d)
		denies[k] = slices.Compact(d)
	}
	return pins, denies, removed, nil
}

func sortedTools(ts []Tool) []Tool {
	out := slices.Clone(ts)
	slices.SortFunc(out, func(a, b Tool) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func union(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func pick(names []string, idx []int) []string {
	out := make([]string, len(idx))
	for i, t := range idx {
		out[i] = names[t]
	}
	return out
}

func (res *Result) profile(name string, idx []int, tools []Tool, train, test *sample) ProfileResult {
	pr := ProfileResult{Name: name, Tools: pick(res.Names, idx), Derive: train.score(idx), Holdout: test.score(idx)}
	for _, t := range idx {
		pr.Bytes += tools[t].Bytes
		pr.Tokens += tools[t].Tokens
		if tools[t].Destructive {
			pr.Destructive++
		}
	}
	return pr
}

// selection is the sessions selectSessions kept, in time order, each by
// index into the sessions read and into the distinct tool sets: a
// session's Demand without a copy per session (many sessions call the
// same few tools).
type selection struct {
	sessions []telemetry.Usage
	kept     []selected
	sets     [][]int // distinct tool sets: catalog indices, sorted (read only)
	setPaths []Path  // each set's path without a traced session (pathOf)
	traced   []Path  // the paths of traced sessions
}

// selected is one kept session.
type selected struct {
	session int32 // index in sessions
	set     int32 // index in sets
	traced  int32 // index in traced, -1 without a traced session
	unknown bool  // it called a tool the catalog lacks (Demand.Unknown)
}

func (sel *selection) usage(k selected) *telemetry.Usage { return &sel.sessions[k.session] }

func (sel *selection) path(k selected) Path {
	if k.traced >= 0 {
		return sel.traced[k.traced]
	}
	return sel.setPaths[k.set]
}

// paths lists the paths of part, in order.
func (sel *selection) paths(part []selected) []Path {
	out := make([]Path, len(part))
	for i, k := range part {
		out[i] = sel.path(k)
	}
	return out
}

// selectSessions keeps the sessions that saw every tool, in time order
// (TimeOrder), and maps their tools to catalog indices (CatalogDemand).
// A session calling a tool the catalog lacks is marked unknown and counted:
// no profile, not even full, can serve it, so no profile covers it.
// Calls to the gateway's own tools are no demand and not counted.
func selectSessions(sessions []telemetry.Usage, index map[string]int, paths map[string]price.Session) (*selection, Counts, []string) {
	parts := 1
	if len(sessions) >= selectPartMin {
		parts = min(runtime.GOMAXPROCS(0), selectPartsMax)
	}
	return selectSessionsIn(sessions, index, paths, parts)
}

const (
	selectPartMin  = 1 << 16 // sessions below which one core selects them all
	selectPartsMax = 4       // parts selected at once, at most
)

// selectPart is what selecting one run of sessions gives: its kept
// sessions (set and traced indices local to the part) and, in order of
// first use, its distinct tool sets with their keys.
type selectPart struct {
	kept     []selected
	sets     [][]int
	setPaths []Path
	keys     []string
	bySet    map[string]int32
	traced   []Path
	c        Counts
	unknown  map[string]bool
}

// selectSessionsIn selects sessions as parts runs of them at once, each
// on its own goroutine, then joins them in order: a part's sets are
// numbered after those first used before it, so the selection is the one
// a single pass gives, whatever parts is.
func selectSessionsIn(sessions []telemetry.Usage, index map[string]int, paths map[string]price.Session, parts int) (*selection, Counts, []string) {
	parts = max(1, min(parts, len(sessions)))
	ps := make([]*selectPart, parts)
	var wg sync.WaitGroup
	for p := range ps {
		lo, hi := p*len(sessions)/parts, (p+1)*len(sessions)/parts
		wg.Go(func() { ps[p] = selectRange(sessions, lo, hi, index, paths) })
	}
	wg.Wait()
	c := Counts{Input: len(sessions)}
	first := ps[0]
	sel := &selection{sessions: sessions, kept: first.kept, sets: first.sets, setPaths: first.setPaths, traced: first.traced}
	if parts > 1 {
		sel.kept = slices.Grow(sel.kept, len(sessions)-len(sel.kept))
	}
	unknown := first.unknown
	for pi, p := range ps {
		c.Exploration += p.c.Exploration
		c.Full += p.c.Full
		c.Restricted += p.c.Restricted
		c.ZeroCalls += p.c.ZeroCalls
		c.UnknownToolSessions += p.c.UnknownToolSessions
		if pi == 0 {
			continue
		}
		for n := range p.unknown {
			unknown[n] = true
		}
		renumber := make([]int32, len(p.sets))
		for j, key := range p.keys {
			id, seen := first.bySet[key]
			if !seen {
				id = int32(len(sel.sets))
				sel.sets = append(sel.sets, p.sets[j])
				sel.setPaths = append(sel.setPaths, p.setPaths[j])
				first.bySet[key] = id
			}
			renumber[j] = id
		}
		offset := int32(len(sel.traced))
		sel.traced = append(sel.traced, p.traced...)
		for _, k := range p.kept {
			k.set = renumber[k.set]
			if k.traced >= 0 {
				k.traced += offset
			}
			sel.kept = append(sel.kept, k)
		}
	}
	names := make([]string, 0, len(unknown))
	for n := range unknown {
		names = append(names, n)
	}
	slices.Sort(names)
	kept := sel.kept
	if order := timeOrder(len(kept), func(i int) time.Time { return sel.usage(kept[i]).Session.Start }); order != nil {
		sel.kept = make([]selected, len(kept))
		for i, o := range order {
			sel.kept[i] = kept[o]
		}
	}
	return sel, c, names
}

// selectRange selects sessions[lo:hi] (selectSessions).
func selectRange(sessions []telemetry.Usage, lo, hi int, index map[string]int, paths map[string]price.Session) *selectPart {
	p := &selectPart{kept: make([]selected, 0, hi-lo), bySet: map[string]int32{}, unknown: map[string]bool{}}
	c := &p.c
	var scratch []int
	var key []byte
	for i := lo; i < hi; i++ {
		s := &sessions[i]
		switch classify(*s) {
		case classExploration:
			c.Exploration++
		case classFull:
			c.Full++
		default:
			c.Restricted++
			continue
		}
		if s.Calls == 0 && len(s.Tools) == 0 {
			c.ZeroCalls++
		}
		idx, miss := CatalogDemand(scratch[:0], s.Tools, index, p.unknown)
		scratch = idx
		if miss {
			c.UnknownToolSessions++
		}
		slices.Sort(idx)
		idx = slices.Compact(idx)
		key = key[:0]
		for _, t := range idx {
			key = binary.AppendUvarint(key, uint64(t))
		}
		set, seen := p.bySet[string(key)]
		if !seen {
			set = int32(len(p.sets))
			tools := slices.Clip(slices.Clone(idx))
			p.sets = append(p.sets, tools)
			p.setPaths = append(p.setPaths, pathOf(price.Session{}, false, tools, index))
			k := string(key)
			p.keys = append(p.keys, k)
			p.bySet[k] = set
		}
		k := selected{session: int32(i), set: set, traced: -1, unknown: miss}
		if path, ok := paths[s.Session.ID]; ok {
			k.traced = int32(len(p.traced))
			p.traced = append(p.traced, pathOf(path, true, p.sets[set], index))
		}
		p.kept = append(p.kept, k)
	}
	return p
}

// unknownCalls returns the calls to upstream tools in toolCalls and those
// to tools index lacks, most called first, then by name.
func unknownCalls(toolCalls map[string]int, index map[string]int) (int, []ToolShare) {
	total := 0
	var out []ToolShare
	for name, n := range toolCalls {
		_, known := index[name]
		switch {
		case known:
			total += n
		case !GatewayTool(name):
			total += n
			out = append(out, ToolShare{Name: name, Calls: n})
		}
	}
	slices.SortFunc(out, func(a, b ToolShare) int {
		return cmp.Or(cmp.Compare(b.Calls, a.Calls), strings.Compare(a.Name, b.Name))
	})
	return total, out
}

// sample is a set of sessions reduced to weighted signatures.
type sample struct {
	sigs        []Signature
	free        int
	uncoverable int // sessions calling a tool the catalog lacks
	total       int
}

// reduce groups part's sessions by their distinct tool set. Signatures
// come out sorted by tool list so that everything downstream is
// deterministic.
func (sel *selection) reduce(part []selected) *sample {
	s := &sample{total: len(part)}
	sig := make([]int32, len(sel.sets)) // set -> its signature plus one
	for _, k := range part {
		tools := sel.sets[k.set]
		switch {
		case k.unknown:
			s.uncoverable++
		case len(tools) == 0:
			s.free++
		case sig[k.set] > 0:
			s.sigs[sig[k.set]-1].Weight++
		default:
			s.sigs = append(s.sigs, Signature{Tools: tools, Weight: 1})
			sig[k.set] = int32(len(s.sigs))
		}
	}
	slices.SortFunc(s.sigs, func(a, b Signature) int { return slices.Compare(a.Tools, b.Tools) })
	return s
}

func (s *sample) score(tools []int) Score {
	cov, total := Evaluate(Problem{Sigs: s.sigs, Free: s.free, Uncoverable: s.uncoverable}, tools)
	return Score{Covered: cov, Sessions: total}
}

// Wilson returns the 95% Wilson score interval for k successes in n trials.
func Wilson(k, n int) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	const z = 1.959963984540054
	p := float64(k) / float64(n)
	nf := float64(n)
	den := 1 + z*z/nf
	center := (p + z*z/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z*z/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}

// round4 keeps four decimals: enough for a share, short in the file.
func round4(v float64) float64 { return math.Round(v*1e4) / 1e4 }

// File renders the result in the generated file's schema (without
// provenance, which the caller adds).
func (res *Result) File() *profiles.File {
	f := &profiles.File{Version: profiles.Version, Default: res.Default}
	for _, pr := range res.Profiles {
		m := &profiles.Measured{Sessions: pr.Derive.Sessions, HoldoutSessions: pr.Holdout.Sessions, Tools: len(pr.Tools), Bytes: pr.Bytes, TokensO200k: pr.Tokens}
		if share, ok := pr.Derive.Share(); ok {
			v := round4(share)
			m.Coverage = &v
		} else {
			m.NotEvaluable = append(m.NotEvaluable, "coverage")
		}
		if share, ok := pr.Holdout.Share(); ok {
			v := round4(share)
			m.HoldoutCoverage = &v
			lo, hi := Wilson(pr.Holdout.Covered, pr.Holdout.Sessions)
			m.HoldoutCI = []float64{round4(lo), round4(hi)}
		} else {
			m.NotEvaluable = append(m.NotEvaluable, "holdout_coverage", "holdout_ci")
		}
		slices.Sort(m.NotEvaluable)
		f.Profiles = append(f.Profiles, profiles.Profile{Name: pr.Name, Tools: slices.Clone(pr.Tools), Measured: m})
	}
	return f
}

// Parameters lists the derivation settings and session counts for the
// provenance, as sorted "key=value" strings.
func (res *Result) Parameters(cfg Config) []string {
	var ps []string
	for _, sp := range cfg.Specs {
		if sp.Budget > 0 {
			ps = append(ps, fmt.Sprintf("profile.%s.budget_tokens=%d", sp.Name, sp.Budget))
		} else {
			ps = append(ps, fmt.Sprintf("profile.%s.target=%s", sp.Name, fmtShare(sp.Target)))
		}
	}
	if cfg.MaxTools > 0 {
		ps = append(ps, fmt.Sprintf("max_tools=%d", cfg.MaxTools))
	}
	c := res.Counts
	ps = append(ps,
		"holdout="+fmtShare(cfg.Holdout),
		"default_target="+fmtShare(cfg.DefaultTarget),
		fmt.Sprintf("sessions.derive=%d", c.Derive),
		fmt.Sprintf("sessions.holdout=%d", c.Holdout),
		fmt.Sprintf("sessions.used_full=%d", c.Full),
		fmt.Sprintf("sessions.used_exploration=%d", c.Exploration),
		fmt.Sprintf("sessions.skipped_restricted=%d", c.Restricted),
		fmt.Sprintf("sessions.zero_calls=%d", c.ZeroCalls),
		fmt.Sprintf("sessions.unknown_tool=%d", c.UnknownToolSessions),
	)
	if len(c.UnknownCalls) > 0 {
		ps = append(ps, "calls.unknown_tool_share="+strconv.FormatFloat(round4(c.UnknownCallShare()), 'g', -1, 64))
	}
	slices.SortFunc(ps, cmp.Compare)
	return ps
}

func fmtShare(v float64) string { return fmt.Sprintf("%g", v) }

// Method describes the solver for the provenance.
const Method = "signature-greedy + parametric-min-cut Lagrangian + destroy-and-repair local search; exact enumeration when small"
