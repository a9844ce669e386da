package derive

import (
	"math/rand/v2"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// bruteForce enumerates every tool set holding the pinned tools and no
// denied one, and returns the cheapest covering need sessions (target mode,
// budget < 0) or the best coverage within budget.
func bruteForce(p Problem, need, budget int) (cost, covered int, feasible bool) {
	n := len(p.Costs)
	bestCost, bestCov, found := 0, -1, false
	for mask := 0; mask < 1<<n; mask++ {
		ok := true
		for _, t := range p.Pinned {
			ok = ok && mask&(1<<t) != 0
		}
		for _, t := range p.Denied {
			ok = ok && mask&(1<<t) == 0
		}
		if !ok {
			continue
		}
		var tools []int
		c := 0
		for t := range n {
			if mask&(1<<t) != 0 {
				tools = append(tools, t)
				c += p.Costs[t]
			}
		}
		cov, _ := Evaluate(p, tools)
		if budget >= 0 {
			if c <= budget && (cov > bestCov || cov == bestCov && c < bestCost) {
				bestCost, bestCov, found = c, cov, true
			}
			continue
		}
		if cov >= need && (!found || c < bestCost) {
			bestCost, bestCov, found = c, cov, true
		}
	}
	return bestCost, bestCov, found
}

func randomProblem(r *rand.Rand, maxTools, maxSigs int) Problem {
	n := 3 + r.IntN(maxTools-2)
	p := Problem{Costs: make([]int, n), Free: r.IntN(3)}
	for i := range p.Costs {
		p.Costs[i] = 1 + r.IntN(60)
	}
	seen := map[string]bool{}
	for range 1 + r.IntN(maxSigs) {
		size := 1 + r.IntN(min(4, n))
		set := r.Perm(n)[:size]
		slices.Sort(set)
		key := fmtInts(set)
		if seen[key] {
			continue
		}
		seen[key] = true
		p.Sigs = append(p.Sigs, Signature{Tools: set, Weight: 1 + r.IntN(20)})
	}
	perm := r.Perm(n)
	np, nd := r.IntN(3), r.IntN(2)
	p.Pinned = slices.Clone(perm[:np])
	p.Denied = slices.Clone(perm[np : np+nd])
	return p
}

func fmtInts(xs []int) string {
	b := make([]byte, 0, len(xs)*3)
	for _, x := range xs {
		b = append(b, byte('a'+x), ',')
	}
	return string(b)
}

func rapidProblem(t *rapid.T) Problem {
	seed := rapid.Uint64().Draw(t, "seed")
	return randomProblem(rand.New(rand.NewPCG(seed, 7)), 10, 12)
}

// TestHeuristicAgainstBruteForce measures the heuristic path alone (exact
// enumeration disabled) on random small instances: never infeasible when
// the optimum is feasible, never below the target, and optimal in at least
// 90% of them.
func TestHeuristicAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	const runs = 400
	exactCount, feasibleRuns := 0, 0
	for range runs {
		p := randomProblem(r, 14, 24)
		target := []float64{0.5, 0.7, 0.8, 0.9, 0.95, 1}[r.IntN(6)]
		_, total := Evaluate(p, nil)
		need := Need(target, total)
		optCost, _, optFeasible := bruteForce(p, need, -1)
		got, err := Solve(p, target, Options{ExactWork: -1})
		if err != nil {
			t.Fatal(err)
		}
		cov, _ := Evaluate(p, got.Tools)
		if cov != got.Covered {
			t.Fatalf("reported covered %d, evaluated %d", got.Covered, cov)
		}
		if got.Feasible != optFeasible {
			t.Fatalf("feasible = %v, brute force says %v for %+v target %v", got.Feasible, optFeasible, p, target)
		}
		if !optFeasible {
			continue
		}
		feasibleRuns++
		if got.Covered < need {
			t.Fatalf("covered %d < need %d", got.Covered, need)
		}
		if got.Cost < optCost {
			t.Fatalf("cost %d below the optimum %d: brute force or cost accounting is wrong", got.Cost, optCost)
		}
		if got.Cost == optCost {
			exactCount++
		}
		if got.LowerBound > optCost {
			t.Fatalf("lower bound %d above the optimum %d", got.LowerBound, optCost)
		}
	}
	rate := float64(exactCount) / float64(feasibleRuns)
	t.Logf("heuristic optimal in %d of %d feasible instances (%.1f%%)", exactCount, feasibleRuns, 100*rate)
	if rate < 0.90 {
		t.Errorf("heuristic optimal in %.1f%% of instances, want >= 90%%", 100*rate)
	}
}

func TestBudgetAgainstBruteForce(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	const runs = 300
	exactCount, feasibleRuns := 0, 0
	for range runs {
		p := randomProblem(r, 14, 24)
		budget := r.IntN(150)
		_, optCov, optFeasible := bruteForce(p, 0, budget)
		got, err := SolveBudget(p, budget, Options{ExactWork: -1})
		if err != nil {
			t.Fatal(err)
		}
		if got.Feasible != optFeasible {
			t.Fatalf("feasible = %v, brute force says %v", got.Feasible, optFeasible)
		}
		if !optFeasible {
			continue
		}
		feasibleRuns++
		if got.Cost > budget {
			t.Fatalf("cost %d over budget %d", got.Cost, budget)
		}
		if got.Covered > optCov {
			t.Fatalf("covered %d above the optimum %d", got.Covered, optCov)
		}
		if got.Covered == optCov {
			exactCount++
		}
		ex, err := SolveBudget(p, budget, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if ex.Covered != optCov {
			t.Fatalf("exact budget path covered %d, optimum %d", ex.Covered, optCov)
		}
	}
	t.Logf("budget heuristic optimal in %d of %d feasible instances", exactCount, feasibleRuns)
	if float64(exactCount) < 0.9*float64(feasibleRuns) {
		t.Errorf("budget heuristic optimal in only %d of %d", exactCount, feasibleRuns)
	}
}

// TestExactMatchesBruteForce: with enumeration enabled small instances are
// solved exactly.
func TestExactMatchesBruteForce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapidProblem(t)
		target := rapid.Float64Range(0, 1).Draw(t, "target")
		_, total := Evaluate(p, nil)
		optCost, _, optFeasible := bruteForce(p, Need(target, total), -1)
		got, err := Solve(p, target, Options{})
		if err != nil {
			t.Fatal(err)
		}
		if got.Feasible != optFeasible || optFeasible && got.Cost != optCost {
			t.Fatalf("got cost %d feasible %v (%s), optimum %d feasible %v", got.Cost, got.Feasible, got.Method, optCost, optFeasible)
		}
		if optFeasible && got.Method != "exact" {
			t.Fatalf("method %q, want exact on a small instance", got.Method)
		}
	})
}

// TestNeverWorseThanTopK: the solver's set is never dearer than the
// popularity baseline's when both reach the target, and reaches the target
// whenever the baseline does.
func TestNeverWorseThanTopK(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		seed := rapid.Uint64().Draw(t, "seed")
		p := randomProblem(rand.New(rand.NewPCG(seed, 9)), 40, 60)
		target := rapid.Float64Range(0, 1).Draw(t, "target")
		base, err := TopK(p, target)
		if err != nil {
			t.Fatal(err)
		}
		got, err := Solve(p, target, Options{ExactWork: -1})
		if err != nil {
			t.Fatal(err)
		}
		if base.Feasible && !got.Feasible {
			t.Fatalf("baseline feasible, solver not")
		}
		if base.Feasible && got.Cost > base.Cost {
			t.Fatalf("solver cost %d > top-k cost %d", got.Cost, base.Cost)
		}
	})
}

func TestPinnedAndDeniedRespected(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapidProblem(t)
		target := rapid.Float64Range(0, 1).Draw(t, "target")
		for _, opt := range []Options{{}, {ExactWork: -1}} {
			got, err := Solve(p, target, opt)
			if err != nil {
				t.Fatal(err)
			}
			for _, pin := range p.Pinned {
				if !slices.Contains(got.Tools, pin) {
					t.Fatalf("pinned tool %d missing from %v", pin, got.Tools)
				}
			}
			for _, d := range p.Denied {
				if slices.Contains(got.Tools, d) {
					t.Fatalf("denied tool %d in %v", d, got.Tools)
				}
			}
			cost := 0
			for _, tl := range got.Tools {
				cost += p.Costs[tl]
			}
			if cost != got.Cost {
				t.Fatalf("cost %d, tools cost %d (pinned costs must count)", got.Cost, cost)
			}
		}
	})
}

func TestSolveCases(t *testing.T) {
	// tools: 0 a(10) 1 b(10) 2 c(1) 3 d(100)
	p := Problem{
		Costs: []int{10, 10, 1, 100},
		Sigs: []Signature{
			{Tools: []int{0, 1}, Weight: 4}, // needs a and b together
			{Tools: []int{2}, Weight: 3},
			{Tools: []int{3}, Weight: 1},
		},
		Free: 2, // zero-call sessions: covered by every set
	}
	tests := []struct {
		name     string
		p        func(Problem) Problem
		target   float64
		want     []int
		covered  int
		feasible bool
	}{
		{name: "free sessions count", target: 0.2, want: nil, covered: 2, feasible: true},
		{name: "cheap first", target: 0.5, want: []int{2}, covered: 5, feasible: true},
		{name: "pair needed whole", target: 0.9, want: []int{0, 1, 2}, covered: 9, feasible: true},
		{name: "everything", target: 1, want: []int{0, 1, 2, 3}, covered: 10, feasible: true},
		{name: "pinned counted", p: func(p Problem) Problem { p.Pinned = []int{3}; return p }, target: 0.5, want: []int{2, 3}, covered: 6, feasible: true},
		{name: "denied makes uncoverable", p: func(p Problem) Problem { p.Denied = []int{1}; return p }, target: 0.9, want: []int{2, 3}, covered: 6, feasible: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := p
			if tt.p != nil {
				q = tt.p(p)
			}
			for _, opt := range []Options{{}, {ExactWork: -1}} {
				got, err := Solve(q, tt.target, opt)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got.Tools, tt.want) || got.Covered != tt.covered || got.Feasible != tt.feasible {
					t.Errorf("opt %+v: got tools %v covered %d feasible %v, want %v %d %v", opt, got.Tools, got.Covered, got.Feasible, tt.want, tt.covered, tt.feasible)
				}
			}
		})
	}
}

func TestSolveRejectsBadInput(t *testing.T) {
	tests := []struct {
		name string
		p    Problem
	}{
		{"pinned and denied", Problem{Costs: []int{1}, Pinned: []int{0}, Denied: []int{0}}},
		{"negative cost", Problem{Costs: []int{-1}}},
		{"tool out of range", Problem{Costs: []int{1}, Sigs: []Signature{{Tools: []int{3}, Weight: 1}}}},
	}
	for _, tt := range tests {
		if _, err := Solve(tt.p, 0.5, Options{}); err == nil {
			t.Errorf("%s: no error", tt.name)
		}
	}
	if _, err := Solve(Problem{}, 1.5, Options{}); err == nil {
		t.Error("target 1.5 accepted")
	}
}

// TestFrontierPointsAreOptimal: every corner the parametric cut returns is
// the cheapest way to cover its sessions.
func TestFrontierPointsAreOptimal(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapidProblem(t)
		pts, err := Frontier(p)
		if err != nil {
			t.Fatal(err)
		}
		for k, pt := range pts {
			if k > 0 && (pt.Cost <= pts[k-1].Cost || pt.Covered <= pts[k-1].Covered) {
				t.Fatalf("frontier not increasing at %d: %+v", k, pts)
			}
			cov, _ := Evaluate(p, pt.Tools)
			if cov != pt.Covered {
				t.Fatalf("point covered %d, evaluated %d", pt.Covered, cov)
			}
			opt, _, ok := bruteForce(p, pt.Covered, -1)
			if !ok || opt != pt.Cost {
				t.Fatalf("frontier point cost %d covering %d, optimum %d", pt.Cost, pt.Covered, opt)
			}
		}
	})
}
