package groups

import (
	"fmt"
	"slices"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/price"
)

// The cost per session with prompt caching (package price's model), which
// the choice of base and groups minimises: the tools are the prompt's
// prefix, written to the cache on a session's first turn and read on the
// next ones, and a switch changes them, so that the turn of a switch
// writes the whole prefix again. A session served base B pays B and the
// enable_tools definition at the write multiplier on its first turn and at
// the read multiplier on each later one; from the turn of its first call
// to a tool of a group it lacks, the group's tools join the prefix and
// that turn writes it all, with the enable_tools request and result as
// conversation the model reads from then on. A session calling a tool the
// layout cannot reach is served full from that turn. The same layout can
// thus cost far more than the context model says when its switches come
// late in long sessions, or less when one large group switched early
// replaces several small ones.

// cachedPath is one or more derive sessions' demand in time.
type cachedPath struct {
	derive.Path
	weight int
}

// pathOf is s's first call of each catalog tool, in call order, with its
// turn; without a traced path (ok false) each distinct tool of demand is
// taken as called once, in index order, a turn each, plus a turn
// answering, as derive takes it.
func pathOf(s price.Session, ok bool, demand []int, index map[string]int) derive.Path {
	if !ok {
		p := derive.Path{Turns: len(demand) + 1, Steps: make([]derive.Step, len(demand))}
		for i, t := range demand {
			p.Steps[i] = derive.Step{Tool: t, Turn: i}
		}
		return p
	}
	p := derive.Path{Turns: s.Turns}
	seen := map[int]bool{}
	for _, c := range s.Calls {
		if i, known := index[c.Tool]; known && !seen[i] {
			seen[i] = true
			p.Steps = append(p.Steps, derive.Step{Tool: i, Turn: c.Turn})
		}
	}
	return p
}

// reducePaths merges identical paths into weighted ones, in first-seen
// order.
func reducePaths(ds []derive.Demand) []cachedPath {
	var out []cachedPath
	byKey := map[string]int{}
	var key []byte
	for _, d := range ds {
		key = fmt.Appendf(key[:0], "%d", d.Path.Turns)
		for _, s := range d.Path.Steps {
			key = fmt.Appendf(key, ",%d@%d", s.Tool, s.Turn)
		}
		if i, ok := byKey[string(key)]; ok {
			out[i].weight++
			continue
		}
		byKey[string(key)] = len(out)
		out = append(out, cachedPath{Path: d.Path, weight: 1})
	}
	return out
}

// cachedLayout is a layout as the cached cost reads it.
type cachedLayout struct {
	inBase  []bool // nil: every tool (full)
	groupOf []int  // tool -> group, -1 for none
	tok     []int  // per group: its tools' entries
	exch    []int  // per group: its switch's request and result
	prefix  int    // base and enable_tools: the first turn's prefix
	fall    int    // the prefix of a session served full from a turn on
}

// cost is the summed cost of paths under l, over the price of each tool,
// with cache.
func (l *cachedLayout) cost(paths []cachedPath, cache price.CacheModel) float64 {
	on := make([]int, len(l.tok)) // stamp of the path that switched the group on
	total := 0.0
	for pi, p := range paths {
		stamp := pi + 1
		prefix, conv, fell := float64(l.prefix), 0.0, false
		c, i := 0.0, 0
		for turn := 0; turn < p.Turns; turn++ {
			changed, add := false, 0.0
			for ; i < len(p.Steps) && p.Steps[i].Turn <= turn; i++ {
				t := p.Steps[i].Tool
				if fell || l.inBase == nil || l.inBase[t] {
					continue
				}
				g := l.groupOf[t]
				if g < 0 {
					fell, changed, prefix = true, true, float64(l.fall)
					continue
				}
				if on[g] != stamp {
					on[g] = stamp
					prefix += float64(l.tok[g])
					add += float64(l.exch[g])
					changed = true
				}
			}
			add += float64(cache.Growth) * float64(min(turn, 1))
			if turn == 0 || changed {
				c += cache.Write * (prefix + conv + add)
			} else {
				c += cache.Read*(prefix+conv) + cache.Write*add
			}
			conv += add
		}
		total += float64(p.weight) * c
	}
	return total
}

// fullCost is the summed cost of paths served the full catalog, which
// costs full tokens.
func fullCost(paths []cachedPath, full int, cache price.CacheModel) float64 {
	l := &cachedLayout{prefix: full}
	return l.cost(paths, cache)
}

// cachedOf is st as the cached cost reads it, priced provisionally (each
// group named as if alone).
func (s *searcher) cachedOf(st *state) *cachedLayout {
	l := &cachedLayout{inBase: st.inBase, groupOf: s.groupOf(st), tok: make([]int, len(st.groups)), exch: make([]int, len(st.groups))}
	for t, in := range st.inBase {
		if in {
			l.prefix += s.price[t]
		}
	}
	enable := 0
	if len(st.groups) > 0 {
		enable = s.header
		for gi, g := range st.groups {
			enable += g.line
			l.tok[gi], l.exch[gi] = g.tok, g.exch
		}
	}
	l.prefix += enable
	l.fall = s.full + enable
	return l
}

// cached is st's summed cost with prompt caching over the derive paths.
func (s *searcher) cached(st *state) float64 {
	return s.cachedOf(st).cost(s.paths, s.cache)
}

// cachedWork bounds improveCached in path evaluations.
const cachedWork = 4e6

// improveCached runs best-improvement local search from st on the cached
// cost itself: the moves of improve (merge two groups of one upstream,
// move a group's tool into the base, move a base tool out into a group of
// its upstream or one of its own) and moving a whole group into the base,
// which no single-tool move may pay for alone, each priced by evaluating the layout it
// gives, while the switch budget holds (feasible). It stops when no move
// improves or the work budget is spent.
func (s *searcher) improveCached(st *state, feasible func(*state) bool) (*state, float64, error) {
	cur := s.cached(st)
	work := int(cachedWork)
	for work > 0 {
		var next *state
		nextCost := cur
		try := func(m move) error {
			cand, err := s.apply(st, m)
			if err != nil {
				return err
			}
			work -= len(s.paths)
			if c := s.cached(cand); c < nextCost && feasible(cand) {
				next, nextCost = cand, c
			}
			return nil
		}
		for _, m := range s.moves(st) {
			if err := try(m); err != nil {
				return nil, 0, err
			}
			if work <= 0 {
				break
			}
		}
		if next == nil {
			break
		}
		st, cur = next, nextCost
	}
	return st, cur, nil
}

// moves lists the moves improve considers from st.
func (s *searcher) moves(st *state) []move {
	var out []move
	for a, ga := range st.groups {
		if ga.catchAll {
			continue
		}
		for b := a + 1; b < len(st.groups); b++ {
			if gb := st.groups[b]; !gb.catchAll && s.upstream[ga.tools[0]] == s.upstream[gb.tools[0]] {
				out = append(out, move{kind: moveMerge, a: a, b: b})
			}
		}
	}
	for gi, g := range st.groups {
		if g.catchAll {
			continue
		}
		for _, t := range g.tools {
			out = append(out, move{kind: moveToBase, a: gi, b: t})
		}
		if len(g.tools) > 1 {
			out = append(out, move{kind: moveGroupToBase, a: gi})
		}
	}
	for t, in := range st.inBase {
		if !in || !s.reachable[t] || len(s.toolSigs[t]) == 0 {
			continue
		}
		out = append(out, move{kind: moveFromBase, a: t, b: -1})
		for hi, h := range st.groups {
			if !h.catchAll && s.upstream[h.tools[0]] == s.upstream[t] {
				out = append(out, move{kind: moveFromBase, a: t, b: hi})
			}
		}
	}
	slices.SortStableFunc(out, func(x, y move) int { return x.kind - y.kind })
	return out
}
