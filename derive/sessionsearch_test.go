package derive

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"pgregory.net/rapid"

	"github.com/toolprof/toolprof/price"
)

// drawPaths draws tools' tokens, weighted paths (steps may repeat a tool
// and turns need not rise, as Path allows) and a cache model.
func drawPaths(t *rapid.T) ([]int, []Path, price.CacheModel) {
	n := rapid.IntRange(1, 8).Draw(t, "tools")
	tok := rapid.SliceOfN(rapid.IntRange(0, 500), n, n).Draw(t, "tok")
	np := rapid.IntRange(1, 40).Draw(t, "paths")
	var paths []Path
	for i := range np {
		p := Path{Turns: rapid.IntRange(0, 12).Draw(t, fmt.Sprint("turns", i))}
		for j := range rapid.IntRange(0, 6).Draw(t, fmt.Sprint("steps", i)) {
			p.Steps = append(p.Steps, Step{
				Tool: rapid.IntRange(0, n-1).Draw(t, fmt.Sprint("tool", i, j)),
				Turn: rapid.IntRange(0, 14).Draw(t, fmt.Sprint("turn", i, j)),
			})
		}
		// Repeats make weights above one.
		for range rapid.IntRange(1, 3).Draw(t, fmt.Sprint("copies", i)) {
			paths = append(paths, p)
		}
	}
	mult := rapid.SampledFrom([]float64{0, 0.1, 0.3, 1, 1.25, 2, 3.7})
	cache := price.CacheModel{Write: mult.Draw(t, "write"), Read: mult.Draw(t, "read"), Growth: rapid.IntRange(0, 60).Draw(t, "growth")}
	return tok, paths, cache
}

// exactCost is costModel.total's sum in exact arithmetic: every path's
// coefficients recomputed from its first refused step under in.
func exactCost(pr *pricer, in []bool) (coeffs, int64) {
	var sum coeffs
	var set int64
	for t, ok := range in {
		if ok {
			set += int64(pr.m.tok[t])
		}
	}
	for i, p := range pr.m.paths {
		k := int32(0)
		for int(k) < len(p.Steps) && in[p.Steps[k].Tool] {
			k++
		}
		sum = sum.plus(pr.contrib(i, k))
	}
	return sum, set
}

// Pricing a try from the paths it changes gives the exact coefficients a
// pricing of every path gives, and a value within the bound of
// costModel.total's.
func TestPricerMatchesScratch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tok, paths, cache := drawPaths(t)
		m := newCostModel(tok, paths, cache)
		pr := newPricer(m)
		if pr == nil {
			t.Fatal("no pricer for a small instance")
		}
		in := rapid.SliceOfN(rapid.Bool(), len(tok), len(tok)).Draw(t, "in")
		pr.reset(in)
		if got, set := exactCost(pr, in); got != pr.sum || set != pr.set {
			t.Fatalf("reset: %+v (set %d), from scratch %+v (set %d)", pr.sum, pr.set, got, set)
		}
		for step := range 6 {
			next := slices.Clone(in)
			var sum coeffs
			var set int64
			if r := rapid.IntRange(0, len(tok)-1).Draw(t, fmt.Sprint("remove", step)); in[r] && rapid.Bool().Draw(t, fmt.Sprint("doRemove", step)) {
				next[r] = false
				sum, set = pr.remove(r)
			} else {
				var add []int
				for u, ok := range in {
					if !ok && rapid.Bool().Draw(t, fmt.Sprint("add", step, u)) {
						add = append(add, u)
						next[u] = true
					}
				}
				sum, set = pr.add(add)
			}
			want, wantSet := exactCost(pr, next)
			if sum != want || set != wantSet {
				t.Fatalf("step %d, %v -> %v: incremental %+v (set %d), from scratch %+v (set %d)", step, in, next, sum, set, want, wantSet)
			}
			v, bound := pr.value(sum, set)
			if got := m.total(next); math.Abs(got-v) > 2*bound {
				t.Fatalf("step %d, %v: value %v, total %v: apart by more than twice the bound %v", step, next, v, got, bound)
			}
			in = next
			pr.reset(in)
		}
	})
}

// drawProblem draws paths and the problem whose signatures are their tool
// sets, as Derive builds them.
func drawProblem(t *rapid.T) (Problem, []Path, price.CacheModel) {
	tok, paths, cache := drawPaths(t)
	p := Problem{Costs: tok}
	bySet := map[string]int{}
	for _, path := range paths {
		var ts []int
		for _, s := range path.Steps {
			ts = append(ts, s.Tool)
		}
		slices.Sort(ts)
		ts = slices.Compact(ts)
		if len(ts) == 0 {
			p.Free++
			continue
		}
		k := fmt.Sprint(ts)
		if i, ok := bySet[k]; ok {
			p.Sigs[i].Weight++
			continue
		}
		bySet[k] = len(p.Sigs)
		p.Sigs = append(p.Sigs, Signature{Tools: ts, Weight: 1})
	}
	if rapid.Bool().Draw(t, "pin") {
		p.Pinned = []int{rapid.IntRange(0, len(tok)-1).Draw(t, "pinned")}
	}
	return p, paths, cache
}

// searchStart is SolveSession's start without the frontier's corners:
// Solve's set at target, priced.
func searchStart(tb interface{ Fatal(...any) }, p Problem, paths []Path, cache price.CacheModel, target float64) (*solver, goal, *costModel, sessionCand, bool) {
	sol, err := Solve(p, target, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	s, err := newSolver(p, Options{})
	if err != nil {
		tb.Fatal(err)
	}
	m := newCostModel(p.Costs, paths, cache)
	st := s.newState()
	for _, t := range sol.Tools {
		st.add(t)
	}
	return s, goal{need: sol.Need, budget: -1}, m, sessionCand{st, m.total(st.in)}, sol.Feasible
}

// The incremental search chooses the sets the from-scratch search chooses,
// with bit-identical totals, whatever the budget (small budgets stop it
// after a round or two, large ones let it converge).
func TestSearchIncrementalMatchesScratch(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, paths, cache := drawProblem(t)
		target := rapid.SampledFrom([]float64{0, 0.5, 0.8, 0.95, 1}).Draw(t, "target")
		s, g, m, start, ok := searchStart(t, p, paths, cache, target)
		if !ok {
			t.Skip("target unreachable")
		}
		work := rapid.SampledFrom([]int{1, len(m.paths) * 3, len(m.paths) * 40, sessionSearchWork}).Draw(t, "work")
		want, wantImproved := searchScratch(s, g, m, sessionCand{start.st.clone(), start.cost}, work)
		got, gotImproved := searchIncremental(s, g, m, newPricer(m), sessionCand{start.st.clone(), start.cost}, work)
		if !slices.Equal(got.st.tools(), want.st.tools()) || math.Float64bits(got.cost) != math.Float64bits(want.cost) || gotImproved != wantImproved {
			t.Fatalf("incremental %v at %v (improved %v), from scratch %v at %v (improved %v)", got.st.tools(), got.cost, gotImproved, want.st.tools(), want.cost, wantImproved)
		}
	})
}

// BenchmarkSolveSession times the session-cost local search on generated
// sessions: scratch prices every try from every path (the reference the
// property test holds the incremental search to), incremental prices each
// try from the paths it changes, remembering also prices each round's
// distinct tool lists once; the ratios in one run are the speed-ups.
func BenchmarkSolveSession(b *testing.B) {
	for _, n := range []int{10_000, 50_000} {
		sessions, tools := generated(b, n)
		sel, _, _ := selectSessions(sessions, indexOf(tools), nil)
		sm := sel.reduce(sel.kept)
		p := Problem{Costs: costsOf(tools), Sigs: sm.sigs, Free: sm.free}
		paths := sel.paths(sel.kept)
		s, g, m, start, _ := searchStart(b, p, paths, price.DefaultCache(), 0.8)
		for _, impl := range []string{"scratch", "incremental", "remembering"} {
			b.Run(fmt.Sprintf("%s/%d", impl, n), func(b *testing.B) {
				for b.Loop() {
					best := sessionCand{start.st.clone(), start.cost}
					pr := newPricer(m)
					switch impl {
					case "scratch":
						searchScratch(s, g, m, best, sessionSearchWork)
					case "incremental":
						pr.added = nil
						searchIncremental(s, g, m, pr, best, sessionSearchWork)
					default:
						searchIncremental(s, g, m, pr, best, sessionSearchWork)
					}
				}
			})
		}
	}
}

// Past its step limit the search ends within the round: with a limit of
// one step it prices only the round's first try (listing z, which no
// session calls) and keeps the start, where the whole round finds that
// listing x for the long session pays.
func TestSearchIncrementalStopsWithinRound(t *testing.T) {
	p := Problem{Costs: []int{100, 10, 8}, Sigs: []Signature{{Tools: []int{1}, Weight: 1}, {Tools: []int{2}, Weight: 1}}}
	paths := []Path{{Turns: 20, Steps: []Step{{Tool: 1}}}, {Turns: 2, Steps: []Step{{Tool: 2}}}}
	s, g, m, start, _ := searchStart(t, p, paths, price.DefaultCache(), 0.5)
	if want := []int{2}; !slices.Equal(start.st.tools(), want) {
		t.Fatalf("start %v, want %v", start.st.tools(), want)
	}
	for _, c := range []struct {
		limit int
		want  []int
	}{{sessionSearchSteps, []int{1, 2}}, {1, []int{2}}} {
		pr := newPricer(m)
		pr.limit = c.limit
		got, _ := searchIncremental(s, g, m, pr, sessionCand{start.st.clone(), start.cost}, sessionSearchWork)
		if !slices.Equal(got.st.tools(), c.want) {
			t.Errorf("step limit %d: %v, want %v", c.limit, got.st.tools(), c.want)
		}
	}
}

// Remembering each round's priced tool lists, and pricing a round's tries
// in two halves on two cores, change nothing: the search that prices
// every list again, in one run, chooses the same set at the same total,
// takes the same steps, and so stops at the same try under any step limit.
func TestSearchRemembersPricedLists(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p, paths, cache := drawProblem(t)
		target := rapid.SampledFrom([]float64{0, 0.5, 0.8, 0.95}).Draw(t, "target")
		s, g, m, start, ok := searchStart(t, p, paths, cache, target)
		if !ok {
			t.Skip("target unreachable")
		}
		limit := rapid.IntRange(1, 2000).Draw(t, "limit")
		run := func(remember, split bool) (sessionCand, bool, int) {
			pr := newPricer(m)
			pr.limit = limit
			if !remember {
				pr.added = nil
			}
			pr.split = math.MaxInt
			if split {
				pr.split = 1
			}
			got, improved := searchIncremental(s, g, m, pr, sessionCand{start.st.clone(), start.cost}, sessionSearchWork)
			return got, improved, pr.steps
		}
		want, wantImproved, wantSteps := run(false, false)
		for _, v := range []struct{ remember, split bool }{{true, false}, {false, true}, {true, true}} {
			got, gotImproved, gotSteps := run(v.remember, v.split)
			if !slices.Equal(got.st.tools(), want.st.tools()) || math.Float64bits(got.cost) != math.Float64bits(want.cost) || gotImproved != wantImproved || gotSteps != wantSteps {
				t.Fatalf("%+v: %v at %v (improved %v, %d steps); pricing every list in one run: %v at %v (improved %v, %d steps)",
					v, got.st.tools(), got.cost, gotImproved, gotSteps, want.st.tools(), want.cost, wantImproved, wantSteps)
			}
		}
	})
}
