package derive

import (
	"fmt"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// TestSearchPriorsFromDerivePartOnly: the priors are the derive part's
// (the older 80%), so sessions in the held-out part, however different,
// leave them unchanged, and a tool only the held-out part calls has no
// weight.
func TestSearchPriorsFromDerivePartOnly(t *testing.T) {
	learn := [][]string{{"a", "b"}, {"a"}, {"a", "b"}, {"c"}, {"a", "c"}, {"b"}, {"a", "b"}, {"c"}}
	cfg := Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget}
	priors := func(held ...[]string) *profiles.SearchPriors {
		t.Helper()
		res, err := Derive(sessionsOf(append(append([][]string{}, learn...), held...)...), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res.SearchPriors()
	}
	got := priors([]string{"a"}, []string{"b"})
	for name, other := range map[string]*profiles.SearchPriors{
		"other held-out tools": priors([]string{"d", "f"}, []string{"f"}),
		"same again":           priors([]string{"a"}, []string{"b"}),
	} {
		if !reflect.DeepEqual(got, other) {
			t.Errorf("%s: priors changed:\n%+v\n%+v", name, got, other)
		}
	}
	want := &profiles.SearchPriors{
		Sessions: 8,
		Tools:    []profiles.SearchTool{{Name: "a", Weight: 0.625}, {Name: "b", Weight: 0.5}, {Name: "c", Weight: 0.375}},
		Pairs: []profiles.SearchPair{
			{Tools: []string{"a", "b"}, Weight: 0.5},    // 3 of the 6 using either
			{Tools: []string{"a", "c"}, Weight: 0.1429}, // 1 of 7
		},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("SearchPriors =\n%+v\nwant\n%+v", got, want)
	}
}

// TestProfileDemandFromTrainingOnly: a profile's measured demand comes
// from the sessions served it before the held-out part; one at or after
// the first held-out session, or served full, read-only or exploring,
// leaves it unchanged, and the same sessions give the same priors.
func TestProfileDemandFromTrainingOnly(t *testing.T) {
	full := sessionsOf(repeat(10, []string{"a"})...) // 8 derive, 2 held out: the cut is at full[8]
	served := func(at int, profile string, tools ...string) telemetry.Usage {
		return telemetry.Usage{Tools: tools, Calls: len(tools), Session: telemetry.Session{ID: fmt.Sprintf("p%d", at), Profile: profile,
			Start: full[at].Session.Start.Add(-time.Second)}}
	}
	for i := range full {
		full[i].Session.ID = fmt.Sprint(i)
	}
	cfg := Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget}
	priors := func(extra ...telemetry.Usage) *profiles.SearchPriors {
		t.Helper()
		res, err := Derive(append(slices.Clone(full), extra...), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return res.SearchPriors()
	}
	training := []telemetry.Usage{served(1, "lean", "b"), served(3, "lean", "b", "c"), served(5, "other", "c"), served(6, "lean", "nope")}
	got := priors(training...)
	want := []profiles.SearchProfile{
		{Name: "lean", Sessions: 2, Tools: []profiles.SearchTool{{Name: "b", Weight: 1}, {Name: "c", Weight: 0.5}}},
		{Name: "other", Sessions: 1, Tools: []profiles.SearchTool{{Name: "c", Weight: 1}}},
	}
	if !reflect.DeepEqual(got.Profiles, want) {
		t.Fatalf("profile demand = %+v, want %+v", got.Profiles, want)
	}
	heldOut := served(9, "lean", "d")
	late := served(9, "lean", "d")
	late.Session.Start = full[9].Session.Start.Add(time.Hour)
	firstHeld := served(8, "lean", "f")
	firstHeld.Session.Start = full[8].Session.Start.Add(time.Second)
	readOnly, exploring := served(2, "lean", "f"), served(2, "lean", "f")
	readOnly.Session.ReadOnly, exploring.Session.Exploration = true, true
	for name, extra := range map[string]telemetry.Usage{"held out": heldOut, "after the last": late, "after the first held out": firstHeld,
		"read-only": readOnly, "exploring": exploring, "full": served(2, "full", "f")} {
		if other := priors(append(slices.Clone(training), extra)...); !reflect.DeepEqual(got.Profiles, other.Profiles) {
			t.Errorf("a session %s changed the priors:\n%+v\n%+v", name, got.Profiles, other.Profiles)
		}
	}
	if again := priors(training...); !reflect.DeepEqual(got, again) {
		t.Errorf("the same sessions gave other priors:\n%+v\n%+v", got, again)
	}
}
