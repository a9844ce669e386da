package groups

import (
	"math"
	"testing"

	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// handLayout is the tiny example the expected-token tests compute by hand:
// tools 0..4 cost 10, 20, 30, 40, 50 tokens; base {0}; group 0 = {1, 2}
// (50 tokens, exchange 5), group 1 = {3} (40 tokens, exchange 6); tool 4
// is in no group (the profile may not hold it); enable_tools costs 7; the
// full catalog 150.
func handLayout() (*layout, *pricing) {
	return newLayout(5, []int{0}, [][]int{{1, 2}, {3}}),
		&pricing{tool: []int{10, 20, 30, 40, 50}, full: 150, enable: 7, exchange: []int{5, 6}}
}

func TestSessionCostByHand(t *testing.T) {
	l, p := handLayout()
	for _, tc := range []struct {
		name     string
		demand   []int
		want     sessionCost
		whyWant  string
		noGroups bool
	}{
		{name: "base only", demand: []int{0}, want: sessionCost{tokens: 17, tokensAll: 17}, whyWant: "10 + 7"},
		{name: "no tool at all", demand: nil, want: sessionCost{tokens: 17, tokensAll: 17}, whyWant: "10 + 7"},
		{name: "one switch", demand: []int{0, 1}, want: sessionCost{tokens: 72, tokensAll: 89, switches: 1},
			whyWant: "context 17 + 5 + 50; wire 17 + 5 + (17 + 50)"},
		{name: "two tools one group", demand: []int{1, 2}, want: sessionCost{tokens: 72, tokensAll: 89, switches: 1}, whyWant: "the group is paid once"},
		{name: "two switches, smaller group first on the wire", demand: []int{2, 3}, want: sessionCost{tokens: 118, tokensAll: 192, switches: 2},
			whyWant: "context 17 + (5+50) + (6+40); wire 17 + [6 + (17+40)] + [5 + (17+40+50)]"},
		{name: "unreachable tool: served full", demand: []int{1, 4}, want: sessionCost{tokens: 150, tokensAll: 150, fallback: true}, whyWant: "full catalog, no switch"},
		{name: "no groups offered: enable_tools not listed", demand: []int{0}, noGroups: true, want: sessionCost{tokens: 10, tokensAll: 10}, whyWant: "base alone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ll := l
			if tc.noGroups {
				ll = newLayout(5, []int{0}, nil)
			}
			got, _ := ll.cost(tc.demand, p, nil)
			if got != tc.want {
				t.Errorf("cost(%v) = %+v, want %+v (%s)", tc.demand, got, tc.want, tc.whyWant)
			}
		})
	}
}

func TestMeasureByHand(t *testing.T) {
	l, p := handLayout()
	sessions := []weighted{
		{tools: []int{0}, weight: 2},    // 17 each, 0 switches, floor 10
		{tools: []int{0, 1}, weight: 1}, // 72, 1 switch, floor 30
		{tools: []int{2, 3}, weight: 1}, // 118, 2 switches, floor 70
		{tools: []int{1, 4}, weight: 1}, // 150 (full), 0 switches, floor 70
	}
	got := l.measure(sessions, p)
	want := Figures{
		Sessions:       5,
		MeanTokens:     374.0 / 5, // 17*2 + 72 + 118 + 150
		MeanTokensWire: 465.0 / 5, // 17*2 + 89 + 192 + 150
		FullTokens:     150,
		ShareOfFull:    374.0 / 5 / 150,
		FloorTokens:    190.0 / 5, // 10*2 + 30 + 70 + 70
		OverFloor:      374.0 / 190,
		MeanSwitches:   3.0 / 5,
		P95Switches:    2, // sorted 0 0 0 1 2: nearest rank ceil(0.95*5) = 5th
		MaxSwitches:    2,
		NoSwitch:       3,
		NoSwitchShare:  3.0 / 5,
		Fallback:       1,
	}
	if !closeFigures(got, want) {
		t.Errorf("measure =\n%+v\nwant\n%+v", got, want)
	}
	if empty := l.measure(nil, p); empty.Sessions != 0 || empty.MeanTokens != 0 || empty.ShareOfFull != 0 {
		t.Errorf("no sessions: %+v, want zero figures", empty)
	}
}

func closeFigures(a, b Figures) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return a.Sessions == b.Sessions && eq(a.MeanTokens, b.MeanTokens) && eq(a.MeanTokensWire, b.MeanTokensWire) &&
		a.FullTokens == b.FullTokens && eq(a.ShareOfFull, b.ShareOfFull) && eq(a.FloorTokens, b.FloorTokens) &&
		eq(a.OverFloor, b.OverFloor) && eq(a.MeanSwitches, b.MeanSwitches) && a.P95Switches == b.P95Switches &&
		a.MaxSwitches == b.MaxSwitches && a.NoSwitch == b.NoSwitch && eq(a.NoSwitchShare, b.NoSwitchShare) && a.Fallback == b.Fallback
}

func TestNearestRank(t *testing.T) {
	for _, tc := range []struct {
		n    int
		q    float64
		want int
	}{{1, 0.95, 0}, {5, 0.95, 4}, {20, 0.95, 18}, {100, 0.95, 94}, {10, 0.5, 4}} {
		if got := nearestRank(tc.n, tc.q); got != tc.want {
			t.Errorf("nearestRank(%d, %v) = %d, want %d", tc.n, tc.q, got, tc.want)
		}
	}
}

func TestUpperBound(t *testing.T) {
	// Observations 0, 2 (n=2): mean 1, sample variance 2, bound 1 + 1.96*sqrt(2/2).
	if got, want := upperBound(2, 4, 2), 1+1.959963984540054; math.Abs(got-want) > 1e-12 {
		t.Errorf("upperBound = %v, want %v", got, want)
	}
	if got := upperBound(3, 9, 1); got != 3 {
		t.Errorf("one observation: %v, want the mean 3", got)
	}
	if got := upperBound(0, 0, 0); got != 0 {
		t.Errorf("no observation: %v, want 0", got)
	}
}

// TestExchangeTokens pins what one switch's exchange costs: the tokens of
// the request and the result JSON exactly as they travel.
func TestExchangeTokens(t *testing.T) {
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	s := &searcher{names: []string{"fs.cd", "fs.ls"}, counter: counter}
	got, err := s.exchangeTokens("fs", []int{0, 1})
	if err != nil {
		t.Fatal(err)
	}
	req := `{"name":"enable_tools","arguments":{"group":"fs"}}`
	res := `{"content":[{"type":"text","text":"Group fs is on: 2 tools added (fs.cd, fs.ls)."}]}`
	a, _ := s.count(req)
	b, _ := s.count(res)
	if got != a+b {
		t.Errorf("exchange = %d tokens, want %d (request %d + result %d)", got, a+b, a, b)
	}
	rb, _ := exchange.EncodeAsServed(profiles.EnableToolsRequest("fs"))
	if string(rb) != req {
		t.Errorf("request JSON %s, want %s", rb, req)
	}
	resb, _ := exchange.EncodeAsServed(profiles.EnableToolsResult("fs", []string{"fs.cd", "fs.ls"}))
	if string(resb) != res {
		t.Errorf("result JSON %s, want %s", resb, res)
	}
}
