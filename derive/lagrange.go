package derive

import "slices"

// The Lagrangian relaxation of "cover at least need sessions at least cost"
// moves the coverage constraint into the objective with a price mu (tokens
// per session): maximise mu*covered - cost. For a fixed mu that relaxed
// problem is a maximum-weight closure (a signature may be chosen only if all
// its tools are bought), which a minimum s-t cut solves exactly: source ->
// signature with capacity mu*weight, signature -> tool unbounded, tool ->
// sink with capacity cost. Its optima, as mu grows, are exactly the corner
// points of the lower convex hull of the cost/coverage frontier, so every
// point it returns is optimal for its own coverage. mu is kept rational
// (num/den) so that all capacities are integers and the cut is exact.

// closureGraph is the flow network of the relaxed problem, built once per
// solver (the pinned tools never change) and re-priced for each mu.
type closureGraph struct {
	f        *flow
	orig     []int64 // capacities with the priced edges at zero
	sigs     []int   // signature of node 2+k
	tools    []int   // tool of node 2+len(sigs)+k
	srcEdge  []int   // edge index of source -> signature k
	sinkEdge []int   // edge index of tool k -> sink
}

func (s *solver) closureGraph(base *state) *closureGraph {
	if s.cg != nil {
		return s.cg
	}
	g := &closureGraph{}
	for i := range s.sigs {
		if base.missCount[i] > 0 {
			g.sigs = append(g.sigs, i)
		}
	}
	toolNode := make(map[int]int)
	for _, i := range g.sigs {
		for _, t := range s.sigs[i].Tools {
			if base.in[t] {
				continue
			}
			if _, ok := toolNode[t]; !ok {
				toolNode[t] = 2 + len(g.sigs) + len(g.tools)
				g.tools = append(g.tools, t)
			}
		}
	}
	g.f = newFlow(2 + len(g.sigs) + len(g.tools))
	const inf = int64(1) << 62
	for k, i := range g.sigs {
		g.srcEdge = append(g.srcEdge, len(g.f.to))
		g.f.edge(0, 2+k, 0)
		for _, t := range s.sigs[i].Tools {
			if !base.in[t] {
				g.f.edge(2+k, toolNode[t], inf)
			}
		}
	}
	for _, t := range g.tools {
		g.sinkEdge = append(g.sinkEdge, len(g.f.to))
		g.f.edge(toolNode[t], 1, 0)
	}
	arc := g.f.compact()
	for k, e := range g.srcEdge {
		g.srcEdge[k] = int(arc[e])
	}
	for k, e := range g.sinkEdge {
		g.sinkEdge[k] = int(arc[e])
	}
	g.orig = slices.Clone(g.f.cap)
	s.cg = g
	return g
}

// closure solves the relaxed problem at mu = num/den over the signatures not
// already covered by the pinned tools, and returns the pinned tools plus the
// bought ones. base must be the pinned-only state.
func (s *solver) closure(base *state, num, den int64) *state {
	g := s.closureGraph(base)
	copy(g.f.cap, g.orig)
	for k, i := range g.sigs {
		g.f.cap[g.srcEdge[k]] = int64(s.w[i]) * num
	}
	for k, t := range g.tools {
		g.f.cap[g.sinkEdge[k]] = int64(s.costs[t]) * den
	}
	g.f.maxflow(0, 1)
	reach := g.f.reachable(0)
	st := base.clone()
	for k, t := range g.tools {
		if reach[2+len(g.sigs)+k] {
			st.add(t)
		}
	}
	return st
}

// closureBetween is closure at mu = num/den when the cut is known to lie
// between lo and hi, the cuts of a smaller and of a larger mu (or of the
// same); hi nil bounds nothing. The smallest minimum cut grows with mu, so
// it holds every tool of lo and none outside hi: only the signatures hi
// covers and lo does not, and their tools outside lo, are left to decide,
// a graph that shrinks as the search closes in and is dropped after the
// cut. The state returned, and the work it charges, are those closure
// gives. With s.fullCuts it is closure itself, to compare against.
func (s *solver) closureBetween(base, lo, hi *state, num, den int64) *state {
	if s.fullCuts {
		return s.closure(base, num, den)
	}
	if s.node == nil {
		s.node = make([]int32, len(s.costs))
	}
	// The graph's memory is the solver's, reused by every cut: a search
	// makes many, each as large as the signatures left to decide.
	f := &s.cut
	sigs, tools := f.sigs[:0], f.tools[:0]
	defer func() { f.sigs, f.tools = sigs[:0], tools[:0] }()
	for i := range s.sigs {
		if lo.missCount[i] > 0 && (hi == nil || hi.missCount[i] == 0) {
			sigs = append(sigs, i)
		}
	}
	for _, i := range sigs {
		for _, t := range s.sigs[i].Tools {
			if !lo.in[t] && s.node[t] == 0 {
				s.node[t] = int32(2 + len(sigs) + len(tools))
				tools = append(tools, t)
			}
		}
	}
	// The graph is laid out by node directly (as compact would lay it):
	// source, sink, signatures, tools, each node's arcs together.
	nSig, nTool := len(sigs), len(tools)
	n := 2 + nSig + nTool
	deg := grow(&f.deg, n+1)
	clear(deg)
	deg[0], deg[1] = int32(nSig), int32(nTool)
	for k, i := range sigs {
		deg[2+k] = 1 + lo.missCount[i]
	}
	for j := range tools {
		deg[2+nSig+j] = 1 // to the sink
	}
	for _, i := range sigs {
		for _, t := range s.sigs[i].Tools {
			if !lo.in[t] {
				deg[s.node[t]]++
			}
		}
	}
	f.start, f.level, f.iter = grow(&f.start, n+1), grow(&f.level, n), grow(&f.iter, n)
	f.start[0] = 0
	for u := range n {
		f.start[u+1] = f.start[u] + deg[u]
	}
	arcs := int(f.start[n])
	f.to, f.cap, f.rev = grow(&f.to, arcs), grow(&f.cap, arcs), grow(&f.rev, arcs)
	clear(f.cap)    // the reverse arcs' capacities start at zero
	fill := deg[:n] // next free arc of each node
	copy(fill, f.start[:n])
	arc := func(u, v int32, c int64) {
		a, b := fill[u], fill[v]
		fill[u]++
		fill[v]++
		f.to[a], f.cap[a], f.rev[a] = v, c, b
		f.to[b], f.rev[b] = u, a
	}
	const inf = int64(1) << 62
	for k, i := range sigs {
		arc(0, int32(2+k), int64(s.w[i])*num)
		for _, t := range s.sigs[i].Tools {
			if !lo.in[t] {
				arc(int32(2+k), s.node[t], inf)
			}
		}
	}
	for _, t := range tools {
		arc(s.node[t], 1, int64(s.costs[t])*den)
	}
	f.maxflow(0, 1)
	reach := f.reachable(0)
	// closure would add lo's tools to base one by one: the state is the
	// same from lo, and the work those adds charge is charged here.
	st := s.takeState()
	st.copyFrom(lo)
	for t, in := range lo.in {
		if in && !base.in[t] {
			s.work -= len(s.posting[t])
		}
	}
	for k, t := range tools {
		if reach[2+len(sigs)+k] {
			st.add(t)
		}
		s.node[t] = 0
	}
	return st
}

// takeState returns a state to overwrite: one released before, or a new
// one. A search of cuts makes a state per cut and drops most of them; at
// tens of thousands of signatures each is most of a megabyte.
func (s *solver) takeState() *state {
	if n := len(s.spares); n > 0 {
		st := s.spares[n-1]
		s.spares = s.spares[:n-1]
		return st
	}
	return &state{}
}

// releaseState hands st, which nothing holds any more, back to takeState.
func (s *solver) releaseState(st *state) { s.spares = append(s.spares, st) }

// lagrangianBracket returns two closure optima adjacent on the hull around
// the goal: in target mode lo covers fewer than need sessions and hi at
// least need (unless unreachable); in budget mode lo fits the budget and hi
// does not (unless everything fits).
func (s *solver) lagrangianBracket(g goal) (lo, hi *state, adjacent bool) {
	base := s.newState()
	lo = base.clone()
	allCost := int64(1)
	for _, c := range s.costs {
		allCost += int64(c)
	}
	hi = s.closureBetween(base, base, nil, allCost, 1)
	ok := func(st *state) bool {
		if g.budget >= 0 {
			return st.cost <= g.budget
		}
		return st.covered >= g.need
	}
	if g.budget < 0 && ok(lo) {
		return lo, lo, false
	}
	if g.budget >= 0 && ok(hi) {
		return hi, hi, false
	}
	if g.budget < 0 && !ok(hi) || g.budget >= 0 && !ok(lo) {
		return lo, hi, false
	}
	for range 64 {
		num, den := int64(hi.cost-lo.cost), int64(hi.covered-lo.covered)
		if den <= 0 {
			break
		}
		mid := s.closureBetween(base, lo, hi, num, den)
		if num*int64(mid.covered)-den*int64(mid.cost) == num*int64(lo.covered)-den*int64(lo.cost) {
			s.releaseState(mid)
			return lo, hi, true // adjacent corners of the hull
		}
		if ok(mid) == (g.budget < 0) {
			s.releaseState(hi)
			hi = mid
		} else {
			s.releaseState(lo)
			lo = mid
		}
	}
	return lo, hi, false
}

// FrontierPoint is one corner of the lower convex hull of the cost/coverage
// frontier: no tool set covers Covered sessions for less than Cost.
type FrontierPoint struct {
	Cost    int
	Covered int
	Tools   []int
}

// Frontier returns the corners of the convex cost/coverage frontier of p,
// from the pinned tools alone to every coverable session, by parametric
// minimum cut (Eisner-Severance: each new mu is the slope between two known
// corners).
func Frontier(p Problem) ([]FrontierPoint, error) {
	return frontier(p, 64)
}

// frontier finds corners by recursive bisection at most depth levels deep:
// every point returned is an exact corner, but a shallow depth may skip
// some (at most 2^depth - 1 cuts are solved).
func frontier(p Problem, maxDepth int) ([]FrontierPoint, error) {
	s, err := newSolver(p, Options{})
	if err != nil {
		return nil, err
	}
	return s.frontier(maxDepth), nil
}

func (s *solver) frontier(maxDepth int) []FrontierPoint {
	base := s.newState()
	allCost := int64(1)
	for _, c := range s.costs {
		allCost += int64(c)
	}
	var out []FrontierPoint
	point := func(st *state) FrontierPoint {
		return FrontierPoint{Cost: st.cost, Covered: st.covered, Tools: st.tools()}
	}
	var walk func(a, b *state, depth int)
	walk = func(a, b *state, depth int) {
		num, den := int64(b.cost-a.cost), int64(b.covered-a.covered)
		if den <= 0 || depth >= maxDepth {
			return
		}
		m := s.closureBetween(base, a, b, num, den)
		defer s.releaseState(m)
		if num*int64(m.covered)-den*int64(m.cost) == num*int64(a.covered)-den*int64(a.cost) {
			return
		}
		walk(a, m, depth+1)
		out = append(out, point(m))
		walk(m, b, depth+1)
	}
	hi := s.closureBetween(base, base, nil, allCost, 1)
	out = append(out, point(base))
	walk(base, hi, 0)
	if hi.covered != base.covered || hi.cost != base.cost {
		out = append(out, point(hi))
	}
	return out
}

// cutScratch is closureBetween's graph, kept by its solver between cuts.
type cutScratch struct {
	flow
	deg         []int32
	sigs, tools []int
}

// grow returns *b resized to n, reallocated only when its capacity is
// short; the content is not kept.
func grow[T any](b *[]T, n int) []T {
	if cap(*b) < n {
		*b = make([]T, n)
	}
	*b = (*b)[:n]
	return *b
}

// flow is Dinic's maximum flow. Edges are added to per-node linked lists,
// then compact lays each node's arcs out contiguously, in the lists'
// order: the flow found is the same, and scanning a node's arcs reads
// memory in order.
type flow struct {
	head  []int32 // while building
	next  []int32 // while building
	start []int32 // node u's arcs are start[u]:start[u+1]
	to    []int32
	rev   []int32 // the reverse of each arc
	cap   []int64
	level []int32
	iter  []int32
	queue []int32 // bfs's
	seen  []bool  // reachable's, reused when not nil
	stack []int32 // reachable's
}

func newFlow(n int) *flow {
	f := &flow{head: make([]int32, n), level: make([]int32, n), iter: make([]int32, n)}
	for i := range f.head {
		f.head[i] = -1
	}
	return f
}

func (f *flow) edge(u, v int, c int64) {
	f.to = append(f.to, int32(v), int32(u))
	f.cap = append(f.cap, c, 0)
	f.next = append(f.next, f.head[u], f.head[v])
	f.head[u] = int32(len(f.to) - 2)
	f.head[v] = int32(len(f.to) - 1)
}

// compact ends building: it lays the arcs out by node and returns each
// edge's arc.
func (f *flow) compact() []int32 {
	n := len(f.head)
	arc := make([]int32, len(f.to))
	f.start = make([]int32, n+1)
	k := int32(0)
	for u := range n {
		f.start[u] = k
		for e := f.head[u]; e >= 0; e = f.next[e] {
			arc[e] = k
			k++
		}
	}
	f.start[n] = k
	to, cp, rev := make([]int32, len(f.to)), make([]int64, len(f.to)), make([]int32, len(f.to))
	for e, a := range arc {
		to[a], cp[a], rev[a] = f.to[e], f.cap[e], arc[e^1]
	}
	f.to, f.cap, f.rev, f.head, f.next = to, cp, rev, nil, nil
	return arc
}

func (f *flow) bfs(s, t int) bool {
	for i := range f.level {
		f.level[i] = -1
	}
	// Each node is queued at most once: the queue is one array, reused.
	q := append(f.queue[:0], int32(s))
	f.level[s] = 0
	for h := 0; h < len(q); h++ {
		u := q[h]
		for a := f.start[u]; a < f.start[u+1]; a++ {
			if v := f.to[a]; f.cap[a] > 0 && f.level[v] < 0 {
				f.level[v] = f.level[u] + 1
				q = append(q, v)
			}
		}
	}
	f.queue = q
	return f.level[t] >= 0
}

func (f *flow) dfs(u, t int32, pushed int64) int64 {
	if u == t {
		return pushed
	}
	for ; f.iter[u] < f.start[u+1]; f.iter[u]++ {
		a := f.iter[u]
		v := f.to[a]
		if f.cap[a] > 0 && f.level[v] == f.level[u]+1 {
			if d := f.dfs(v, t, min(pushed, f.cap[a])); d > 0 {
				f.cap[a] -= d
				f.cap[f.rev[a]] += d
				return d
			}
		}
	}
	return 0
}

func (f *flow) maxflow(s, t int) int64 {
	var total int64
	for f.bfs(s, t) {
		copy(f.iter, f.start)
		for {
			d := f.dfs(int32(s), int32(t), int64(1)<<62)
			if d == 0 {
				break
			}
			total += d
		}
	}
	return total
}

// reachable marks the nodes reachable from s in the residual graph: the
// source side of a minimum cut (the smallest one).
func (f *flow) reachable(s int) []bool {
	seen := grow(&f.seen, len(f.level))
	clear(seen)
	seen[s] = true
	stack := append(f.stack[:0], int32(s))
	defer func() { f.stack = stack[:0] }()
	for len(stack) > 0 {
		u := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		for a := f.start[u]; a < f.start[u+1]; a++ {
			if v := f.to[a]; f.cap[a] > 0 && !seen[v] {
				seen[v] = true
				stack = append(stack, v)
			}
		}
	}
	return seen
}
