package derive

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// A cut on the closure graph (built once, re-priced for each mu) buys the
// smallest tool set maximising mu·covered - cost, the same as a graph built
// for that mu alone, whatever the order of mu.
func TestClosureMatchesEnumeration(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		n := rapid.IntRange(1, 7).Draw(t, "tools")
		p := Problem{Costs: rapid.SliceOfN(rapid.IntRange(0, 40), n, n).Draw(t, "costs")}
		for i := range rapid.IntRange(1, 12).Draw(t, "sigs") {
			ts := rapid.SliceOfNDistinct(rapid.IntRange(0, n-1), 1, n, rapid.ID[int]).Draw(t, fmt.Sprint("sig", i))
			slices.Sort(ts)
			p.Sigs = append(p.Sigs, Signature{Tools: ts, Weight: rapid.IntRange(1, 9).Draw(t, fmt.Sprint("w", i))})
		}
		if rapid.Bool().Draw(t, "pin") {
			p.Pinned = []int{rapid.IntRange(0, n-1).Draw(t, "pinned")}
		}
		reused, err := newSolver(p, Options{})
		if err != nil {
			t.Fatal(err)
		}
		base := reused.newState()
		for k := range 6 {
			num := rapid.Int64Range(0, 60).Draw(t, fmt.Sprint("num", k))
			den := rapid.Int64Range(1, 8).Draw(t, fmt.Sprint("den", k))
			got := reused.closure(base, num, den).tools()
			cold, err := newSolver(p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			want := cold.closure(cold.newState(), num, den).tools()
			if !slices.Equal(got, want) {
				t.Fatalf("mu %d/%d after %d cuts: %v, on a fresh graph %v", num, den, k, got, want)
			}
			if b := smallestClosure(reused, base, num, den); !slices.Equal(got, b) {
				t.Fatalf("mu %d/%d: cut %v, by enumeration %v", num, den, got, b)
			}
		}
	})
}

// smallestClosure enumerates the tool sets over base for the smallest one
// maximising num·covered - den·cost.
func smallestClosure(s *solver, base *state, num, den int64) []int {
	var best []int
	bestV, bestN := int64(0), -1
	for mask := range 1 << len(s.costs) {
		st := base.clone()
		for t := range s.costs {
			if mask&(1<<t) != 0 && !s.denied[t] {
				st.add(t)
			}
		}
		v := num*int64(st.covered) - den*int64(st.cost)
		if n := len(st.tools()); bestN < 0 || v > bestV || v == bestV && n < bestN {
			best, bestV, bestN = st.tools(), v, n
		}
	}
	return best
}

// Cutting only between the two corners around mu finds what cutting the
// whole graph finds: the same frontier corners, the same bracket and, since
// the states and the work they charge are the same, the same solution
// after the local search.
func TestContractedCutsMatchFullCuts(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		p := randomProblem(rand.New(rand.NewPCG(seed, 7)), rapid.IntRange(3, 40).Draw(t, "tools"), rapid.IntRange(1, 80).Draw(t, "sigs"))
		target := rapid.SampledFrom([]float64{0, 0.3, 0.5, 0.8, 0.95, 1}).Draw(t, "target")
		depth := rapid.IntRange(1, 64).Draw(t, "depth")
		opt := Options{ExactWork: -1}
		run := func(full bool) ([]FrontierPoint, *Solution, int) {
			s, err := newSolver(p, opt)
			if err != nil {
				t.Fatal(err)
			}
			s.fullCuts = full
			front := s.frontier(depth)
			s, err = newSolver(p, opt)
			if err != nil {
				t.Fatal(err)
			}
			s.fullCuts = full
			sol := s.solve(goal{need: Need(target, s.total), budget: -1})
			return front, sol, s.work
		}
		wantFront, wantSol, wantWork := run(true)
		gotFront, gotSol, gotWork := run(false)
		if !reflect.DeepEqual(gotFront, wantFront) {
			t.Fatalf("frontier %v, cutting the whole graph %v", gotFront, wantFront)
		}
		if !reflect.DeepEqual(gotSol, wantSol) || gotWork != wantWork {
			t.Fatalf("solution %+v (work left %d), cutting the whole graph %+v (%d)", gotSol, gotWork, wantSol, wantWork)
		}
	})
}

// BenchmarkFrontier times SolveSession's frontier on generated sessions,
// cutting the whole graph at every mu (full) against cutting only between
// the corners around it (contracted), in one run.
func BenchmarkFrontier(b *testing.B) {
	sessions, tools := generated(b, 200_000)
	sel, _, _ := selectSessions(sessions, indexOf(tools), nil)
	sm := sel.reduce(sel.kept)
	p := Problem{Costs: costsOf(tools), Sigs: sm.sigs, Free: sm.free}
	for _, impl := range []string{"full", "contracted"} {
		b.Run(impl, func(b *testing.B) {
			for b.Loop() {
				s, err := newSolver(p, Options{})
				if err != nil {
					b.Fatal(err)
				}
				s.fullCuts = impl == "full"
				s.frontier(6)
				s.solve(goal{need: Need(0.8, s.total), budget: -1})
			}
		})
	}
}
