package derive

import (
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
)

// Signature is one distinct set of tools sessions used, with the number of
// sessions that used exactly that set.
type Signature struct {
	Tools  []int // tool indices, sorted, distinct, non-empty
	Weight int   // sessions
}

// Problem is a weighted set-union knapsack instance over tools 0..len(Costs)-1.
type Problem struct {
	Costs []int       // token cost of each tool
	Sigs  []Signature // distinct tool sets with their session counts
	Free  int         // sessions with no tool call: covered by every tool set
	// Uncoverable counts sessions no tool set covers (they called a tool
	// the catalog lacks): they count in every share's denominator.
	Uncoverable int
	Pinned      []int // tools forced in (their cost counts)
	Denied      []int // tools forced out; signatures needing one are uncoverable
}

// Options tunes the solver. The zero value is the documented default.
type Options struct {
	// ExactWork bounds the enumeration used when an instance is small: the
	// solver enumerates exactly when 2^k * signatures <= ExactWork, with k
	// the smaller of the free tool and signature counts. 0 means 1<<25;
	// a negative value disables enumeration (tests use it to measure the
	// heuristic alone).
	ExactWork int
	// SearchWork bounds the destroy-and-repair local search in elementary
	// steps (posting-list entries and signatures scanned), so that running
	// time is bounded and deterministic; on large instances it cuts the
	// search short. 0 means 2e7.
	SearchWork int
}

// Solution is a tool set with its cost and the sessions it covers.
type Solution struct {
	Tools   []int // sorted tool indices
	Cost    int   // sum of tool costs, pinned tools included
	Covered int   // sessions covered, Free included
	Total   int   // all sessions, uncoverable ones included
	Need    int   // sessions to cover (target mode), 0 in budget mode
	// Feasible is false when the target cannot be reached (denied tools
	// make too many sessions uncoverable) or the pinned tools alone exceed
	// the budget; the solution is then the best effort.
	Feasible bool
	Method   string // which candidate won: exact, lagrangian, greedy, topk
	// LowerBound (target mode, feasible) is a cost no set covering Need
	// sessions can beat: the convex hull of the frontier at Need,
	// interpolated between the two Lagrangian corners around it (the cost
	// itself when solved exactly). Cost/LowerBound bounds the optimality
	// gap.
	LowerBound int
	// SessionCost (SolveSession) is the mean expected cost per session
	// with prompt caching that the set was chosen by; 0 otherwise.
	SessionCost float64
}

// Share returns Covered/Total, or NaN when there are no sessions.
func (s Solution) Share() float64 {
	if s.Total == 0 {
		return math.NaN()
	}
	return float64(s.Covered) / float64(s.Total)
}

// Need returns the number of sessions, out of total, that covering a share
// target of them means: the smallest integer >= target*total.
func Need(target float64, total int) int {
	n := int(math.Ceil(target*float64(total) - 1e-9))
	return min(max(n, 0), total)
}

// solver holds the preprocessed instance shared by all candidate searches.
type solver struct {
	costs   []int
	sigs    []Signature // coverable signatures only
	w       []int
	posting [][]int32 // tool -> signatures containing it
	pinned  []bool
	denied  []bool
	free    int // sessions needing no tool: Free and empty signatures
	total   int
	opt     Options
	work    int // remaining destroy-and-repair budget
	cg      *closureGraph
	node    []int32 // closureBetween's tool -> node, zero between calls
	// fullCuts makes closureBetween cut the whole graph, as closure
	// does: tests compare the two.
	fullCuts bool
	// base is the state of the pinned tools alone, which newState copies
	// (nil until the first call), and basePinned the work adding them
	// charges.
	base       *state
	basePinned int
	gs         greedyScratch
	cut        cutScratch
	spares     []*state // states released to takeState
	// repairs is how many destroy-and-repair tries improve makes at once
	// (repairTries on a large instance with cores to spare, else 1).
	repairs int
	// restored counts the batches of perturbation rounds improve cut
	// short at an improving round, setting the generator back (tests
	// check such searches too).
	restored int
}

// greedyScratch is greedy's working memory, kept by its solver between
// calls: greedy runs many times on one instance, and allocating it per call
// was most of the garbage a large derivation made.
type greedyScratch struct {
	stamp, hits []int32 // per signature; a stamp below cur is stale
	cur         int32
	live        []int32
	top         []cand
	union       []bool // per tool, for the work of an unbuilt alternative
}

func newSolver(p Problem, opt Options) (*solver, error) {
	n := len(p.Costs)
	s := &solver{costs: p.Costs, pinned: make([]bool, n), denied: make([]bool, n), free: p.Free, opt: opt}
	if s.opt.ExactWork == 0 {
		s.opt.ExactWork = 1 << 25
	}
	if s.opt.SearchWork == 0 {
		s.opt.SearchWork = 2e7
	}
	s.work = s.opt.SearchWork
	s.repairs = 1
	if len(p.Sigs) >= repairParallelSigs && runtime.GOMAXPROCS(0) > 1 {
		s.repairs = repairTries
	}
	for i, c := range p.Costs {
		if c < 0 {
			return nil, fmt.Errorf("tool %d: negative cost %d", i, c)
		}
	}
	for _, t := range p.Denied {
		if t < 0 || t >= n {
			return nil, fmt.Errorf("denied tool index %d out of range [0,%d)", t, n)
		}
		s.denied[t] = true
	}
	for _, t := range p.Pinned {
		if t < 0 || t >= n {
			return nil, fmt.Errorf("pinned tool index %d out of range [0,%d)", t, n)
		}
		if s.denied[t] {
			return nil, fmt.Errorf("tool %d is both pinned and denied", t)
		}
		s.pinned[t] = true
	}
	if p.Uncoverable < 0 {
		return nil, fmt.Errorf("uncoverable sessions %d: want a count >= 0", p.Uncoverable)
	}
	s.total = p.Free + p.Uncoverable
	// Two passes: the first checks and counts, so that the second fills
	// tables sized exactly (a large instance has tens of thousands of
	// signatures, and Derive builds several solvers of one).
	keep := make([]bool, len(p.Sigs))
	count := make([]int32, n)
	kept := 0
sigs:
	for j, sg := range p.Sigs {
		if sg.Weight < 0 {
			return nil, fmt.Errorf("signature %v: negative weight", sg.Tools)
		}
		s.total += sg.Weight
		if sg.Weight == 0 {
			continue
		}
		for _, t := range sg.Tools {
			if t < 0 || t >= n {
				return nil, fmt.Errorf("signature tool index %d out of range [0,%d)", t, n)
			}
			if s.denied[t] {
				continue sigs
			}
		}
		if len(sg.Tools) == 0 {
			s.free += sg.Weight
			continue
		}
		keep[j] = true
		kept++
		for _, t := range sg.Tools {
			count[t]++
		}
	}
	s.sigs, s.w = make([]Signature, 0, kept), make([]int, 0, kept)
	s.posting = make([][]int32, n)
	entries := 0
	for _, c := range count {
		entries += int(c)
	}
	all := make([]int32, 0, entries)
	for t := range n {
		s.posting[t] = all[len(all) : len(all) : len(all)+int(count[t])]
		all = all[:len(all)+int(count[t])]
	}
	for j, sg := range p.Sigs {
		if !keep[j] {
			continue
		}
		idx := int32(len(s.sigs))
		s.sigs = append(s.sigs, sg)
		s.w = append(s.w, sg.Weight)
		for _, t := range sg.Tools {
			s.posting[t] = append(s.posting[t], idx)
		}
	}
	return s, nil
}

// state is a tool set with incrementally maintained coverage.
type state struct {
	s         *solver
	in        []bool
	missCount []int32
	missCost  []int
	covered   int
	cost      int
}

// newState returns the state of the pinned tools alone, charging the work
// of adding them. The first call builds it; later ones copy it.
func (s *solver) newState() *state { return s.newStateIn(&state{}) }

// newStateIn is newState in dst's memory.
func (s *solver) newStateIn(dst *state) *state {
	if s.base == nil {
		st := &state{s: s, in: make([]bool, len(s.costs)), missCount: make([]int32, len(s.sigs)), missCost: make([]int, len(s.sigs)), covered: s.free}
		for i, sg := range s.sigs {
			st.missCount[i] = int32(len(sg.Tools))
			for _, t := range sg.Tools {
				st.missCost[i] += s.costs[t]
			}
		}
		work := s.work
		for t, p := range s.pinned {
			if p {
				st.add(t)
			}
		}
		s.base, s.basePinned = st, work-s.work
	} else {
		s.work -= s.basePinned
	}
	dst.copyFrom(s.base)
	return dst
}

func (st *state) clone() *state {
	return &state{s: st.s, in: slices.Clone(st.in), missCount: slices.Clone(st.missCount), missCost: slices.Clone(st.missCost), covered: st.covered, cost: st.cost}
}

// copyFrom makes st a copy of o, reusing st's memory.
func (st *state) copyFrom(o *state) {
	st.s, st.covered, st.cost = o.s, o.covered, o.cost
	st.in = append(st.in[:0], o.in...)
	st.missCount = append(st.missCount[:0], o.missCount...)
	st.missCost = append(st.missCost[:0], o.missCost...)
}

func (st *state) add(t int) {
	if st.in[t] {
		return
	}
	st.in[t] = true
	c := st.s.costs[t]
	st.cost += c
	for _, i := range st.s.posting[t] {
		st.missCount[i]--
		st.missCost[i] -= c
		if st.missCount[i] == 0 {
			st.covered += st.s.w[i]
		}
	}
	st.s.work -= len(st.s.posting[t])
}

func (st *state) remove(t int) {
	if !st.in[t] {
		return
	}
	st.in[t] = false
	c := st.s.costs[t]
	st.cost -= c
	for _, i := range st.s.posting[t] {
		if st.missCount[i] == 0 {
			st.covered -= st.s.w[i]
		}
		st.missCount[i]++
		st.missCost[i] += c
	}
	st.s.work -= len(st.s.posting[t])
}

// loss is the coverage lost by removing t.
func (st *state) loss(t int) int {
	l := 0
	for _, i := range st.s.posting[t] {
		if st.missCount[i] == 0 {
			l += st.s.w[i]
		}
	}
	return l
}

func (st *state) addSig(i int) {
	for _, t := range st.s.sigs[i].Tools {
		st.add(t)
	}
}

func (st *state) tools() []int {
	var out []int
	for t, in := range st.in {
		if in {
			out = append(out, t)
		}
	}
	return out
}

// goal is what a search aims at: reach need sessions at least cost (target
// mode) or cover the most sessions within budget (budget mode).
type goal struct {
	need   int // target mode when budget < 0
	budget int // budget mode when >= 0
}

func (g goal) feasible(st *state) bool {
	if g.budget >= 0 {
		return st.cost <= g.budget
	}
	return st.covered >= g.need
}

// better reports whether a beats b: feasibility first, then cost (target
// mode) or coverage (budget mode), then the other figure, then fewer tools,
// then the lexicographically smaller tool list, so that results are
// deterministic.
func (g goal) better(a, b *Solution) bool {
	if a.Feasible != b.Feasible {
		return a.Feasible
	}
	primA, primB, secA, secB := a.Cost, b.Cost, -a.Covered, -b.Covered
	if g.budget >= 0 || !a.Feasible {
		primA, primB, secA, secB = -a.Covered, -b.Covered, a.Cost, b.Cost
	}
	if primA != primB {
		return primA < primB
	}
	if secA != secB {
		return secA < secB
	}
	if len(a.Tools) != len(b.Tools) {
		return len(a.Tools) < len(b.Tools)
	}
	return slices.Compare(a.Tools, b.Tools) < 0
}

func (s *solver) solution(st *state, g goal, method string) *Solution {
	return &Solution{Tools: st.tools(), Cost: st.cost, Covered: st.covered, Total: s.total, Need: max(g.need, 0), Feasible: g.feasible(st), Method: method}
}

// greedyCandidates is how many signatures, ranked by their own weight per
// missing token, get their exact coverage gain computed at each greedy step
// (fewer on large instances, where computing a gain walks long posting
// lists).
const (
	greedyCandidates      = 64
	greedyCandidatesLarge = 16
	largeInstance         = 8192 // signatures
)

type cand struct {
	i    int
	gain int
	cost int
}

// ratioBetter orders by gain/cost descending without division (zero cost
// first), then by gain, then by index.
func ratioBetter(a, b cand) bool {
	l, r := int64(a.gain)*int64(b.cost), int64(b.gain)*int64(a.cost)
	if l != r {
		return l > r
	}
	if a.gain != b.gain {
		return a.gain > b.gain
	}
	return a.i < b.i
}

// greedy adds whole signatures to st, best coverage gained per marginal
// token first, until g is met (target mode) or nothing more fits (budget
// mode). banned tools are never added. In target mode, with wantAlt, it
// also returns the best "finishing" alternative seen on the way, when it is
// cheaper than where greedy ended: the state before some step plus the
// cheapest single signature that reaches need from there (nil otherwise).
// Without wantAlt the alternative is not built, but the work building it
// charges is charged all the same, so that the work budget runs out where
// it always has.
func (s *solver) greedy(st *state, g goal, banned []bool, wantAlt bool) (alt *state) {
	sc := &s.gs
	if len(sc.stamp) != len(s.sigs) {
		sc.stamp, sc.hits, sc.cur = make([]int32, len(s.sigs)), make([]int32, len(s.sigs)), 0
	}
	stamp, hits := sc.stamp, sc.hits
	gain := func(i int) int {
		if sc.cur == math.MaxInt32 {
			clear(stamp)
			sc.cur = 0
		}
		sc.cur++
		cur := sc.cur
		sum := 0
		for _, t := range s.sigs[i].Tools {
			if st.in[t] {
				continue
			}
			for _, u := range s.posting[t] {
				if st.missCount[u] == 0 {
					continue
				}
				if stamp[u] != cur {
					stamp[u], hits[u] = cur, 0
				}
				hits[u]++
				if hits[u] == st.missCount[u] {
					sum += s.w[u]
				}
			}
			s.work -= len(s.posting[t])
		}
		return sum
	}
	// live holds the signatures still worth scanning: uncovered, and not
	// needing a banned tool (banned tools are never added, so that test is
	// made once). Covered ones are compacted away as steps go.
	live := sc.live[:0]
sigs:
	for i := range s.sigs {
		if st.missCount[i] == 0 {
			continue
		}
		if banned != nil {
			for _, t := range s.sigs[i].Tools {
				if banned[t] && !st.in[t] {
					continue sigs
				}
			}
		}
		live = append(live, int32(i))
	}
	defer func() { sc.live = live[:0] }()
	s.work -= len(s.sigs)
	k := greedyCandidates
	if len(s.sigs) > largeInstance {
		k = greedyCandidatesLarge
	}
	startTools := st.tools()
	var chosen []int
	altStep, altSig, altCost := -1, 0, 0
	top := slices.Grow(sc.top[:0], k+1)
	defer func() { sc.top = top[:0] }()
	for {
		if g.budget < 0 && st.covered >= g.need {
			break
		}
		top = top[:0]
		finish, finishCost := -1, 0
		kept := live[:0]
		for _, i32 := range live {
			i := int(i32)
			if st.missCount[i] == 0 {
				continue
			}
			kept = append(kept, i32)
			if g.budget >= 0 && st.cost+st.missCost[i] > g.budget {
				continue
			}
			c := cand{i: i, gain: s.w[i], cost: st.missCost[i]}
			if len(top) < k || ratioBetter(c, top[len(top)-1]) {
				// Insert in order; top stays sorted best first.
				j := len(top)
				top = append(top, c)
				for j > 0 && ratioBetter(c, top[j-1]) {
					top[j] = top[j-1]
					j--
				}
				top[j] = c
				if len(top) > k {
					top = top[:k]
				}
			}
			if g.budget < 0 && st.covered+s.w[i] >= g.need && (finish < 0 || st.missCost[i] < finishCost) {
				finish, finishCost = i, st.missCost[i]
			}
		}
		s.work -= len(live)
		live = kept
		if len(top) == 0 {
			break
		}
		best := 0
		for j := range top {
			top[j].gain = gain(top[j].i)
			if ratioBetter(top[j], top[best]) {
				best = j
			}
		}
		if finish >= 0 && finish != top[best].i && (altStep < 0 || st.cost+finishCost < altCost) {
			altStep, altSig, altCost = len(chosen), finish, st.cost+finishCost
		}
		chosen = append(chosen, top[best].i)
		st.addSig(top[best].i)
	}
	if altStep < 0 || altCost >= st.cost {
		return nil
	}
	if !wantAlt {
		s.work -= s.altWork(startTools, chosen[:altStep], altSig)
		return nil
	}
	alt = s.newState()
	for _, t := range startTools {
		alt.add(t)
	}
	for _, i := range chosen[:altStep] {
		alt.addSig(i)
	}
	alt.addSig(altSig)
	return alt
}

// altWork is the work greedy charges building its alternative from the
// pinned tools, startTools and the signatures chosen and last: adding a
// tool charges its posting list once, when it first goes in.
func (s *solver) altWork(startTools, chosen []int, last int) int {
	sc := &s.gs
	if len(sc.union) != len(s.costs) {
		sc.union = make([]bool, len(s.costs))
	}
	in := sc.union
	work := 0
	add := func(t int) {
		if !in[t] {
			in[t] = true
			work += len(s.posting[t])
		}
	}
	for t, p := range s.pinned {
		if p {
			add(t)
		}
	}
	for _, t := range startTools {
		add(t)
	}
	for _, i := range chosen {
		for _, t := range s.sigs[i].Tools {
			add(t)
		}
	}
	for _, t := range s.sigs[last].Tools {
		add(t)
	}
	clear(in)
	return work
}

// drop removes tools that are not needed: in target mode any tool whose
// removal keeps need covered (most expensive first); in budget mode tools
// that cover nothing.
func (s *solver) drop(st *state, g goal) {
	for changed := true; changed; {
		changed = false
		ts := st.tools()
		slices.SortStableFunc(ts, func(a, b int) int { return s.costs[b] - s.costs[a] })
		for _, t := range ts {
			if s.pinned[t] {
				continue
			}
			l := st.loss(t)
			if (g.budget < 0 && st.covered-l >= g.need) || (g.budget >= 0 && l == 0) {
				st.remove(t)
				changed = true
			}
		}
	}
}

// improve runs destroy-and-repair local search from st: remove one chosen
// tool, ban it, repair greedily, drop what is unneeded; keep the result if
// it is better. It repeats until no move improves or the work budget runs
// out.
//
// Tries are made s.repairs at a time, each by its own repairer (on its own
// core), as if none before it in the batch improved; they are then taken
// in order, each charging its work only if the budget had not run out
// before it, so that the search takes the steps, and ends where, a search
// of one try at a time does. A try after an improving one is wasted.
func (s *solver) improve(st *state, g goal) *state {
	s.drop(st, g)
	best := s.solution(st, g, "")
	batch := max(1, s.repairs)
	rs := make([]*repairer, batch)
	for i := range rs {
		rs[i] = s.repairer()
	}
	tries := make([]repairTry, batch)
	// run makes the tries of outs at once and returns them.
	run := func(outs [][]int) []repairTry {
		var wg sync.WaitGroup
		for i := 1; i < len(outs); i++ {
			wg.Go(func() { tries[i] = rs[i].try(st, outs[i], g) })
		}
		tries[0] = rs[0].try(st, outs[0], g)
		wg.Wait()
		return tries[:len(outs)]
	}
	// take charges try's work and makes it st if it is better.
	take := func(try repairTry) bool {
		s.work -= try.work
		if sol := s.solution(try.st, g, ""); g.better(sol, best) {
			st.copyFrom(try.st)
			st.s, best = s, sol
			return true
		}
		return false
	}
	outs := make([][]int, 0, batch)
	for improved := true; improved && s.work > 0; {
		improved = false
		var ts []int
		for _, t := range st.tools() {
			if !s.pinned[t] {
				ts = append(ts, t)
			}
		}
		slices.SortStableFunc(ts, func(a, b int) int { return s.costs[b] - s.costs[a] })
	tools:
		for i := 0; i < len(ts) && s.work > 0; i += batch {
			outs = outs[:0]
			for _, t := range ts[i:min(i+batch, len(ts))] {
				outs = append(outs, []int{t})
			}
			for j, try := range run(outs) {
				if j > 0 && s.work <= 0 {
					break tools
				}
				if take(try) {
					improved = true
					break tools
				}
			}
		}
	}
	// Iterated local search: remove two or three tools at random, forbid
	// them, repair, drop; keep if better. The generator is seeded so the
	// result is deterministic. A batch draws its rounds' tools in turn
	// from the same st; after an improving round the generator is set back
	// to its state after that round's draws.
	src := rand.NewPCG(1, uint64(len(s.sigs)))
	r := rand.New(src)
	after := make([]rand.PCG, batch)
	for round := 0; round < perturbRounds; {
		if s.work <= 0 {
			break
		}
		var ts []int
		for _, t := range st.tools() {
			if !s.pinned[t] {
				ts = append(ts, t)
			}
		}
		if len(ts) < 2 {
			break
		}
		outs = outs[:0]
		for j := range min(batch, perturbRounds-round) {
			tj := slices.Clone(ts)
			r.Shuffle(len(tj), func(a, b int) { tj[a], tj[b] = tj[b], tj[a] })
			outs = append(outs, tj[:min(len(tj), 2+r.IntN(2))])
			after[j] = *src
		}
		for j, try := range run(outs) {
			if j > 0 && s.work <= 0 {
				return st
			}
			round++
			if take(try) {
				if j < len(outs)-1 {
					s.restored++
				}
				*src = after[j]
				break
			}
		}
	}
	return st
}

// repairer makes destroy-and-repair tries for improve on its own copy of
// the solver (its work and scratch), so that several run at once.
type repairer struct {
	s      *solver
	banned []bool
	spare  *state
}

// repairTry is a tried state and the work making it charged.
type repairTry struct {
	st   *state
	work int
}

func (s *solver) repairer() *repairer {
	c := *s
	c.gs, c.cut, c.node, c.spares = greedyScratch{}, cutScratch{}, nil, nil
	return &repairer{s: &c, banned: make([]bool, len(s.costs)), spare: &state{}}
}

// try returns st with out removed and banned, repaired greedily and
// dropped, in r's spare state (valid until the next try).
func (r *repairer) try(st *state, out []int, g goal) repairTry {
	try := r.spare
	try.copyFrom(st)
	try.s = r.s
	before := r.s.work
	for _, t := range out {
		try.remove(t)
		r.banned[t] = true
	}
	r.s.greedy(try, g, r.banned, false)
	for _, t := range out {
		r.banned[t] = false
	}
	r.s.drop(try, g)
	return repairTry{try, before - r.s.work}
}

// repairTries is how many destroy-and-repair tries improve makes at once
// on an instance of at least repairParallelSigs signatures: below, a try
// takes too little time to share.
const (
	repairTries        = 2
	repairParallelSigs = 2048
)

// perturbRounds bounds the iterated local search (the work budget may stop
// it sooner).
const perturbRounds = 200

// Solve returns a cheapest tool set covering at least need sessions (see
// Need), or the best effort with Feasible false when denied tools make that
// impossible.
func Solve(p Problem, target float64, opt Options) (*Solution, error) {
	if target < 0 || target > 1 || math.IsNaN(target) {
		return nil, fmt.Errorf("target %v: want a share in [0,1]", target)
	}
	s, err := newSolver(p, opt)
	if err != nil {
		return nil, err
	}
	return s.solve(goal{need: Need(target, s.total), budget: -1}), nil
}

// SolveBudget returns a tool set covering the most sessions at a cost of at
// most budget tokens (pinned tools included).
func SolveBudget(p Problem, budget int, opt Options) (*Solution, error) {
	if budget < 0 {
		return nil, fmt.Errorf("budget %d: want a non-negative token count", budget)
	}
	s, err := newSolver(p, opt)
	if err != nil {
		return nil, err
	}
	return s.solve(goal{budget: budget}), nil
}

func (s *solver) solve(g goal) *Solution {
	if sol := s.exact(g); sol != nil {
		return sol
	}
	var best *Solution
	var bestState *state
	consider := func(st *state, method string) {
		sol := s.solution(st, g, method)
		if best == nil || g.better(sol, best) {
			best, bestState = sol, st
		}
	}
	// Lagrangian bracket: exact optima of the relaxed problem just below
	// and at or above the goal.
	lo, hi, adjacent := s.lagrangianBracket(g)
	lb := 0
	if g.budget < 0 && hi.covered >= g.need && lo.covered < g.need {
		lb = s.newState().cost // the pinned tools, at least
		if adjacent {
			// ceil(lo.cost + (need-lo.covered) * slope)
			num := int64(g.need-lo.covered) * int64(hi.cost-lo.cost)
			den := int64(hi.covered - lo.covered)
			lb = lo.cost + int((num+den-1)/den)
		}
	} else if g.budget < 0 && lo.covered >= g.need {
		lb = lo.cost // the pinned tools alone reach the target
	}
	if g.budget < 0 {
		s.drop(hi, g)
		consider(hi, "lagrangian")
	}
	s.greedy(lo, g, nil, false)
	s.drop(lo, g)
	consider(lo, "lagrangian+greedy")
	// Plain greedy from the pinned tools, with its finishing alternatives.
	gr := s.newState()
	alt := s.greedy(gr, g, nil, true)
	s.drop(gr, g)
	consider(gr, "greedy")
	if alt != nil {
		s.drop(alt, g)
		consider(alt, "greedy")
	}
	// The popularity baseline, so the result is never worse than it.
	tk := s.topK(g)
	s.drop(tk, g)
	consider(tk, "topk")
	method := best.Method
	st := s.improve(bestState, g)
	sol := s.solution(st, g, method)
	if g.better(sol, best) {
		sol.Method = method + "+local"
		best = sol
	}
	best.LowerBound = lb
	return best
}

// popularity returns the tools ranked by the sessions using them (desc),
// ties by index.
func (s *solver) popularity() []int {
	use := make([]int, len(s.costs))
	for t, post := range s.posting {
		for _, i := range post {
			use[t] += s.w[i]
		}
	}
	order := make([]int, 0, len(s.costs))
	for t := range s.costs {
		if !s.denied[t] {
			order = append(order, t)
		}
	}
	slices.SortStableFunc(order, func(a, b int) int { return use[b] - use[a] })
	return order
}

// topK adds tools by popularity until g is met: the smallest k reaching the
// target, or the largest k within the budget.
func (s *solver) topK(g goal) *state {
	st := s.newState()
	for _, t := range s.popularity() {
		if g.budget < 0 && st.covered >= g.need {
			break
		}
		if g.budget >= 0 && !st.in[t] && st.cost+s.costs[t] > g.budget {
			break
		}
		st.add(t)
	}
	return st
}

// TopK is the popularity baseline: tools ranked by the number of sessions
// using them, the smallest k whose top-k set (plus the pinned tools) covers
// target.
func TopK(p Problem, target float64) (*Solution, error) {
	s, err := newSolver(p, Options{})
	if err != nil {
		return nil, err
	}
	g := goal{need: Need(target, s.total), budget: -1}
	return s.solution(s.topK(g), g, "topk"), nil
}

// TopKBudget is the popularity baseline under a token budget: the largest k
// whose top-k set fits.
func TopKBudget(p Problem, budget int) (*Solution, error) {
	s, err := newSolver(p, Options{})
	if err != nil {
		return nil, err
	}
	g := goal{budget: budget}
	return s.solution(s.topK(g), g, "topk"), nil
}

// Evaluate returns the sessions of p covered by tools.
func Evaluate(p Problem, tools []int) (covered, total int) {
	in := make(map[int]bool, len(tools))
	for _, t := range tools {
		in[t] = true
	}
	covered, total = p.Free, p.Free+p.Uncoverable
sigs:
	for _, sg := range p.Sigs {
		total += sg.Weight
		for _, t := range sg.Tools {
			if !in[t] {
				continue sigs
			}
		}
		covered += sg.Weight
	}
	return covered, total
}
