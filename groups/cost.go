package groups

import (
	"cmp"
	"math"
	"slices"

	"github.com/toolprof/toolprof/price"
)

// layout is a base and its groups over catalog tool indices. Groups are
// disjoint and hold no base tool; a tool in neither cannot be reached by a
// session served this profile (a destructive tool the profile may not hold).
type layout struct {
	inBase  []bool
	groups  [][]int // sorted tool indices
	groupOf []int   // tool index -> group index, -1 for none
}

func newLayout(n int, base []int, groups [][]int) *layout {
	l := &layout{inBase: make([]bool, n), groupOf: make([]int, n), groups: groups}
	for i := range l.groupOf {
		l.groupOf[i] = -1
	}
	for _, t := range base {
		l.inBase[t] = true
	}
	for g, ts := range groups {
		for _, t := range ts {
			l.groupOf[t] = g
		}
	}
	return l
}

func (l *layout) base() []int {
	var out []int
	for t, in := range l.inBase {
		if in {
			out = append(out, t)
		}
	}
	return out
}

// pricing holds every token figure the expected-cost model needs, in
// o200k_base tokens.
type pricing struct {
	tool     []int // each tool's tools/list entry
	full     int   // every tool's entry: the full catalog
	enable   int   // the enable_tools entry; counted only when groups are offered
	exchange []int // per group: the enable_tools call request plus its result
}

// sessionCost is what one session costs under a layout.
type sessionCost struct {
	tokens    int // context model: each switch adds only the newly listed tools
	tokensAll int // wire model: each switch's re-listed response counted whole
	switches  int
	fallback  bool // needs a tool the layout cannot reach: served full instead
}

// cost prices a session that used demand (sorted, distinct tool indices).
//
// The session is served the base plus enable_tools (when groups are
// offered) and switches on each group holding a tool it used that the base
// lacks, once. Each switch costs the call request and its result, plus the
// newly listed tools: in the context model only the group's entries (a
// client replaces its tool list on list_changed, so tools already listed
// are not paid again); in the wire model the whole re-listed response
// (base, enable_tools and every group on so far), groups taken in order of
// increasing size, the cheapest order. A session needing a tool the layout
// cannot reach is priced at the full catalog with no switch: it has to be
// served full.
func (l *layout) cost(demand []int, p *pricing, scratch []int) (sessionCost, []int) {
	need := scratch[:0]
	for _, t := range demand {
		if l.inBase[t] {
			continue
		}
		g := l.groupOf[t]
		if g < 0 {
			return sessionCost{tokens: p.full, tokensAll: p.full, fallback: true}, need
		}
		if !slices.Contains(need, g) {
			need = append(need, g)
		}
	}
	base := 0
	for t, in := range l.inBase {
		if in {
			base += p.tool[t]
		}
	}
	if len(l.groups) > 0 {
		base += p.enable
	}
	gt := func(g int) int {
		s := 0
		for _, t := range l.groups[g] {
			s += p.tool[t]
		}
		return s
	}
	slices.SortFunc(need, func(a, b int) int {
		if c := cmp.Compare(gt(a), gt(b)); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	c := sessionCost{tokens: base, tokensAll: base, switches: len(need)}
	listed := base
	for _, g := range need {
		c.tokens += p.exchange[g] + gt(g)
		listed += gt(g)
		c.tokensAll += p.exchange[g] + listed
	}
	return c, need
}

// Figures measure a layout on a set of sessions.
type Figures struct {
	Sessions int `json:"sessions"`
	// MeanTokens is the expected tool-definition tokens per session in the
	// context model; MeanTokensWire counts each re-listed response whole.
	MeanTokens     float64 `json:"mean_tokens"`
	MeanTokensWire float64 `json:"mean_tokens_wire"`
	// FullTokens is the full catalog; ShareOfFull = MeanTokens / FullTokens.
	FullTokens  int     `json:"full_tokens"`
	ShareOfFull float64 `json:"share_of_full"`
	// FloorTokens is the mean of the tokens of exactly the tools each
	// session used; OverFloor = MeanTokens / FloorTokens.
	FloorTokens   float64 `json:"floor_tokens"`
	OverFloor     float64 `json:"over_floor"`
	MeanSwitches  float64 `json:"mean_switches"`
	P95Switches   int     `json:"p95_switches"`
	MaxSwitches   int     `json:"max_switches"`
	NoSwitch      int     `json:"no_switch"` // sessions needing no switch
	NoSwitchShare float64 `json:"no_switch_share"`
	// Fallback counts sessions needing a tool the profile cannot reach
	// (priced at the full catalog).
	Fallback int `json:"fallback"`
	// SessionCost is the mean cost per session with prompt caching
	// (cached.go), SessionCostFull full's on the same sessions and
	// SessionShareOfFull the first over the second.
	SessionCost        float64 `json:"session_cost"`
	SessionCostFull    float64 `json:"session_cost_full"`
	SessionShareOfFull float64 `json:"session_share_of_full"`
}

// addSessionCost sets f's cost per session with prompt caching from l on
// paths, beside full's (full tokens).
func (f *Figures) addSessionCost(l *cachedLayout, paths []cachedPath, full int, cache price.CacheModel) {
	n := 0
	for _, p := range paths {
		n += p.weight
	}
	if n == 0 {
		return
	}
	f.SessionCost = l.cost(paths, cache) / float64(n)
	f.SessionCostFull = fullCost(paths, full, cache) / float64(n)
	if f.SessionCostFull > 0 {
		f.SessionShareOfFull = f.SessionCost / f.SessionCostFull
	}
}

// measure evaluates l on sessions (each a demand set with its count).
func (l *layout) measure(sessions []weighted, p *pricing) Figures {
	f := Figures{FullTokens: p.full}
	var scratch []int
	var switches []int // per session, for the percentile
	var tokens, wire, floor float64
	for _, s := range sessions {
		var c sessionCost
		c, scratch = l.cost(s.tools, p, scratch)
		fl := 0
		for _, t := range s.tools {
			fl += p.tool[t]
		}
		w := float64(s.weight)
		f.Sessions += s.weight
		tokens += w * float64(c.tokens)
		wire += w * float64(c.tokensAll)
		floor += w * float64(fl)
		for range s.weight {
			switches = append(switches, c.switches)
		}
		if c.switches == 0 {
			f.NoSwitch += s.weight
		}
		if c.fallback {
			f.Fallback += s.weight
		}
	}
	if f.Sessions == 0 {
		return f
	}
	n := float64(f.Sessions)
	f.MeanTokens, f.MeanTokensWire, f.FloorTokens = tokens/n, wire/n, floor/n
	if p.full > 0 {
		f.ShareOfFull = f.MeanTokens / float64(p.full)
	}
	if f.FloorTokens > 0 {
		f.OverFloor = f.MeanTokens / f.FloorTokens
	}
	total := 0
	for _, s := range switches {
		total += s
	}
	f.MeanSwitches = float64(total) / n
	slices.Sort(switches)
	f.P95Switches = switches[nearestRank(len(switches), 0.95)]
	f.MaxSwitches = switches[len(switches)-1]
	f.NoSwitchShare = float64(f.NoSwitch) / n
	return f
}

// nearestRank is the index of the q-quantile by the nearest-rank method.
func nearestRank(n int, q float64) int {
	r := int(math.Ceil(q*float64(n))) - 1
	return max(0, min(n-1, r))
}
