package derive

import (
	"fmt"
	"slices"
	"testing"

	"github.com/toolprof/toolprof/bench/sessiongen"
	"github.com/toolprof/toolprof/telemetry"
)

// generated returns n synthetic sessions over a 300-tool catalog.
func generated(tb testing.TB, n int) ([]telemetry.Usage, []Tool) {
	tb.Helper()
	names := sessiongen.ToolNames(300)
	tools := make([]Tool, len(names))
	for i, name := range names {
		tools[i] = Tool{Name: name, Bytes: 200 + 37*(i%23), Tokens: 50 + 11*(i%17)}
	}
	out := make([]telemetry.Usage, 0, n)
	err := sessiongen.Each(sessiongen.Config{Seed: 1, Sessions: n, Tools: names}, func(s sessiongen.Session) error {
		ts := slices.Clone(s.Calls)
		slices.Sort(ts)
		out = append(out, telemetry.Usage{Tools: slices.Compact(ts), Calls: len(s.Calls), Session: telemetry.Session{Start: s.Start}})
		return nil
	})
	if err != nil {
		tb.Fatal(err)
	}
	return out, tools
}

// BenchmarkDerive derives the default family from generated sessions; the
// TopK sub-benchmarks are the baseline in the same run (reduction and the
// popularity baseline only), so the solver's cost shows as a ratio.
func BenchmarkDerive(b *testing.B) {
	for _, n := range []int{10_000, 100_000, 1_000_000} {
		sessions, tools := generated(b, n)
		cfg := Config{Tools: tools, Specs: DefaultSpecs(), Holdout: DefaultHoldout, DefaultTarget: DefaultTarget}
		b.Run(fmt.Sprintf("solver/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := Derive(sessions, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("topk/%d", n), func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				sel, _, _ := selectSessions(sessions, indexOf(tools), nil)
				s := sel.reduce(sel.kept)
				if _, err := TopK(Problem{Costs: costsOf(tools), Sigs: s.sigs, Free: s.free}, 0.95); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func indexOf(tools []Tool) map[string]int {
	m := map[string]int{}
	for i, t := range sortedTools(tools) {
		m[t.Name] = i
	}
	return m
}

func costsOf(tools []Tool) []int {
	var c []int
	for _, t := range sortedTools(tools) {
		c = append(c, t.Tokens)
	}
	return c
}

func TestGeneratedWorkloadShape(t *testing.T) {
	sessions, tools := generated(t, 5_000)
	sel, _, _ := selectSessions(sessions, indexOf(tools), nil)
	s := sel.reduce(sel.kept)
	t.Logf("5k sessions: %d signatures, %d zero-call", len(s.sigs), s.free)
	res, err := Derive(sessions, Config{Tools: tools, Specs: DefaultSpecs(), Holdout: DefaultHoldout, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Profiles[:2] {
		if p.Baseline.Tokens < p.Tokens && p.Solution.Feasible {
			t.Errorf("%s: solver %d tokens, top-k %d", p.Name, p.Tokens, p.Baseline.Tokens)
		}
	}
}
