package groups

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// group is one group during the search.
type group struct {
	tools      []int // sorted
	catchAll   bool
	tok        int // entries of its tools
	line, exch int // its line in enable_tools' description; its switch exchange
}

// state is a base and its groups during the search.
type state struct {
	inBase []bool
	groups []*group
}

func (s *state) clone() *state {
	c := &state{inBase: slices.Clone(s.inBase), groups: make([]*group, len(s.groups))}
	copy(c.groups, s.groups)
	return c
}

// searcher holds what every candidate layout of one derivation shares.
type searcher struct {
	n         int
	names     []string
	upstream  []string
	reachable []bool // tools the grouped profile may hold
	price     []int
	bytes     []int // each tool's entry in bytes
	full      int
	header    int // enable_tools with no group listed
	penalty   int // tokens charged per switch during the search (Lagrange multiplier of the switch budget)
	sigs      []weighted
	fallback  []bool // per sig: needs a tool the grouped profile cannot reach
	wLive     int    // sessions not falling back
	wFall     int
	toolSigs  [][]int // tool -> live sigs using it
	nm        *namer
	counter   *price.Counter
	lines     map[string]int
	exchs     map[string]int
	paths     []cachedPath // the derive sessions in time (cached.go)
	cache     price.CacheModel
}

func (s *searcher) count(text string) (int, error) {
	ids, err := s.counter.Encode(price.O200kBase, text)
	if err != nil {
		return 0, err
	}
	return len(ids), nil
}

// exchangeTokens prices switching group name on: the enable_tools call
// request (its tools/call params, which is what the model writes) and the
// result it reads back, adding tools.
func (s *searcher) exchangeTokens(name string, tools []int) (int, error) {
	added := make([]string, len(tools))
	for i, t := range tools {
		added[i] = s.names[t]
	}
	req, err := exchange.EncodeAsServed(profiles.EnableToolsRequest(name))
	if err != nil {
		return 0, fmt.Errorf("encode enable_tools request: %w", err)
	}
	res, err := exchange.EncodeAsServed(profiles.EnableToolsResult(name, added))
	if err != nil {
		return 0, fmt.Errorf("encode enable_tools result: %w", err)
	}
	a, err := s.count(string(req))
	if err != nil {
		return 0, err
	}
	b, err := s.count(string(res))
	return a + b, err
}

func draftKey(tools []int, catchAll bool) string {
	var b strings.Builder
	if catchAll {
		b.WriteByte('*')
	}
	for _, t := range tools {
		b.WriteString(strconv.Itoa(t))
		b.WriteByte(',')
	}
	return b.String()
}

// newGroup prices a group provisionally, named as if alone in its
// upstream (final names, deduplicated, are priced again at the end).
func (s *searcher) newGroup(tools []int, catchAll bool) (*group, error) {
	g := &group{tools: tools, catchAll: catchAll}
	for _, t := range tools {
		g.tok += s.price[t]
	}
	key := draftKey(tools, catchAll)
	if line, ok := s.lines[key]; ok {
		g.line, g.exch = line, s.exchs[key]
		return g, nil
	}
	d := groupDraft{tools: tools, catchAll: catchAll}
	name := s.nm.name([]groupDraft{d})[0]
	line, err := s.count("\n- " + name + ": " + s.nm.description(d))
	if err != nil {
		return nil, err
	}
	exch, err := s.exchangeTokens(name, tools)
	if err != nil {
		return nil, err
	}
	s.lines[key], s.exchs[key] = line, exch
	g.line, g.exch = line, exch
	return g, nil
}

// total is the expected-cost objective summed over the derive sessions in
// the context model (additive per group): live sessions pay base and
// enable_tools, and each group's switch for every session needing it.
func (s *searcher) total(st *state) int {
	base := 0
	for t, in := range st.inBase {
		if in {
			base += s.price[t]
		}
	}
	enable := 0
	if len(st.groups) > 0 {
		enable = s.header
		for _, g := range st.groups {
			enable += g.line
		}
	}
	sum := s.wLive*(base+enable) + s.wFall*s.full
	need := s.needs(st)
	for gi, g := range st.groups {
		sum += need[gi] * (g.exch + s.penalty + g.tok)
	}
	return sum
}

// switches returns the sum and the sum of squares of the switches the
// derive sessions make (fallback sessions make none).
func (s *searcher) switches(st *state) (sum, sumSq int) {
	of := s.groupOf(st)
	var seen []int
	for i, sig := range s.sigs {
		if s.fallback[i] {
			continue
		}
		seen = seen[:0]
		for _, t := range sig.tools {
			if g := of[t]; g >= 0 && !st.inBase[t] && !slices.Contains(seen, g) {
				seen = append(seen, g)
			}
		}
		sum += sig.weight * len(seen)
		sumSq += sig.weight * len(seen) * len(seen)
	}
	return sum, sumSq
}

// groupOf maps tools to their group index in st (-1 for none).
func (s *searcher) groupOf(st *state) []int {
	of := make([]int, s.n)
	for i := range of {
		of[i] = -1
	}
	for gi, g := range st.groups {
		for _, t := range g.tools {
			of[t] = gi
		}
	}
	return of
}

// needs returns, per group, the live derive sessions that switch it on.
func (s *searcher) needs(st *state) []int {
	of := s.groupOf(st)
	need := make([]int, len(st.groups))
	var seen []int
	for i, sig := range s.sigs {
		if s.fallback[i] {
			continue
		}
		seen = seen[:0]
		for _, t := range sig.tools {
			if st.inBase[t] {
				continue
			}
			if g := of[t]; g >= 0 && !slices.Contains(seen, g) {
				seen = append(seen, g)
				need[g] += sig.weight
			}
		}
	}
	return need
}

// move is one local-search step.
type move struct {
	kind  int // moveMerge, moveToBase, moveFromBase
	a, b  int // groups (merge), group and tool (to base), tool and group or -1 (from base)
	delta int
}

const (
	moveMerge = iota
	moveToBase
	moveFromBase
	moveGroupToBase // a whole group into the base (improveCached only)
)

// improve runs best-improvement local search from st: merge two groups of
// one upstream, move a used tool from its group into the base, or move a
// base tool out into a group of its upstream or a group of its own. Each
// move is priced by its exact change to the additive objective; the best
// strictly improving one is applied until none is left (bounded).
func (s *searcher) improve(st *state) (*state, error) {
	cur := s.total(st)
	for iter := 0; iter < 4*s.n+64; iter++ {
		best, err := s.bestMove(st)
		if err != nil {
			return nil, err
		}
		if best == nil || best.delta >= 0 {
			return st, nil
		}
		next, err := s.apply(st, *best)
		if err != nil {
			return nil, err
		}
		t := s.total(next)
		if t >= cur { // the enable_tools header appearing or vanishing: not in the delta
			return st, nil
		}
		st, cur = next, t
	}
	return st, nil
}

func (s *searcher) bestMove(st *state) (*move, error) {
	of := s.groupOf(st)
	need := s.needs(st)
	sigsOf := make([][]int, len(st.groups))
	for i, sig := range s.sigs {
		if s.fallback[i] {
			continue
		}
		var last []int
		for _, t := range sig.tools {
			if g := of[t]; g >= 0 && !st.inBase[t] && !slices.Contains(last, g) {
				last = append(last, g)
				sigsOf[g] = append(sigsOf[g], i)
			}
		}
	}
	mark := make([]int, len(s.sigs))
	stamp := 0
	// weightOf sums the live sigs in the lists, each once.
	weightOf := func(lists ...[]int) int {
		stamp++
		w := 0
		for _, l := range lists {
			for _, i := range l {
				if mark[i] != stamp {
					mark[i] = stamp
					w += s.sigs[i].weight
				}
			}
		}
		return w
	}
	W := s.wLive
	P := s.penalty
	var best *move
	consider := func(m move) {
		if best == nil || m.delta < best.delta {
			best = &m
		}
	}
	for a, ga := range st.groups {
		if ga.catchAll {
			continue
		}
		for b := a + 1; b < len(st.groups); b++ {
			gb := st.groups[b]
			if gb.catchAll || s.upstream[ga.tools[0]] != s.upstream[gb.tools[0]] {
				continue
			}
			m, err := s.newGroup(mergeSorted(ga.tools, gb.tools), false)
			if err != nil {
				return nil, err
			}
			n := weightOf(sigsOf[a], sigsOf[b])
			d := W*(m.line-ga.line-gb.line) + n*(m.exch+P+m.tok) - need[a]*(ga.exch+P+ga.tok) - need[b]*(gb.exch+P+gb.tok)
			consider(move{kind: moveMerge, a: a, b: b, delta: d})
		}
	}
	for gi, g := range st.groups {
		if g.catchAll {
			continue
		}
		for _, t := range g.tools {
			rest := without(g.tools, t)
			d := W * s.price[t]
			if len(rest) == 0 {
				d += -W*g.line - need[gi]*(g.exch+P+g.tok)
			} else {
				r, err := s.newGroup(rest, false)
				if err != nil {
					return nil, err
				}
				n := 0
				for _, i := range sigsOf[gi] {
					if slices.ContainsFunc(s.sigs[i].tools, func(u int) bool { return u != t && of[u] == gi }) {
						n += s.sigs[i].weight
					}
				}
				d += W*(r.line-g.line) + n*(r.exch+P+r.tok) - need[gi]*(g.exch+P+g.tok)
			}
			consider(move{kind: moveToBase, a: gi, b: t, delta: d})
		}
	}
	for t, in := range st.inBase {
		if !in || !s.reachable[t] || len(s.toolSigs[t]) == 0 {
			continue
		}
		single, err := s.newGroup([]int{t}, false)
		if err != nil {
			return nil, err
		}
		nt := weightOf(s.toolSigs[t])
		consider(move{kind: moveFromBase, a: t, b: -1, delta: -W*s.price[t] + W*single.line + nt*(single.exch+P+single.tok)})
		for hi, h := range st.groups {
			if h.catchAll || s.upstream[h.tools[0]] != s.upstream[t] {
				continue
			}
			m, err := s.newGroup(mergeSorted(h.tools, []int{t}), false)
			if err != nil {
				return nil, err
			}
			n := weightOf(sigsOf[hi], s.toolSigs[t])
			d := -W*s.price[t] + W*(m.line-h.line) + n*(m.exch+P+m.tok) - need[hi]*(h.exch+P+h.tok)
			consider(move{kind: moveFromBase, a: t, b: hi, delta: d})
		}
	}
	return best, nil
}

func (s *searcher) apply(st *state, m move) (*state, error) {
	next := st.clone()
	var err error
	switch m.kind {
	case moveMerge:
		ga, gb := st.groups[m.a], st.groups[m.b]
		next.groups[m.a], err = s.newGroup(mergeSorted(ga.tools, gb.tools), false)
		next.groups = slices.Delete(next.groups, m.b, m.b+1)
	case moveToBase:
		next.inBase[m.b] = true
		rest := without(st.groups[m.a].tools, m.b)
		if len(rest) == 0 {
			next.groups = slices.Delete(next.groups, m.a, m.a+1)
		} else {
			next.groups[m.a], err = s.newGroup(rest, false)
		}
	case moveGroupToBase:
		for _, t := range st.groups[m.a].tools {
			next.inBase[t] = true
		}
		next.groups = slices.Delete(next.groups, m.a, m.a+1)
	case moveFromBase:
		next.inBase[m.a] = false
		if m.b < 0 {
			var g *group
			g, err = s.newGroup([]int{m.a}, false)
			next.groups = append(next.groups, g)
		} else {
			next.groups[m.b], err = s.newGroup(mergeSorted(st.groups[m.b].tools, []int{m.a}), false)
		}
	}
	if err != nil {
		return nil, err
	}
	return next, nil
}

func mergeSorted(a, b []int) []int {
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

func without(s []int, t int) []int {
	out := make([]int, 0, len(s))
	for _, u := range s {
		if u != t {
			out = append(out, u)
		}
	}
	return out
}

// stateKey identifies a layout: its base and its groups.
func (s *searcher) stateKey(st *state) string {
	var b strings.Builder
	for t, in := range st.inBase {
		if in {
			b.WriteString(strconv.Itoa(t))
			b.WriteByte(',')
		}
	}
	keys := make([]string, len(st.groups))
	for i, g := range st.groups {
		keys[i] = draftKey(g.tools, g.catchAll)
	}
	slices.Sort(keys)
	for _, k := range keys {
		b.WriteByte('|')
		b.WriteString(k)
	}
	return b.String()
}
