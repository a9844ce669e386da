package derive

import (
	"cmp"
	"encoding/binary"
	"math"
	"slices"

	"github.com/toolprof/toolprof/price"
)

// Path is a session's demand in time, what its cost with prompt caching
// depends on: each catalog tool at the turn of its first call, in call
// order, and the session's turns.
type Path struct {
	Turns int
	Steps []Step
}

// Step is a tool's first call in a session and the turn (from 0) it was
// made in.
type Step struct{ Tool, Turn int }

// pathOf maps a traced session to catalog indices. Calls to tools the
// catalog lacks change no listing and are left out, as bench prices them.
// Without a traced session (ok false) each distinct tool is taken as
// called once, in index order, one turn each, plus one turn answering.
func pathOf(s price.Session, ok bool, tools []int, index map[string]int) Path {
	if !ok {
		p := Path{Turns: len(tools) + 1, Steps: make([]Step, len(tools))}
		for i, t := range tools {
			p.Steps[i] = Step{Tool: t, Turn: i}
		}
		return p
	}
	p := Path{Turns: s.Turns}
	seen := map[int]bool{}
	for _, c := range s.Calls {
		if i, known := index[c.Tool]; known && !seen[i] {
			seen[i] = true
			p.Steps = append(p.Steps, Step{Tool: i, Turn: c.Turn})
		}
	}
	return p
}

// SessionCost is a profile's model-token cost per session with prompt
// caching (price.SessionCost), in input-token equivalents.
type SessionCost struct {
	price.Stats
	// ShareOfFull is Mean over full's mean on the same sessions.
	ShareOfFull float64
}

// costModel prices tool sets per session with prompt caching: a session
// served set S lists S from its first turn; at the turn of its first call
// to a tool S lacks it is refused and continues on the full catalog, which
// is written to the cache again from that turn.
type costModel struct {
	cache price.CacheModel
	tok   []int // tool -> tokens
	full  int   // tokens of every tool
	paths []weightedPath
}

type weightedPath struct {
	Path
	weight int
	grow   float64 // the conversation's growth, the same under every set
}

func newCostModel(tok []int, paths []Path, cache price.CacheModel) *costModel {
	m := &costModel{cache: cache, tok: tok}
	for _, c := range tok {
		m.full += c
	}
	byKey := map[string]int{}
	var key []byte
	steps := 0
	for _, p := range paths {
		// Varints delimit themselves: one key per path.
		key = binary.AppendUvarint(key[:0], uint64(p.Turns))
		for _, s := range p.Steps {
			key = binary.AppendUvarint(binary.AppendUvarint(key, uint64(s.Tool)), uint64(s.Turn))
		}
		if i, ok := byKey[string(key)]; ok {
			m.paths[i].weight++
			continue
		}
		byKey[string(key)] = len(m.paths)
		m.paths = append(m.paths, weightedPath{Path: p, weight: 1, grow: m.growth(p.Turns)})
		steps += len(p.Steps)
	}
	// The steps of every path in one array, in the order total reads
	// them.
	all := make([]Step, 0, steps)
	for i := range m.paths {
		p := &m.paths[i]
		from := len(all)
		all = append(all, p.Steps...)
		p.Steps = all[from:len(all):len(all)]
	}
	return m
}

// growth is the cost of a conversation's growth over turns: t*g tokens
// at turn t, read from the previous turn and written for what the turn
// adds. It does not depend on the tools served, so it is summed once per
// path rather than at every pricing.
func (m *costModel) growth(turns int) float64 {
	w, rd, g := m.cache.Write, m.cache.Read, float64(m.cache.Growth)
	c := 0.0
	for t := 1; t < turns; t++ {
		c += rd*g*float64(t-1) + w*g
	}
	return c
}

// session is one session's cost under the set in, whose tools cost set
// tokens: SessionCost of set's prefix up to the refused turn r and the
// full catalog's from r on, in closed form.
func (m *costModel) session(p weightedPath, in []bool, set int) float64 {
	r := p.Turns
	for _, s := range p.Steps {
		if !in[s.Tool] {
			r = min(s.Turn, p.Turns)
			break
		}
	}
	w, rd, g := m.cache.Write, m.cache.Read, float64(m.cache.Growth)
	c := 0.0
	if r > 0 {
		c += float64(set) * (w + rd*float64(r-1))
	}
	if r < p.Turns {
		c += float64(m.full) * (w + rd*float64(p.Turns-1-r))
	}
	// Conversation growth (growth), all written again at turn r.
	c += p.grow
	if r > 0 && r < p.Turns {
		c += g * float64(r-1) * (w - rd)
	}
	return c
}

// total is the summed cost of the paths under in.
func (m *costModel) total(in []bool) float64 {
	set := 0
	for t, ok := range in {
		if ok {
			set += m.tok[t]
		}
	}
	sum := 0.0
	for _, p := range m.paths {
		sum += float64(p.weight) * m.session(p, in, set)
	}
	return sum
}

// stats prices every path under in and summarises per session: what
// price.Summarise gives for every session's cost, from each distinct
// path's cost and weight, without listing a cost per session.
func (m *costModel) stats(in []bool) price.Stats {
	set := 0
	for t, ok := range in {
		if ok {
			set += m.tok[t]
		}
	}
	costs := make([]weightedCost, len(m.paths))
	for i, p := range m.paths {
		costs[i] = weightedCost{m.session(p, in, set), p.weight}
	}
	return summariseWeighted(costs)
}

// weightedCost is a cost that weight sessions have.
type weightedCost struct {
	cost   float64
	weight int
}

// summariseWeighted is price.Summarise of the list holding each cost
// weight times, to the bit: the mean is summed in the same sorted order,
// one addition per session.
func summariseWeighted(costs []weightedCost) price.Stats {
	slices.SortFunc(costs, func(a, b weightedCost) int { return cmp.Compare(a.cost, b.cost) })
	n := 0
	sum := 0.0
	for _, c := range costs {
		n += c.weight
		for range c.weight {
			sum += c.cost
		}
	}
	if n == 0 {
		return price.Stats{}
	}
	// rank is the cost at sorted position i, as Summarise takes it.
	rank := func(q float64) float64 {
		i := max(0, min(int(math.Ceil(q*float64(n)))-1, n-1))
		for _, c := range costs {
			if i < c.weight {
				return c.cost
			}
			i -= c.weight
		}
		return costs[len(costs)-1].cost
	}
	return price.Stats{Sessions: n, Mean: sum / float64(n), P50: rank(0.50), P95: rank(0.95)}
}

// sessionStats is the per-session cost of tools over m's paths, beside
// full's.
func (m *costModel) sessionStats(tools []int) SessionCost {
	in := make([]bool, len(m.tok))
	for _, t := range tools {
		in[t] = true
	}
	all := make([]bool, len(m.tok))
	for i := range all {
		all[i] = true
	}
	sc := SessionCost{Stats: m.stats(in)}
	if full := m.stats(all).Mean; full > 0 {
		sc.ShareOfFull = round4(sc.Mean / full)
	}
	return sc
}

// sessionSearchWork bounds the session-cost local search in paths priced
// from scratch, checked between rounds.
const sessionSearchWork = 5e6

// SolveSession returns the tool set with the least expected cost per
// session with prompt caching over paths (the derive sessions, in the
// order of p's sessions' sets) among those covering at least target of p's
// sessions: the target is a floor, and the set goes above it wherever
// serving more sessions costs less than sending them to full. Candidates
// are Solve's listing-cheapest set at the target and the corners of the
// cost/coverage frontier above it; the cheapest is improved by local
// search (add a tool, add a signature's missing tools, drop a tool while
// the target holds), bounded by a work budget. With the target
// unreachable Solve's best effort is returned as it is.
func SolveSession(p Problem, paths []Path, cache price.CacheModel, target float64, opt Options) (*Solution, error) {
	if err := cache.Check(); err != nil {
		return nil, err
	}
	return solveSession(p, newCostModel(p.Costs, paths, cache), target, opt)
}

// solveSession is SolveSession over a cost model of the paths.
func solveSession(p Problem, m *costModel, target float64, opt Options) (*Solution, error) {
	// The frontier's corners do not depend on Solve's set: find them on
	// the other core meanwhile.
	type corners struct {
		pts []FrontierPoint
		err error
	}
	front := make(chan corners, 1)
	go func() {
		pts, err := frontier(p, 6)
		front <- corners{pts, err}
	}()
	sol, err := Solve(p, target, opt)
	fc := <-front
	if err != nil || !sol.Feasible {
		return sol, err
	}
	s, err := newSolver(p, opt)
	if err != nil {
		return nil, err
	}
	g := goal{need: sol.Need, budget: -1}
	// A corner no better than the best is dropped, its state reused.
	from := func(tools []int) sessionCand {
		st := s.newStateIn(s.takeState())
		for _, t := range tools {
			st.add(t)
		}
		return sessionCand{st, m.total(st.in)}
	}
	best := from(sol.Tools)
	method := sol.Method
	if fc.err != nil {
		return nil, fc.err
	}
	for _, c := range fc.pts {
		if c.Covered < sol.Need {
			continue
		}
		if k := from(c.Tools); sessionBetter(k, best) {
			s.releaseState(best.st)
			best, method = k, "lagrangian"
		} else {
			s.releaseState(k.st)
		}
	}
	var improved bool
	if pr := newPricer(m); pr != nil && g.feasible(best.st) {
		best, improved = searchIncremental(s, g, m, pr, best, sessionSearchWork)
	} else {
		best, improved = searchScratch(s, g, m, best, sessionSearchWork)
	}
	if improved {
		method += "+session"
	}
	out := s.solution(best.st, g, method)
	if slices.Equal(out.Tools, sol.Tools) {
		out.LowerBound = sol.LowerBound // a bound on the listing, which the chosen set no longer minimises otherwise
	}
	out.SessionCost = best.cost / float64(max(1, m.weight()))
	return out, nil
}

func (m *costModel) weight() int {
	n := 0
	for _, p := range m.paths {
		n += p.weight
	}
	return n
}
