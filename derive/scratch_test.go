package derive

import (
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// TestGreedyScratchAndWork checks greedy's kept scratch and its work
// accounting on random instances: greedy run again on a solver that has
// run it before finds what a fresh solver finds, and greedy without its
// alternative charges the work building the alternative would, so that the
// work budget ends the search where it always has.
func TestGreedyScratchAndWork(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 9))
	alts := 0
	for range 400 {
		p := randomProblem(r, 12, 30)
		p.Denied = nil
		for _, share := range []float64{0.5, 0.8, 0.95} {
			fresh := func() (*solver, goal) {
				s, err := newSolver(p, Options{})
				if err != nil {
					t.Fatal(err)
				}
				return s, goal{need: Need(share, s.total), budget: -1}
			}
			with, g := fresh()
			st := with.newState()
			alt := with.greedy(st, g, nil, true)
			if alt == nil {
				continue
			}
			alts++
			without, _ := fresh()
			st2 := without.newState()
			if got := without.greedy(st2, g, nil, false); got != nil {
				t.Fatalf("%+v: greedy without the alternative returned one", p)
			}
			if without.work != with.work {
				t.Fatalf("%+v need %d: work %d without the alternative, %d with it", p, g.need, without.work, with.work)
			}
			if !slices.Equal(st2.tools(), st.tools()) {
				t.Fatalf("%+v: greedy chose %v without the alternative, %v with it", p, st2.tools(), st.tools())
			}
			// Again on the same solver (scratch from the first run), from
			// the pinned tools with one tool banned.
			banned := make([]bool, len(p.Costs))
			banned[st.tools()[len(st.tools())-1]] = true
			again := without.newState()
			without.greedy(again, g, banned, false)
			ref, _ := fresh()
			once := ref.newState()
			ref.greedy(once, g, banned, false)
			if !slices.Equal(again.tools(), once.tools()) || again.covered != once.covered {
				t.Fatalf("%+v: greedy on a used solver chose %v, a fresh one %v", p, again.tools(), once.tools())
			}
		}
	}
	if alts == 0 {
		t.Fatal("no instance had a finishing alternative: the test checks nothing")
	}
}

// TestNewStateCopiesCharge checks that newState's copies of the pinned
// state equal the state built from scratch and charge the same work.
func TestNewStateCopiesCharge(t *testing.T) {
	p := Problem{Costs: []int{5, 7, 11, 13}, Sigs: []Signature{{Tools: []int{0, 1}, Weight: 3}, {Tools: []int{1, 2}, Weight: 2}, {Tools: []int{3}, Weight: 1}}, Pinned: []int{1, 3}}
	s, err := newSolver(p, Options{})
	if err != nil {
		t.Fatal(err)
	}
	var works []int
	var states []*state
	for range 3 {
		before := s.work
		states = append(states, s.newState())
		works = append(works, before-s.work)
	}
	for i, st := range states {
		if works[i] != works[0] || works[0] == 0 {
			t.Errorf("newState %d charged %d, want %d (and more than none)", i, works[i], works[0])
		}
		if !slices.Equal(st.in, states[0].in) || !slices.Equal(st.missCount, states[0].missCount) || !slices.Equal(st.missCost, states[0].missCost) || st.covered != 1 || st.cost != 20 {
			t.Errorf("newState %d: %+v, want the pinned tools' state", i, st)
		}
	}
	states[1].add(0)
	if states[2].in[0] || s.newState().in[0] {
		t.Error("a copy of the pinned state shares memory with another")
	}
}

// TestImproveBatchesMatchOneAtATime checks that improve making its tries
// several at a time takes the steps one try at a time takes: the same set,
// method and work left, with budgets that end the search at any point, and
// on searches where a perturbation round improved before the last of its
// batch (so the generator was set back).
func TestImproveBatchesMatchOneAtATime(t *testing.T) {
	r := rand.New(rand.NewPCG(5, 11))
	local, restored := 0, 0
	for n := 0; n < 40 || restored == 0 && n < 400; n++ {
		p := randomProblem(r, 40, 400)
		work := []int{0, 50, 300, 2000, 20000, 0}[n%6]
		for _, share := range []float64{0.6, 0.9} {
			solve := func(repairs int) (*Solution, *solver) {
				s, err := newSolver(p, Options{ExactWork: -1, SearchWork: work})
				if err != nil {
					t.Fatal(err)
				}
				s.repairs = repairs
				return s.solve(goal{need: Need(share, s.total), budget: -1}), s
			}
			want, ws := solve(1)
			for _, repairs := range []int{2, 3} {
				got, gs := solve(repairs)
				restored += gs.restored
				if !slices.Equal(got.Tools, want.Tools) || got.Cost != want.Cost || got.Method != want.Method || gs.work != ws.work {
					t.Fatalf("%+v share %v work %d: %d at a time found %v (%s, work left %d), one at a time %v (%s, work left %d)",
						p, share, work, repairs, got.Tools, got.Method, gs.work, want.Tools, want.Method, ws.work)
				}
			}
			if strings.HasSuffix(want.Method, "+local") {
				local++
			}
		}
	}
	if local == 0 || restored == 0 {
		t.Fatalf("local search improved %d candidates, %d batches of perturbation rounds were cut short: the test checks too little", local, restored)
	}
}
