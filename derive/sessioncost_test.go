package derive

import (
	"fmt"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/telemetry"
	"pgregory.net/rapid"
)

// The closed form prices a session as price does: Prices.Turns with the
// set as base and full as fallback, then SessionCost.
func TestSessionCostMatchesPrice(t *testing.T) {
	names := []string{"a", "b", "c", "d"}
	tok := []int{10, 20, 40, 80}
	index := map[string]int{"a": 0, "b": 1, "c": 2, "d": 3}
	sessions := []struct {
		tools []string
		turns []int
		n     int
	}{
		{[]string{"a", "b"}, []int{0, 2}, 4},
		{[]string{"c", "a", "c"}, []int{1, 1, 3}, 5},
		{[]string{"d"}, []int{0}, 3},
		{nil, nil, 2},
		{[]string{"a", "b", "c", "d"}, nil, 0},
		{[]string{"b", "d"}, []int{4, 4}, 5},
	}
	sets := [][]int{{}, {0}, {0, 1}, {0, 2}, {0, 1, 2, 3}}
	for _, cache := range []price.CacheModel{price.DefaultCache(), {Write: 1.25, Read: 0.1, Growth: 30}, {Write: 2, Read: 0.5, Growth: 7}} {
		for i, sc := range sessions {
			s, err := price.NewSession(sc.tools, sc.turns, sc.n)
			if err != nil {
				t.Fatal(err)
			}
			p := pathOf(s, true, nil, index)
			m := newCostModel(tok, []Path{p}, cache)
			for _, set := range sets {
				in := make([]bool, len(tok))
				var base []string
				for _, t := range set {
					in[t] = true
					base = append(base, names[t])
				}
				pr := price.Prices{Tools: map[string]int{"a": 10, "b": 20, "c": 40, "d": 80}}
				turns, _ := pr.Turns(s, price.Listing{Base: base, Fallback: names})
				want := price.SessionCost(turns, cache)
				if got := m.total(in); math.Abs(got-want) > 1e-9 {
					t.Errorf("cache %+v, session %d, set %v: closed form %v, price %v", cache, i, set, got, want)
				}
			}
		}
	}
}

// Two sessions and a target of one: the cheapest listing covering one
// serves the short session (y, 8 tokens) and sends the long one to full
// from its first turn; per session with caching, listing both tools costs
// least, since the long session then reads 18 tokens from the cache for
// 20 turns instead of 118.
func TestDeriveMinimisesSessionCost(t *testing.T) {
	tools := []Tool{{Name: "x", Tokens: 10}, {Name: "y", Tokens: 8}, {Name: "z", Tokens: 100}}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sessions := []telemetry.Usage{
		{Session: telemetry.Session{ID: "long", Start: day}, Tools: []string{"x"}, Calls: 1},
		{Session: telemetry.Session{ID: "short", Start: day.Add(time.Hour)}, Tools: []string{"y"}, Calls: 1},
	}
	paths := map[string]price.Session{
		"long":  {Turns: 20, Calls: []price.Call{{Tool: "x", Turn: 0}}},
		"short": {Turns: 2, Calls: []price.Call{{Tool: "y", Turn: 0}}},
	}
	res, err := Derive(sessions, Config{Tools: tools, Specs: []Spec{{Name: "core", Target: 0.5}}, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	core := res.Profiles[0]
	if want := []string{"x", "y"}; !slices.Equal(core.Tools, want) {
		t.Errorf("core = %v, want %v (solution %+v)", core.Tools, want, core.Solution)
	}
	if core.Solution.SessionCost <= 0 || math.Abs(core.DeriveCost.Mean-core.Solution.SessionCost) > 1e-9 {
		t.Errorf("session cost: solution %v, derive part %+v: want the same positive mean", core.Solution.SessionCost, core.DeriveCost)
	}
	// 18 tokens written once, then read for 19 turns; 18 written, read once.
	if want := (18*(1.25+19*0.1) + 18*(1.25+0.1)) / 2; math.Abs(core.DeriveCost.Mean-want) > 1e-9 {
		t.Errorf("mean session cost %v, want %v", core.DeriveCost.Mean, want)
	}
}

// A set already cheapest per session is kept, and the target holds.
func TestSolveSessionKeepsTarget(t *testing.T) {
	p := Problem{Costs: []int{5, 5, 50}, Sigs: []Signature{{Tools: []int{0}, Weight: 3}, {Tools: []int{1}, Weight: 1}, {Tools: []int{2}, Weight: 1}}}
	paths := []Path{
		{Turns: 2, Steps: []Step{{0, 0}}}, {Turns: 2, Steps: []Step{{0, 0}}}, {Turns: 2, Steps: []Step{{0, 0}}},
		{Turns: 2, Steps: []Step{{1, 0}}}, {Turns: 2, Steps: []Step{{2, 1}}},
	}
	sol, err := SolveSession(p, paths, price.DefaultCache(), 0.8, Options{})
	if err != nil {
		t.Fatal(err)
	}
	if !sol.Feasible || sol.Covered < 4 {
		t.Fatalf("solution %+v: want the target of 4 sessions met", sol)
	}
	if !slices.Equal(sol.Tools, []int{0, 1}) {
		t.Errorf("tools %v, want [0 1]: tool 2 costs more listed than its one session pays on full for its last turn", sol.Tools)
	}
}

// TestDefaultIsCheapestReachingTarget: of the profiles whose held-out
// coverage reaches the default target, the default is the one costing
// least per derive session with prompt caching. Budget profile small
// holds a alone and covers the 85% of sessions that call only a; the 15%
// that call b on their second turn are refused there and pay the full
// catalog (a, b and twenty unused tools) from that turn on. core, derived
// by cost with the same target, lists b too and costs less per session.
func TestDefaultIsCheapestReachingTarget(t *testing.T) {
	tools := []Tool{{Name: "a", Tokens: 100}, {Name: "b", Tokens: 100}}
	for i := range 20 {
		tools = append(tools, Tool{Name: fmt.Sprintf("unused%02d", i), Tokens: 200})
	}
	day := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var sessions []telemetry.Usage
	paths := map[string]price.Session{}
	for i := range 100 {
		id := fmt.Sprintf("s%d", i)
		s := telemetry.Usage{Session: telemetry.Session{ID: id, Start: day.Add(time.Duration(i) * time.Minute)}, Tools: []string{"a"}, Calls: 1}
		p := price.Session{Turns: 5, Calls: []price.Call{{Tool: "a", Turn: 0}}}
		if i%20 < 3 {
			s.Tools, s.Calls = []string{"a", "b"}, 2
			p.Calls = append(p.Calls, price.Call{Tool: "b", Turn: 1})
		}
		sessions, paths[id] = append(sessions, s), p
	}
	res, err := Derive(sessions, Config{Tools: tools, Specs: []Spec{{Name: "small", Budget: 100}, {Name: "core", Target: 0.8}},
		Holdout: 0.2, DefaultTarget: 0.8, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]ProfileResult{}
	for _, p := range res.Profiles {
		by[p.Name] = p
	}
	small, core := by["small"], by["core"]
	if share, _ := small.Holdout.Share(); share < 0.8 || !slices.Equal(small.Tools, []string{"a"}) {
		t.Fatalf("small = %v holding out %v: the case needs it to reach the target alone", small.Tools, share)
	}
	if core.DeriveCost.Mean >= small.DeriveCost.Mean {
		t.Fatalf("core %v costs %.1f per session, small %.1f: the case needs core cheaper", core.Tools, core.DeriveCost.Mean, small.DeriveCost.Mean)
	}
	if res.Default != "core" {
		t.Errorf("default %q, want core (%.1f per derive session against small's %.1f)", res.Default, core.DeriveCost.Mean, small.DeriveCost.Mean)
	}
}

// The summary of distinct paths' costs with their weights is, to the bit,
// price.Summarise of one cost per session: the same sessions, mean, and
// percentiles, for every set and cache.
func TestSessionStatsMatchesSummarise(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		tok, paths, cache := drawPaths(t)
		m := newCostModel(tok, paths, cache)
		in := make([]bool, len(tok))
		for i := range in {
			in[i] = rapid.Bool().Draw(t, fmt.Sprint("in", i))
		}
		var each []float64
		for _, p := range m.paths {
			c := m.session(p, in, setTokens(tok, in))
			for range p.weight {
				each = append(each, c)
			}
		}
		want, got := price.Summarise(each), m.stats(in)
		if got.Sessions != want.Sessions || math.Float64bits(got.Mean) != math.Float64bits(want.Mean) ||
			math.Float64bits(got.P50) != math.Float64bits(want.P50) || math.Float64bits(got.P95) != math.Float64bits(want.P95) {
			t.Fatalf("weighted %+v, one cost per session %+v", got, want)
		}
	})
}

func setTokens(tok []int, in []bool) int {
	n := 0
	for t, ok := range in {
		if ok {
			n += tok[t]
		}
	}
	return n
}

// BenchmarkSessionStats prices a set over generated sessions' paths:
// perSession lists one cost per session for price.Summarise (the
// reference TestSessionStatsMatchesSummarise holds stats to), weighted
// summarises the distinct paths.
func BenchmarkSessionStats(b *testing.B) {
	sessions, tools := generated(b, 200_000)
	sel, _, _ := selectSessions(sessions, indexOf(tools), nil)
	m := newCostModel(costsOf(tools), sel.paths(sel.kept), price.DefaultCache())
	in := make([]bool, len(tools))
	for t := range len(tools) / 3 {
		in[t] = true
	}
	set := setTokens(m.tok, in)
	b.Run("perSession", func(b *testing.B) {
		for b.Loop() {
			var each []float64
			for _, p := range m.paths {
				c := m.session(p, in, set)
				for range p.weight {
					each = append(each, c)
				}
			}
			price.Summarise(each)
		}
	})
	b.Run("weighted", func(b *testing.B) {
		for b.Loop() {
			m.stats(in)
		}
	})
}
