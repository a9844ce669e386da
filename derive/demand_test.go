package derive

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/toolprof/toolprof/opcontext"
	"github.com/toolprof/toolprof/profiles"
	"pgregory.net/rapid"
)

func TestCatalogDemand(t *testing.T) {
	index := map[string]int{"a": 0, "b": 1}
	clash := map[string]int{"a": 0, profiles.EnableToolsName: 1} // an upstream offers enable_tools: the gateway serves that one
	tests := []struct {
		name        string
		index       map[string]int
		names       []string
		want        []int
		wantMiss    bool
		wantUnknown []string
	}{
		{"catalog tools are demand", index, []string{"b", "a"}, []int{1, 0}, false, nil},
		{"a tool the catalog lacks is unknown", index, []string{"a", "zz"}, []int{0}, true, []string{"zz"}},
		{"enable_tools is the gateway's: no demand, not unknown", index, []string{profiles.EnableToolsName, "a"}, []int{0}, false, nil},
		{"get_operating_context is the gateway's: no demand, not unknown", index, []string{opcontext.ToolName}, nil, false, nil},
		{"an upstream's enable_tools in the catalog is demand", clash, []string{profiles.EnableToolsName}, []int{1}, false, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			unknown := map[string]bool{}
			got, miss := CatalogDemand(nil, tc.names, tc.index, unknown)
			var names []string
			for n := range unknown {
				names = append(names, n)
			}
			if !slices.Equal(got, tc.want) || miss != tc.wantMiss || !slices.Equal(names, tc.wantUnknown) {
				t.Errorf("got %v miss %v unknown %v, want %v %v %v", got, miss, names, tc.want, tc.wantMiss, tc.wantUnknown)
			}
		})
	}
}

func TestGatewayTool(t *testing.T) {
	for name, want := range map[string]bool{profiles.EnableToolsName: true, opcontext.ToolName: true, "a": false, "fs__enable_tools": false} {
		if GatewayTool(name) != want {
			t.Errorf("GatewayTool(%q) = %v, want %v", name, !want, want)
		}
	}
}

func TestTimeOrder(t *testing.T) {
	at := func(h int) time.Time { return t0.Add(time.Duration(h) * time.Hour) }
	tests := []struct {
		name   string
		starts []time.Time // zero: undated
		want   []int       // input positions in output order
	}{
		{"in order", []time.Time{at(1), at(2), at(3)}, []int{0, 1, 2}},
		{"sorted by start", []time.Time{at(3), at(1), at(2)}, []int{1, 2, 0}},
		{"undated keeps its place after the session before it", []time.Time{at(3), {}, at(1)}, []int{2, 0, 1}},
		{"equal starts keep their order", []time.Time{at(2), at(1), at(2), at(1)}, []int{1, 3, 0, 2}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			in := make([]Demand, len(tc.starts))
			for i, s := range tc.starts {
				in[i] = Demand{Tools: []int{i}, Start: s}
			}
			var got []int
			for _, d := range TimeOrder(in) {
				got = append(got, d.Tools[0])
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("order %v, want %v", got, tc.want)
			}
		})
	}
}

// TestDeriveGatewayTools: a session calling the gateway's own tools is
// learned from for its upstream tools only, with no unknown tool counted.
func TestDeriveGatewayTools(t *testing.T) {
	ss := sessionsOf([]string{"a", profiles.EnableToolsName, opcontext.ToolName}, []string{"a"}, []string{opcontext.ToolName})
	res, err := Derive(ss, Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if c.UnknownToolSessions != 0 || len(c.UnknownTools) != 0 || c.Full != 3 {
		t.Errorf("counts %+v: want 3 sessions learned from, none calling an unknown tool", c)
	}
	if got := fmt.Sprint(res.Problem.Sigs, res.Problem.Free); got != "[{[0] 2}] 1" {
		t.Errorf("derive signatures %s, want [{[0] 2}] 1: demand for a twice, the gateway-only session free", got)
	}
}

// timeOrder, which checks the order before building sort keys, gives the
// permutation of sorting the carried-forward starts stably, and nil
// exactly when they are sorted already.
func TestTimeOrderMatchesStableSort(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		hours := rapid.SliceOf(rapid.IntRange(-1, 6)).Draw(t, "hours") // -1: undated
		starts := make([]time.Time, len(hours))
		for i, h := range hours {
			if h >= 0 {
				starts[i] = t0.Add(time.Duration(h) * time.Hour)
			}
		}
		keys := make([]time.Time, len(starts))
		var last time.Time
		for i, s := range starts {
			if !s.IsZero() {
				last = s
			}
			keys[i] = last
		}
		var want []int
		if !slices.IsSortedFunc(keys, func(a, b time.Time) int { return a.Compare(b) }) {
			want = make([]int, len(starts))
			for i := range want {
				want[i] = i
			}
			slices.SortStableFunc(want, func(a, b int) int { return keys[a].Compare(keys[b]) })
		}
		if got := TimeOrderIndex(starts); !slices.Equal(got, want) || (got == nil) != (want == nil) {
			t.Fatalf("starts %v: order %v, want %v", hours, got, want)
		}
	})
}
