package groups

import (
	"testing"
	"time"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
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

// TestSplitMatchesDerive: the bases (core, standard) were learned on
// derive's derive part, which holds only sessions that saw every tool, while
// groups also learns from sessions served a grouped profile. Splitting its
// own larger list by count put the newest 20% of all sessions in the
// held-out part: with the grouped sessions older, that reached back into
// derive's derive part, so bases were tested on sessions they were learned
// from. The held-out part must hold none of derive's derive part.
func TestSplitMatchesDerive(t *testing.T) {
	index := map[string]int{"a.x": 0, "a.y": 1}
	prior := &profiles.File{Version: 1, Default: "lean",
		Profiles: []profiles.Profile{{Name: "lean", Tools: []string{"a.x"}, Groups: []string{"g"}}},
		Groups:   []profiles.Group{{Name: "g", Tools: []string{"a.y"}}}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var sessions []telemetry.Usage
	for i := range 10 { // grouped, oldest
		sessions = append(sessions, telemetry.Usage{Tools: []string{"a.x"}, Session: telemetry.Session{Profile: "lean", Start: start.Add(time.Duration(i) * time.Minute)}})
	}
	for i := range 10 { // full, newest; one grouped among the newest two
		sessions = append(sessions, telemetry.Usage{Tools: []string{"a.y"}, Session: telemetry.Session{Start: start.Add(time.Hour + time.Duration(i)*time.Minute)}})
	}
	sessions = append(sessions, telemetry.Usage{Tools: []string{"a.x"}, Session: telemetry.Session{Profile: "lean", Start: start.Add(time.Hour + 8*time.Minute + 30*time.Second)}})
	used, grouped, _ := selectSessions(sessions, index, prior, nil)
	train, test := derive.Split(used, 0.2, grouped)
	// derive holds out round(0.2*10) = 2 of its 10 full sessions: the
	// newest two; the grouped session between them is held out too.
	if len(train) != 18 || len(test) != 3 {
		t.Fatalf("split %d/%d, want 18/3 (derive's two newest full sessions and the grouped one among them held out)", len(train), len(test))
	}
	for _, d := range test {
		if d.Start.Before(start.Add(time.Hour + 8*time.Minute)) {
			t.Errorf("held out a session of %v, in derive's derive part", d.Start)
		}
	}
}
