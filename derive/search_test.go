package derive

import (
	"reflect"
	"testing"

	"github.com/toolprof/toolprof/profiles"
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
