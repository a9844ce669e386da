package derive

import (
	"fmt"
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
