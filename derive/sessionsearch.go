package derive

import (
	"encoding/binary"
	"math"
	"slices"
)

// The session-cost local search tries, in each round, every single-tool
// move and every signature's missing tools from the best set so far.
// Pricing a try from scratch reads every path, so a round costs tries ×
// paths. Instead a pricer keeps, for the round's set, each path's first
// refused step and the summed cost in exact integer coefficients of the
// cache multipliers (a session's cost is Write·a + Read·b with integers a
// and b), and prices a try from the paths that contain a tool it toggles.
//
// The floating-point total the search compares (costModel.total, summed
// in path order) differs from the exact value by at most a rounding bound
// the pricer also computes. Only tries whose exact value is within that
// bound of winning the round are priced again by costModel.total, and the
// winner is chosen among them by the same comparison as before, so the
// search makes the same choices as pricing every try from scratch, with the
// same totals.

// sessionSearchSteps bounds the incremental search in elementary steps
// (path steps and tool occurrences read, paths priced), checked at every
// try, so a round on a large instance is bounded too. The round budget in
// paths priced (sessionSearchWork) is counted as from-scratch pricing would
// count it, so both choose the same moves; this cap stops a round early
// only beyond that.
const sessionSearchSteps = 4e8

// occurrence is a tool's first step in a path.
type occurrence struct{ path, step int32 }

// coeffs is an exact cost: Write·(set·aw + fw) + Read·(set·ard + frd)
// for a set of set tokens; neg is the part of frd's magnitude subtracted
// (it bounds rounding in absolute terms).
type coeffs struct{ aw, ard, fw, frd, neg int64 }

func (c coeffs) plus(d coeffs) coeffs {
	return coeffs{c.aw + d.aw, c.ard + d.ard, c.fw + d.fw, c.frd + d.frd, c.neg + d.neg}
}

func (c coeffs) minus(d coeffs) coeffs {
	return coeffs{c.aw - d.aw, c.ard - d.ard, c.fw - d.fw, c.frd - d.frd, c.neg - d.neg}
}

// pricer prices tries against one set: in, of set tokens.
type pricer struct {
	m     *costModel
	occ   [][]occurrence // tool -> its first step in each path having it
	first []int32        // path -> its first step whose tool in lacks
	cur   []coeffs       // path -> its contrib at first
	// refused holds, per tool, the paths whose first step in lacks is
	// that tool's: of its occurrences, the only ones adding it changes.
	refused [][]occurrence
	in      []bool
	set     int64
	sum     coeffs
	// gamma times a cost's absolute coefficients bounds how far both
	// costModel.total and value may be from the exact cost.
	gamma float64
	mark  []int32 // tool -> stamp of the try adding it
	stamp int32
	steps int // elementary steps taken
	limit int // steps after which the search ends, within its round
	// added holds, for the round's set, what addMissing found for each
	// list of tools priced, with the steps it took, so that a list met
	// again (signatures missing the same tools) is not priced again but
	// counts the same steps; nil prices every list.
	added map[uint64]addedPrice
	// split is the fewest tries in a round priced on two cores.
	split int
}

type addedPrice struct {
	sum   coeffs
	set   int64
	steps int
}

// newPricer returns nil when the exact coefficients could overflow or a
// step's turn is negative: the search then prices from scratch.
func newPricer(m *costModel) *pricer {
	pr := &pricer{m: m, occ: make([][]occurrence, len(m.tok)), refused: make([][]occurrence, len(m.tok)), first: make([]int32, len(m.paths)), cur: make([]coeffs, len(m.paths)), mark: make([]int32, len(m.tok)), limit: sessionSearchSteps,
		added: map[uint64]addedPrice{}, split: parallelTries}
	g := float64(m.cache.Growth)
	bound, maxTurns := 0.0, 0
	for i, p := range m.paths {
		if p.Turns < 0 {
			return nil
		}
		maxTurns = max(maxTurns, p.Turns)
		t := float64(p.Turns) + 2
		bound += float64(p.weight) * ((2*float64(m.full)+1)*t + 2*g*t*t)
		for j, s := range p.Steps {
			if s.Turn < 0 || s.Tool < 0 || s.Tool >= len(m.tok) {
				return nil
			}
			if slices.ContainsFunc(p.Steps[:j], func(o Step) bool { return o.Tool == s.Tool }) {
				continue
			}
			pr.occ[s.Tool] = append(pr.occ[s.Tool], occurrence{int32(i), int32(j)})
		}
	}
	if bound > 1<<61 || len(m.paths) > math.MaxInt32 {
		return nil
	}
	// Rounding: each session's cost is a few operations and its growth a
	// sum over turns, the total a sum over paths; twice the textbook
	// bound gamma(k) = k·u/(1-k·u) leaves room for the bound's own
	// arithmetic.
	const u = 0x1p-53
	k := float64(len(m.paths) + 2*maxTurns + 32)
	pr.gamma = 2 * k * u / (1 - k*u)
	return pr
}

// contrib is path i's weighted cost when its first refused step is k.
func (pr *pricer) contrib(i int, k int32) coeffs {
	p := &pr.m.paths[i]
	r, t := int64(p.Turns), int64(p.Turns)
	if int(k) < len(p.Steps) {
		r = min(int64(p.Steps[k].Turn), t)
	}
	full, g, w := int64(pr.m.full), int64(pr.m.cache.Growth), int64(p.weight)
	var c coeffs
	if t > 1 {
		c.fw = g * (t - 1)
		c.frd = g * (t - 1) * (t - 2) / 2
	}
	if r > 0 {
		c.aw, c.ard = 1, r-1
	}
	if r < t {
		c.fw += full
		c.frd += full * (t - 1 - r)
	}
	if r > 0 && r < t {
		c.fw += g * (r - 1)
		c.frd -= g * (r - 1)
		c.neg = g * (r - 1)
	}
	return coeffs{w * c.aw, w * c.ard, w * c.fw, w * c.frd, w * c.neg}
}

// reset makes in the set tries are priced against.
func (pr *pricer) reset(in []bool) {
	pr.in, pr.set, pr.sum = in, 0, coeffs{}
	if pr.added != nil {
		clear(pr.added)
	}
	for t := range pr.refused {
		pr.refused[t] = pr.refused[t][:0]
	}
	for t, ok := range in {
		if ok {
			pr.set += int64(pr.m.tok[t])
		}
	}
	for i := range pr.m.paths {
		p := &pr.m.paths[i]
		k := int32(0)
		for int(k) < len(p.Steps) && in[p.Steps[k].Tool] {
			k++
		}
		pr.first[i] = k
		if int(k) < len(p.Steps) {
			t := p.Steps[k].Tool
			pr.refused[t] = append(pr.refused[t], occurrence{int32(i), k})
		}
		pr.cur[i] = pr.contrib(i, k)
		pr.sum = pr.sum.plus(pr.cur[i])
		pr.steps += int(k) + 1
	}
}

// value is the cost c stands for under a set of set tokens, and a bound on
// how far it and costModel.total may each be from the exact cost (so at
// most twice the bound from each other).
func (pr *pricer) value(c coeffs, set int64) (v, bound float64) {
	w, rd := pr.m.cache.Write, pr.m.cache.Read
	x, y := float64(set*c.aw+c.fw), float64(set*c.ard+c.frd)
	v = w*x + rd*y
	return v, pr.gamma * (w*x + rd*(y+2*float64(c.neg)))
}

// add prices the set with tools (none of them in it) added.
func (pr *pricer) add(tools []int) (coeffs, int64) {
	pr.stamp++
	set := pr.set
	for _, t := range tools {
		pr.mark[t] = pr.stamp
		set += int64(pr.m.tok[t])
	}
	sum := pr.sum
	for _, t := range tools {
		// Counted as a scan of every occurrence, so that the step limit
		// stops the search where it always has.
		pr.steps += len(pr.occ[t])
		for _, o := range pr.refused[t] {
			steps := pr.m.paths[o.path].Steps
			k := o.step + 1
			for int(k) < len(steps) && (pr.in[steps[k].Tool] || pr.mark[steps[k].Tool] == pr.stamp) {
				k++
			}
			pr.steps += int(k - o.step)
			sum = sum.plus(pr.contrib(int(o.path), k)).minus(pr.cur[o.path])
		}
	}
	return sum, set
}

// addMissing is add of tools (sorted), remembered for the round when
// they are few enough to pack into one key.
func (pr *pricer) addMissing(tools []int) (coeffs, int64) {
	key, ok := packTools(tools)
	if pr.added == nil || !ok {
		return pr.add(tools)
	}
	if a, ok := pr.added[key]; ok {
		pr.steps += a.steps
		return a.sum, a.set
	}
	before := pr.steps
	sum, set := pr.add(tools)
	pr.added[key] = addedPrice{sum, set, pr.steps - before}
	return sum, set
}

// packTools packs up to four tools below 0xffff into one key, each plus
// one so that no list packs as another.
func packTools(tools []int) (uint64, bool) {
	if len(tools) > 4 {
		return 0, false
	}
	var key uint64
	for _, t := range tools {
		if t < 0 || t >= 0xffff {
			return 0, false
		}
		key = key<<16 | uint64(t+1)
	}
	return key, true
}

// remove prices the set with tool t (in it) removed.
func (pr *pricer) remove(t int) (coeffs, int64) {
	sum := pr.sum
	pr.steps += len(pr.occ[t])
	for _, o := range pr.occ[t] {
		if k := pr.first[o.path]; o.step < k {
			sum = sum.plus(pr.contrib(int(o.path), o.step)).minus(pr.cur[o.path])
		}
	}
	return sum, pr.set - int64(pr.m.tok[t])
}

// sessionMove is one try of a round: remove or add tool, or add the
// missing tools of signature sig (tool < 0).
type sessionMove struct {
	tool, sig int
	remove    bool
}

func (mv sessionMove) apply(st *state) {
	switch {
	case mv.tool < 0:
		st.addSig(mv.sig)
	case mv.remove:
		st.remove(mv.tool)
	default:
		st.add(mv.tool)
	}
}

// sessionCand is a set with its total as costModel.total prices it.
type sessionCand struct {
	st   *state
	cost float64
}

// sessionBetter orders sets by cost, then fewer tools, then the smaller
// tool list.
func sessionBetter(a, b sessionCand) bool {
	if a.cost != b.cost {
		return a.cost < b.cost
	}
	ta, tb := a.st.tools(), b.st.tools()
	if len(ta) != len(tb) {
		return len(ta) < len(tb)
	}
	return slices.Compare(ta, tb) < 0
}

// sessionRounds calls round for each round of the local search from best
// while work (in paths priced from scratch) lasts; round tries moves by
// calling try with each and returns the best set better than best, if any.
func sessionRounds(s *solver, g goal, m *costModel, best sessionCand, work int, round func(best sessionCand, try func(sessionMove)) (*sessionCand, bool)) (sessionCand, bool) {
	improved := false
	for work > 0 {
		next, stop := round(best, func(sessionMove) { work -= len(m.paths) })
		if next == nil {
			break
		}
		best, improved = *next, true
		if stop {
			break
		}
	}
	return best, improved
}

// sessionMoves calls try with each move of a round from st, in a fixed order;
// try returns false to stop the round.
func sessionMoves(s *solver, g goal, st *state, try func(sessionMove) bool) {
	for t := range s.costs {
		switch {
		case s.denied[t] || s.pinned[t]:
		case st.in[t]:
			if st.covered-st.loss(t) >= g.need && !try(sessionMove{tool: t, remove: true}) {
				return
			}
		default:
			if !try(sessionMove{tool: t}) {
				return
			}
		}
	}
	for i := range s.sigs {
		if st.missCount[i] > 1 && !try(sessionMove{tool: -1, sig: i}) {
			return
		}
	}
}

// searchScratch is the local search pricing every try from scratch: the
// reference the incremental search must equal.
func searchScratch(s *solver, g goal, m *costModel, best sessionCand, work int) (sessionCand, bool) {
	return sessionRounds(s, g, m, best, work, func(best sessionCand, count func(sessionMove)) (*sessionCand, bool) {
		var next *sessionCand
		sessionMoves(s, g, best.st, func(mv sessionMove) bool {
			count(mv)
			st := best.st.clone()
			mv.apply(st)
			if !g.feasible(st) {
				return true
			}
			k := sessionCand{st, m.total(st.in)}
			if sessionBetter(k, best) && (next == nil || sessionBetter(k, *next)) {
				next = &k
			}
			return true
		})
		return next, false
	})
}

// searchIncremental is searchScratch with tries priced by pr. Every try
// adds tools or removes one whose loss keeps the need, so from a feasible
// best every try is feasible, as searchScratch finds by checking.
func searchIncremental(s *solver, g goal, m *costModel, pr *pricer, best sessionCand, work int) (sessionCand, bool) {
	type priced struct {
		mv     sessionMove
		lo, hi float64 // bounds on the try's exact cost
	}
	var tries []priced
	var moves []sessionMove
	var prices []tryPrice
	// A round's tries are priced in two halves, one per core, each by a
	// copy of pr with its own scratch; the steps each took are then
	// counted in order, so the round stops at the try it always has.
	var workers [2]*pricer
	for i := range workers {
		w := *pr
		w.mark = make([]int32, len(pr.mark))
		if pr.added != nil {
			w.added = map[uint64]addedPrice{}
		}
		workers[i] = &w
	}
	return sessionRounds(s, g, m, best, work, func(best sessionCand, count func(sessionMove)) (*sessionCand, bool) {
		pr.reset(best.st.in)
		moves = moves[:0]
		sessionMoves(s, g, best.st, func(mv sessionMove) bool {
			moves = append(moves, mv)
			return true
		})
		prices = slices.Grow(prices[:0], len(moves))[:len(moves)]
		// Steps past this many would stop the round before the try.
		left := pr.limit - pr.steps
		half := len(moves) / 2
		if len(moves) < pr.split {
			half = len(moves)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			workers[1].priceTries(pr, s, best.st, moves[half:], prices[half:], left)
		}()
		workers[0].priceTries(pr, s, best.st, moves[:half], prices[:half], left)
		<-done
		tries = tries[:0]
		stop := false
		for i, mv := range moves {
			count(mv)
			pr.steps += prices[i].steps
			tries = append(tries, priced{mv, prices[i].lo, prices[i].hi})
			if stop = pr.steps > pr.limit; stop {
				break
			}
		}
		// The winner's exact cost is at most every try's upper bound and
		// at most best's total (which is within the bound of exact): only
		// tries whose lower bound reaches both can win.
		ceil := best.cost
		if len(tries) > 0 {
			ceil = min(ceil, slices.MinFunc(tries, func(a, b priced) int { return cmpFloat(a.hi, b.hi) }).hi)
		}
		// Signatures missing the same tools are the same try; the first
		// wins ties, as in searchScratch.
		seen := map[string]bool{}
		var key []byte
		var next *sessionCand
		for _, k := range tries {
			if k.lo > ceil || k.lo > best.cost {
				continue
			}
			if k.mv.tool < 0 {
				key = key[:0]
				for _, t := range s.sigs[k.mv.sig].Tools {
					if !best.st.in[t] {
						key = binary.AppendUvarint(key, uint64(t))
					}
				}
				if seen[string(key)] {
					continue
				}
				seen[string(key)] = true
			}
			st := best.st.clone()
			k.mv.apply(st)
			pr.steps += len(m.paths)
			c := sessionCand{st, m.total(st.in)}
			if sessionBetter(c, best) && (next == nil || sessionBetter(c, *next)) {
				next = &c
			}
		}
		return next, stop
	})
}

// parallelTries is the fewest tries in a round worth pricing on two
// cores.
const parallelTries = 512

// tryPrice is one try's bounds and the steps pricing it took.
type tryPrice struct {
	lo, hi float64
	steps  int
}

// priceTries prices moves from st against the round's pricer round (w is
// a copy of it with its own scratch) into out, stopping once its steps
// pass left: a round counts them in order, so no later try of this share
// is reached.
func (w *pricer) priceTries(round *pricer, s *solver, st *state, moves []sessionMove, out []tryPrice, left int) {
	w.in, w.set, w.sum, w.steps = round.in, round.set, round.sum, 0
	if w.added != nil {
		clear(w.added)
	}
	var missing []int
	for i, mv := range moves {
		before := w.steps
		var sum coeffs
		var set int64
		switch {
		case mv.tool < 0:
			missing = missing[:0]
			for _, t := range s.sigs[mv.sig].Tools {
				if !st.in[t] {
					missing = append(missing, t)
				}
			}
			sum, set = w.addMissing(missing)
		case mv.remove:
			sum, set = w.remove(mv.tool)
		default:
			sum, set = w.add([]int{mv.tool})
		}
		v, e := w.value(sum, set)
		out[i] = tryPrice{v - 2*e, v + 2*e, w.steps - before}
		if w.steps > left {
			return
		}
	}
}

func cmpFloat(a, b float64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
