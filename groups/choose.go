package groups

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// Base is a candidate base profile: a name (where it came from) and its
// tools.
type Base struct {
	Name  string
	Tools []string
}

// DefaultMaxSwitches bounds the mean switches per derive session: each
// switch is a round trip and a chance for the model to pick the wrong group,
// which tokens do not measure.
const DefaultMaxSwitches = 1.5

// switchPenalties are the tokens per switch tried as the Lagrange
// multiplier of the switch budget: 0 minimises tokens alone; larger values
// trade tokens for fewer, larger groups and a larger base. Steps of about
// √2 from 25 to 6400 trace the token/switch frontier finely enough.
var switchPenalties = [...]int{0, 25, 35, 50, 71, 100, 141, 200, 283, 400, 566, 800, 1131, 1600, 2263, 3200, 4525, 6400}

// DefaultResolutions is the Louvain resolution sweep: 0 merges each
// upstream's connected co-usage into one group; higher values split finer.
func DefaultResolutions() []float64 { return []float64{0, 0.25, 0.5, 1, 1.5, 2, 3, 5} }

// Config is a derivation of groups' input besides the sessions.
type Config struct {
	Catalog []*mcp.Tool
	Counter *price.Counter
	// Costs, when set, prices each tool by name (for example as the gateway
	// lists it, with the _meta it adds); nil prices the catalog entries as
	// given. Every catalog tool must have a cost.
	Costs map[string]exchange.ToolCost
	// Policy supplies destructive rules; may be nil.
	Policy *profiles.Policy
	// AllowDestructive lets the grouped profile hold and switch on
	// destructive tools (profiles.toml allow_destructive for it).
	AllowDestructive bool
	// Holdout is the newest share of sessions kept for testing, in [0,1),
	// split as derive.Split does; zero holds none out (derive.DefaultHoldout
	// is what the profiler passes).
	Holdout float64
	// Bases are candidate bases besides the empty one (for example the
	// derived core and standard profiles). Names of tools the catalog
	// lacks are ignored.
	Bases []Base
	// Resolutions is the Louvain sweep; nil means DefaultResolutions.
	Resolutions []float64
	// MaxSwitches bounds the mean switches per session: a layout is
	// chosen only when the upper end of the 95% confidence interval of its
	// derive mean is within it, so that the bound holds for new sessions
	// too. 0 means DefaultMaxSwitches.
	MaxSwitches float64
	// DescribeTools is how many tool names each group description lists;
	// 0 means DefaultDescribeTools.
	DescribeTools int
	// Prior is the generated file the sessions were served from, if any:
	// it defines the groups telemetry recorded as switched on.
	Prior *profiles.File
	// Paths gives sessions' calls in order with their turns, by session
	// id (as derive.Config.Paths), for the cost per session with prompt
	// caching the layout is chosen by (cached.go); a session without one
	// is taken as its distinct tools called once each in name order, a
	// turn each, plus a turn answering.
	Paths map[string]price.Session
	// Cache prices those sessions; zero multipliers mean
	// price.DefaultCache.
	Cache price.CacheModel
}

// Candidate is one (base, resolution) start of the search and what its
// improved layout costs on the derive part.
type Candidate struct {
	Base       string  `json:"base"`
	Resolution float64 `json:"resolution"`
	Penalty    int     `json:"penalty"` // tokens per switch during the search
	Groups     int     `json:"groups"`
	BaseTools  int     `json:"base_tools"`
	// Derive part, provisional names.
	MeanTokens   float64 `json:"mean_tokens"`
	MeanSwitches float64 `json:"mean_switches"`
	// SwitchesBound is the upper end of the mean's 95% confidence
	// interval; Feasible when it is within the switch budget.
	SwitchesBound float64 `json:"switches_bound"`
	Feasible      bool    `json:"feasible"`
	// SessionCost is the mean cost per derive session with prompt
	// caching, what the choice minimises.
	SessionCost float64 `json:"session_cost"`
}

// Static is a candidate base served alone as a static profile.
type Static struct {
	Name            string  `json:"name"`
	Tools           int     `json:"tools"`
	Tokens          int     `json:"tokens"`
	ShareOfFull     float64 `json:"share_of_full"`
	HoldoutCoverage float64 `json:"holdout_coverage"`
}

// GroupFigure is one offered group with its costs.
type GroupFigure struct {
	Name           string `json:"name"`
	Tools          int    `json:"tools"`
	Tokens         int    `json:"tokens"`          // its tools' entries
	ExchangeTokens int    `json:"exchange_tokens"` // enable_tools request + result
}

// Result is the chosen base and groups and how they measure.
type Result struct {
	Counts     Counts  `json:"counts"`
	BaseFrom   string  `json:"base_from"` // the candidate base the search started from
	Resolution float64 `json:"resolution"`
	Penalty    int     `json:"penalty"`
	// Base is the chosen base's tools; with no groups (BaseFrom "full")
	// sessions are best served the full profile.
	Base         []string         `json:"base"`
	BaseTokens   int              `json:"base_tokens"`
	BaseBytes    int              `json:"base_bytes"`
	Groups       []profiles.Group `json:"groups"`
	GroupFigures []GroupFigure    `json:"group_figures"`
	EnableTokens int              `json:"enable_tokens"`
	Derive       Figures          `json:"derive"`
	Holdout      Figures          `json:"holdout"`
	Static       []Static         `json:"static"`
	Candidates   []Candidate      `json:"candidates"`
	// SearchCost is the chosen layout's mean cost per derive session with
	// prompt caching as the search priced it (each group named as if
	// alone), after the local search on that cost; Derive.SessionCost is
	// the same with the final names.
	SearchCost float64 `json:"search_session_cost"`
	// Enable is the enable_tools definition priced above (nil without groups).
	Enable *mcp.Tool `json:"-"`
}

// Choose derives tool groups from co-usage and chooses, jointly with a base
// profile, the layout minimising the expected cost per derive session with
// prompt caching (cached.go) within the switch budget; it measures the
// choice on the held-out sessions.
func Choose(sessions []telemetry.Usage, cfg Config) (*Result, error) {
	if cfg.Counter == nil {
		return nil, errors.New("groups: a token counter is required")
	}
	if cfg.Holdout < 0 || cfg.Holdout >= 1 || math.IsNaN(cfg.Holdout) {
		return nil, fmt.Errorf("groups: holdout %v: want a share in [0,1)", cfg.Holdout)
	}
	if len(cfg.Catalog) == 0 {
		return nil, errors.New("groups: the catalog has no tools")
	}
	resolutions := cfg.Resolutions
	if resolutions == nil {
		resolutions = DefaultResolutions()
	}
	for _, r := range resolutions {
		if !(r >= 0) || math.IsInf(r, 0) {
			return nil, fmt.Errorf("groups: resolution %v: want a finite number >= 0", r)
		}
	}
	maxSwitches := cfg.MaxSwitches
	if maxSwitches == 0 {
		maxSwitches = DefaultMaxSwitches
	}
	if !(maxSwitches > 0) || math.IsInf(maxSwitches, 0) {
		return nil, fmt.Errorf("groups: max switches %v: want a finite mean > 0 (serve full to avoid switches)", cfg.MaxSwitches)
	}
	cache := cfg.Cache
	if cache.Write == 0 && cache.Read == 0 {
		cache = price.CacheModel{Write: price.DefaultCache().Write, Read: price.DefaultCache().Read, Growth: cache.Growth}
	}
	if err := cache.Check(); err != nil {
		return nil, fmt.Errorf("groups: %w", err)
	}
	describe := cfg.DescribeTools
	if describe == 0 {
		describe = DefaultDescribeTools
	}
	if describe < 0 {
		return nil, fmt.Errorf("groups: describe %d tools: want a count >= 1", describe)
	}

	tools := slices.Clone(cfg.Catalog)
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	costs := make([]exchange.ToolCost, len(tools))
	if cfg.Costs == nil {
		var err error
		if costs, err = exchange.ModelToolCosts(tools, cfg.Counter); err != nil {
			return nil, fmt.Errorf("groups: %w", err)
		}
	} else {
		for i, t := range tools {
			c, ok := cfg.Costs[t.Name]
			if !ok {
				return nil, fmt.Errorf("groups: no cost given for catalog tool %q", t.Name)
			}
			costs[i] = c
		}
	}
	n := len(tools)
	s := &searcher{n: n, names: make([]string, n), upstream: make([]string, n), reachable: make([]bool, n), price: make([]int, n), bytes: make([]int, n),
		counter: cfg.Counter, lines: map[string]int{}, exchs: map[string]int{}, cache: cache}
	index := make(map[string]int, n)
	descriptions := make([]string, n) // for the groups' names
	for i, t := range tools {
		if _, dup := index[t.Name]; dup {
			return nil, fmt.Errorf("groups: catalog lists tool %q twice", t.Name)
		}
		index[t.Name] = i
		s.names[i], descriptions[i] = t.Name, t.Description
		s.upstream[i] = Upstream(t.Name)
		s.price[i] = costs[i].Model[price.DefaultFamily]
		s.bytes[i] = costs[i].Bytes
		s.full += s.price[i]
		s.reachable[i] = cfg.AllowDestructive || profiles.EffectOf(t, cfg.Policy).Kind != profiles.KindDestructive
	}
	header, err := exchange.ModelToolCosts([]*mcp.Tool{profiles.EnableToolsTool(nil)}, cfg.Counter)
	if err != nil {
		return nil, fmt.Errorf("groups: price enable_tools: %w", err)
	}
	s.header = header[0].Model[price.DefaultFamily]

	used, grouped, counts := selectSessions(sessions, index, cfg.Prior, cfg.Paths)
	train, test := derive.Split(used, cfg.Holdout, grouped)
	counts.Derive, counts.Holdout = len(train), len(test)
	s.sigs = reduce(train)
	testSigs := reduce(test)
	s.paths = reducePaths(train)
	testPaths := reducePaths(test)

	uses := make([]int, n)
	s.fallback = make([]bool, len(s.sigs))
	s.toolSigs = make([][]int, n)
	for i, sig := range s.sigs {
		for _, t := range sig.tools {
			uses[t] += sig.weight
			if !s.reachable[t] {
				s.fallback[i] = true
			}
		}
		if s.fallback[i] {
			s.wFall += sig.weight
			continue
		}
		s.wLive += sig.weight
		for _, t := range sig.tools {
			s.toolSigs[t] = append(s.toolSigs[t], i)
		}
	}
	s.nm = newNamer(s.names, s.upstream, descriptions, uses, describe)

	bases := []Base{{Name: "empty"}}
	for _, b := range cfg.Bases {
		if b.Name == "" || b.Name == "empty" || b.Name == profiles.FullProfile {
			return nil, fmt.Errorf("groups: candidate base name %q is empty or reserved (empty and full are always tried)", b.Name)
		}
		bases = append(bases, b)
	}
	res := &Result{Counts: counts}
	var best *state
	bestCost := fullCost(s.paths, s.full, s.cache) // full: no groups, every session served full
	res.BaseFrom = profiles.FullProfile
	w := s.wLive + s.wFall
	feasible := func(st *state) bool {
		sw, swSq := s.switches(st)
		return w == 0 || upperBound(sw, swSq, w) <= maxSwitches
	}
	for _, b := range bases {
		var baseIdx []int
		for _, name := range b.Tools {
			if i, ok := index[name]; ok && s.reachable[i] {
				baseIdx = append(baseIdx, i)
			}
		}
		seen := map[string]bool{}
		for _, r := range resolutions {
			start, err := s.initial(baseIdx, uses, r)
			if err != nil {
				return nil, err
			}
			if key := s.stateKey(start); seen[key] {
				continue // a coarser or finer resolution gave the same start
			} else {
				seen[key] = true
			}
			for _, penalty := range switchPenalties {
				s.penalty = penalty
				st, err := s.improve(start)
				if err != nil {
					return nil, err
				}
				sw, swSq := s.switches(st)
				total := s.total(st) - penalty*sw
				c := Candidate{Base: b.Name, Resolution: r, Penalty: penalty, Groups: len(st.groups)}
				for _, in := range st.inBase {
					if in {
						c.BaseTools++
					}
				}
				cost := s.cached(st)
				if w > 0 {
					c.MeanTokens = float64(total) / float64(w)
					c.MeanSwitches = float64(sw) / float64(w)
					c.SwitchesBound = upperBound(sw, swSq, w)
					c.SessionCost = cost / float64(w)
				}
				c.Feasible = c.SwitchesBound <= maxSwitches
				res.Candidates = append(res.Candidates, c)
				// Every penalty is tried: under caching a switch rewrites
				// the whole prefix, so fewer switches may cost less.
				if c.Feasible && cost < bestCost {
					best, bestCost, res.BaseFrom, res.Resolution, res.Penalty = st, cost, b.Name, r, penalty
				}
			}
		}
	}
	s.penalty = 0
	if best != nil {
		var err error
		if best, bestCost, err = s.improveCached(best, feasible); err != nil {
			return nil, err
		}
	}
	if w > 0 {
		res.SearchCost = bestCost / float64(w)
	}
	if err := s.finish(res, best, testSigs, testPaths); err != nil {
		return nil, err
	}
	for _, b := range cfg.Bases {
		res.Static = append(res.Static, s.static(b, index, testSigs))
	}
	return res, nil
}

// initial is a search start: base, the used reachable tools outside it
// partitioned by co-usage at resolution r, and the unused reachable tools
// outside it in one catch-all group per upstream (so that base and groups
// reach every tool the profile may hold).
func (s *searcher) initial(base []int, uses []int, r float64) (*state, error) {
	st := &state{inBase: make([]bool, s.n)}
	for _, t := range base {
		st.inBase[t] = true
	}
	var usedOut []int
	unused := map[string][]int{}
	for t := range s.n {
		if st.inBase[t] || !s.reachable[t] {
			continue
		}
		if uses[t] > 0 {
			usedOut = append(usedOut, t)
		} else {
			unused[s.upstream[t]] = append(unused[s.upstream[t]], t)
		}
	}
	live := make([]weighted, 0, len(s.sigs))
	for i, sig := range s.sigs {
		if !s.fallback[i] {
			live = append(live, sig)
		}
	}
	for _, members := range partition(usedOut, s.upstream, live, r) {
		g, err := s.newGroup(members, false)
		if err != nil {
			return nil, err
		}
		st.groups = append(st.groups, g)
	}
	for _, up := range slices.Sorted(maps.Keys(unused)) {
		g, err := s.newGroup(unused[up], true)
		if err != nil {
			return nil, err
		}
		st.groups = append(st.groups, g)
	}
	return st, nil
}

// finish names the chosen groups, prices the enable_tools definition the
// gateway will serve and each switch exactly, and measures the layout on
// both parts.
func (s *searcher) finish(res *Result, st *state, testSigs []weighted, testPaths []cachedPath) error {
	p := &pricing{tool: s.price, full: s.full}
	var l *layout
	if st == nil { // full wins: every tool in the base, nothing to switch
		all := make([]int, s.n)
		for i := range all {
			all[i] = i
		}
		l = newLayout(s.n, all, nil)
	} else {
		slices.SortFunc(st.groups, func(a, b *group) int { return slices.Compare(a.tools, b.tools) })
		drafts := make([]groupDraft, len(st.groups))
		for i, g := range st.groups {
			drafts[i] = groupDraft{tools: g.tools, catchAll: g.catchAll}
		}
		names := s.nm.name(drafts)
		order := make([]int, len(drafts))
		for i := range order {
			order[i] = i
		}
		slices.SortFunc(order, func(a, b int) int { return strings.Compare(names[a], names[b]) })
		var idx [][]int
		for _, i := range order {
			g := profiles.Group{Name: names[i], Description: s.nm.description(drafts[i])}
			for _, t := range drafts[i].tools {
				g.Tools = append(g.Tools, s.names[t])
			}
			exch, err := s.exchangeTokens(g.Name, drafts[i].tools)
			if err != nil {
				return err
			}
			res.Groups = append(res.Groups, g)
			res.GroupFigures = append(res.GroupFigures, GroupFigure{Name: g.Name, Tools: len(g.Tools), Tokens: st.groups[i].tok, ExchangeTokens: exch})
			p.exchange = append(p.exchange, exch)
			idx = append(idx, drafts[i].tools)
		}
		var base []int
		for t, in := range st.inBase {
			if in {
				base = append(base, t)
			}
		}
		l = newLayout(s.n, base, idx)
		if len(res.Groups) > 0 {
			res.Enable = profiles.EnableToolsTool(res.Groups)
			c, err := exchange.ModelToolCosts([]*mcp.Tool{res.Enable}, s.counter)
			if err != nil {
				return fmt.Errorf("groups: price enable_tools: %w", err)
			}
			p.enable = c[0].Model[price.DefaultFamily]
			res.EnableTokens = p.enable
		}
	}
	for _, t := range l.base() {
		res.Base = append(res.Base, s.names[t])
		res.BaseTokens += s.price[t]
		res.BaseBytes += s.bytes[t]
	}
	res.Derive = l.measure(s.sigs, p)
	res.Holdout = l.measure(testSigs, p)
	cl := &cachedLayout{inBase: l.inBase, groupOf: l.groupOf, exch: p.exchange, prefix: res.BaseTokens + p.enable, fall: s.full + p.enable}
	for _, g := range l.groups {
		n := 0
		for _, t := range g {
			n += s.price[t]
		}
		cl.tok = append(cl.tok, n)
	}
	res.Derive.addSessionCost(cl, s.paths, s.full, s.cache)
	res.Holdout.addSessionCost(cl, testPaths, s.full, s.cache)
	return nil
}

// static measures a candidate base served alone.
func (s *searcher) static(b Base, index map[string]int, test []weighted) Static {
	st := Static{Name: b.Name}
	in := make([]bool, s.n)
	for _, name := range b.Tools {
		if i, ok := index[name]; ok && !in[i] {
			in[i] = true
			st.Tools++
			st.Tokens += s.price[i]
		}
	}
	if s.full > 0 {
		st.ShareOfFull = float64(st.Tokens) / float64(s.full)
	}
	covered, total := 0, 0
	for _, sig := range test {
		total += sig.weight
		if !slices.ContainsFunc(sig.tools, func(t int) bool { return !in[t] }) {
			covered += sig.weight
		}
	}
	if total > 0 {
		st.HoldoutCoverage = float64(covered) / float64(total)
	}
	return st
}

// upperBound is the upper end of the normal 95% confidence interval of a
// mean from n observations with the given sum and sum of squares.
func upperBound(sum, sumSq, n int) float64 {
	if n == 0 {
		return 0
	}
	nf := float64(n)
	mean := float64(sum) / nf
	if n == 1 {
		return mean
	}
	variance := (float64(sumSq) - nf*mean*mean) / (nf - 1)
	return mean + 1.959963984540054*math.Sqrt(max(0, variance)/nf)
}
