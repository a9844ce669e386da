package groups

import (
	"testing"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/profiles"
)

// TestApplyCoverageExcludesFallback: a session needing a tool that neither
// the base nor any group reaches needs no switch (it is served full
// instead), so measure counts it in NoSwitch; but the grouped profile
// refuses it, so the profile's measured coverage must leave it out. It was
// written as the no-switch share, fallback sessions included.
func TestApplyCoverageExcludesFallback(t *testing.T) {
	r := &Result{
		Base:    []string{"a"},
		Groups:  []profiles.Group{{Name: "g", Description: "g", Tools: []string{"b"}}},
		Derive:  Figures{Sessions: 20, NoSwitch: 15, NoSwitchShare: 0.75, Fallback: 5},
		Holdout: Figures{Sessions: 10, NoSwitch: 6, NoSwitchShare: 0.6, Fallback: 2},
	}
	f := &profiles.File{Version: profiles.Version, Default: profiles.FullProfile, Profiles: []profiles.Profile{{Name: profiles.FullProfile, Tools: []string{"a", "b", "c"}}}}
	if err := r.Apply(f, DefaultProfile); err != nil {
		t.Fatal(err)
	}
	m := f.Profiles[1].Measured
	lo, hi := derive.Wilson(4, 10)
	switch {
	case m.Coverage == nil || *m.Coverage != 0.5:
		t.Errorf("coverage %v, want 0.5 (10 of 20: 15 without a switch, 5 of them refused)", deref(m.Coverage))
	case m.HoldoutCoverage == nil || *m.HoldoutCoverage != 0.4:
		t.Errorf("holdout coverage %v, want 0.4 (4 of 10)", deref(m.HoldoutCoverage))
	case len(m.HoldoutCI) != 2 || m.HoldoutCI[0] != round4(lo) || m.HoldoutCI[1] != round4(hi):
		t.Errorf("holdout CI %v, want Wilson(4, 10) = [%v, %v]", m.HoldoutCI, round4(lo), round4(hi))
	}
}

func deref(v *float64) any {
	if v == nil {
		return nil
	}
	return *v
}
