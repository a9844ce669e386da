package derive

import (
	"slices"
	"strings"
	"testing"
)

// TestDeriveMaxTools: on the fixture, core (0.80) takes a, b, c and
// standard (0.95) adds d, e; a cap of 3 binds on standard only, which keeps
// core's tools, stays nested, and leaves full whole.
func TestDeriveMaxTools(t *testing.T) {
	cfg := Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget}
	free, err := Derive(fixtureSessions(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(free.Profiles[1].Tools); n <= 3 {
		t.Fatalf("uncapped standard has %d tools: the fixture no longer makes the cap bind", n)
	}
	cfg.MaxTools = 3
	res, err := Derive(fixtureSessions(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Profiles {
		if p.Name == "full" {
			if len(p.Tools) != len(cfg.Tools) {
				t.Errorf("full has %d tools, want all %d", len(p.Tools), len(cfg.Tools))
			}
			continue
		}
		if len(p.Tools) > 3 {
			t.Errorf("%s has %d tools %v, over the cap of 3", p.Name, len(p.Tools), p.Tools)
		}
	}
	core, std := res.Profiles[0], res.Profiles[1]
	if !slices.Equal(core.Tools, free.Profiles[0].Tools) {
		t.Errorf("core %v, want it as uncapped (%v): the cap does not bind there", core.Tools, free.Profiles[0].Tools)
	}
	for _, tool := range core.Tools {
		if !slices.Contains(std.Tools, tool) {
			t.Errorf("capped standard %v lacks core's %s: not nested", std.Tools, tool)
		}
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, `profile "standard": capped at 3 tools`) }) {
		t.Errorf("warnings %v do not report the cap", res.Warnings)
	}
	if !slices.Contains(res.Parameters(cfg), "max_tools=3") {
		t.Errorf("parameters %v lack max_tools=3", res.Parameters(cfg))
	}
}

func TestCapTools(t *testing.T) {
	// Tools 0..3; sigs {0} x5, {1} x3, {2,3} x2; 0 pinned.
	p := Problem{Costs: []int{10, 20, 30, 40}, Sigs: []Signature{{Tools: []int{0}, Weight: 5}, {Tools: []int{1}, Weight: 3}, {Tools: []int{2, 3}, Weight: 2}}, Pinned: []int{0}}
	sol := &Solution{Tools: []int{0, 1, 2, 3}, Cost: 100, Covered: 10, Total: 10, Need: 8, Feasible: true}
	got, err := CapTools(p, sol, 2)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Tools, []int{0, 1}) || got.Cost != 30 || got.Covered != 8 || !got.Feasible {
		t.Errorf("cap 2 = %+v, want tools [0 1], cost 30, 8 covered, feasible", got)
	}
	got, _ = CapTools(p, sol, 1)
	if !slices.Equal(got.Tools, []int{0}) || got.Covered != 5 || got.Feasible {
		t.Errorf("cap 1 = %+v, want the pinned tool alone, 5 covered, infeasible", got)
	}
	if same, _ := CapTools(p, sol, 4); same != sol {
		t.Error("a solution within the cap was changed")
	}
	p.Pinned = []int{0, 1, 2}
	if _, err := CapTools(p, sol, 2); err == nil {
		t.Error("three pinned tools under a cap of 2 gave no error")
	}
}
