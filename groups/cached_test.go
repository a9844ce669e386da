package groups

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/telemetry"
)

// TestCachedLayoutCost prices hand-made sessions under one layout with
// exact expected totals, and checks each against price.SessionCost of the
// turns it amounts to. Tool 0 is the base (100 tokens, with enable_tools
// 120), group 0 is tool 1 (50 tokens, a 10-token switch), group 1 tool 2
// (30 tokens, 5), tool 3 is unreachable (full, 227 with enable_tools).
func TestCachedLayoutCost(t *testing.T) {
	l := &cachedLayout{inBase: []bool{true, false, false, false}, groupOf: []int{-1, 0, 1, -1},
		tok: []int{50, 30}, exch: []int{10, 5}, prefix: 120, fall: 227}
	cache := price.DefaultCache()
	cases := []struct {
		name  string
		path  derive.Path
		cache price.CacheModel
		want  float64
		turns []price.Turn
	}{
		{"no switch", derive.Path{Turns: 3, Steps: []derive.Step{{Tool: 0, Turn: 0}}}, cache,
			1.25*120 + 2*0.1*120, []price.Turn{{Prefix: 120}, {Prefix: 120}, {Prefix: 120}}},
		{"switch on the first turn", derive.Path{Turns: 3, Steps: []derive.Step{{Tool: 1, Turn: 0}}}, cache,
			1.25*180 + 2*0.1*180, []price.Turn{{Prefix: 170, Changed: true, Added: 10}, {Prefix: 170}, {Prefix: 170}}},
		{"switch on the last turn", derive.Path{Turns: 3, Steps: []derive.Step{{Tool: 0, Turn: 0}, {Tool: 2, Turn: 2}}}, cache,
			1.25*120 + 0.1*120 + 1.25*155, []price.Turn{{Prefix: 120}, {Prefix: 120}, {Prefix: 150, Changed: true, Added: 5}}},
		{"both groups, one switch each", derive.Path{Turns: 3, Steps: []derive.Step{{Tool: 1, Turn: 0}, {Tool: 2, Turn: 1}, {Tool: 1, Turn: 2}}}, cache,
			1.25*180 + 1.25*(200+15) + 0.1*215, []price.Turn{{Prefix: 170, Changed: true, Added: 10}, {Prefix: 200, Changed: true, Added: 5}, {Prefix: 200}}},
		{"unreachable: full from that turn", derive.Path{Turns: 3, Steps: []derive.Step{{Tool: 3, Turn: 1}, {Tool: 1, Turn: 2}}}, cache,
			1.25*120 + 1.25*227 + 0.1*227, []price.Turn{{Prefix: 120}, {Prefix: 227, Changed: true}, {Prefix: 227}}},
		{"conversation growth", derive.Path{Turns: 3, Steps: []derive.Step{{Tool: 0, Turn: 0}}}, price.CacheModel{Write: 1.25, Read: 0.1, Growth: 10},
			1.25*120 + (0.1*120 + 1.25*10) + (0.1*130 + 1.25*10), []price.Turn{{Prefix: 120}, {Prefix: 120}, {Prefix: 120}}},
	}
	for _, c := range cases {
		got := l.cost([]cachedPath{{Path: c.path, weight: 2}}, c.cache)
		if math.Abs(got-2*c.want) > 1e-9 {
			t.Errorf("%s: %v for two sessions, want %v", c.name, got, 2*c.want)
		}
		if ref := price.SessionCost(c.turns, c.cache); math.Abs(ref-c.want) > 1e-9 {
			t.Errorf("%s: price.SessionCost of the same turns is %v, want %v", c.name, ref, c.want)
		}
	}
	if got, want := fullCost([]cachedPath{{Path: derive.Path{Turns: 2}, weight: 1}}, 207, cache), 1.25*207+0.1*207; math.Abs(got-want) > 1e-9 {
		t.Errorf("full: %v, want %v", got, want)
	}
}

// TestChooseMinimisesCachedCost: on sessions whose second upstream is
// needed late (turn 6 of 8), the layout chosen costs no more per derive
// session with prompt caching than any candidate within the switch
// budget, nor than full, and its figures are the cached ones.
func TestChooseMinimisesCachedCost(t *testing.T) {
	counter := newCounter(t)
	sessions := mixedSessions(300, 11)
	paths := map[string]price.Session{}
	for i := range sessions {
		id := fmt.Sprintf("s%d", i)
		sessions[i].Session.ID = id
		first := upstreamOf(sessions[i].Tools[0])
		var tools []string
		var turns []int
		for _, tool := range sessions[i].Tools {
			turn := 0
			if upstreamOf(tool) != first {
				turn = 6
			}
			tools, turns = append(tools, tool), append(turns, turn)
		}
		s, err := price.NewSession(tools, turns, 8)
		if err != nil {
			t.Fatal(err)
		}
		paths[id] = s
	}
	catalog := mixedCatalog()
	bases, _ := staticBases(t, counter, catalog, sessions)
	res, err := Choose(sessions, Config{Catalog: catalog, Counter: counter, Holdout: derive.DefaultHoldout, Bases: bases, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Derive
	if d.SessionCost <= 0 || d.SessionCost >= d.SessionCostFull || math.Abs(d.SessionShareOfFull-d.SessionCost/d.SessionCostFull) > 1e-9 {
		t.Fatalf("derive: %.1f per session with caching, full %.1f, share %.4f", d.SessionCost, d.SessionCostFull, d.SessionShareOfFull)
	}
	if res.SearchCost > d.SessionCostFull {
		t.Errorf("chosen layout searched at %.1f per derive session, full costs %.1f", res.SearchCost, d.SessionCostFull)
	}
	for _, c := range res.Candidates {
		if c.Feasible && res.SearchCost > c.SessionCost+1e-9 {
			t.Errorf("chosen layout costs %.1f per derive session with caching, candidate %+v costs %.1f", res.SearchCost, c, c.SessionCost)
		}
	}
	// The final names price enable_tools and the switches exactly.
	if r := d.SessionCost / res.SearchCost; r < 0.9 || r > 1.1 {
		t.Errorf("derive: %.1f per session with the final names, %.1f as searched", d.SessionCost, res.SearchCost)
	}
	if h := res.Holdout; h.SessionCost <= 0 || h.SessionShareOfFull >= 1 {
		t.Errorf("held-out: %.1f per session with caching, %.4f of full", h.SessionCost, h.SessionShareOfFull)
	}
}

func upstreamOf(tool string) string { return Upstream(tool) }

// TestChooseCachedPrefersNoLateSwitch: four large tools every session
// calls on its first turn and a large one 60% of sessions call on the last
// of ten. Counting definitions once (the context model), a group for the
// late tool is cheaper than listing it; with prompt caching its switch
// writes the whole prefix again late in the session, and listing it from
// the start (here: full) costs less. Choose takes the cached cost.
func TestChooseCachedPrefersNoLateSwitch(t *testing.T) {
	counter := newCounter(t)
	var catalog []*mcp.Tool
	for i := range 4 {
		catalog = append(catalog, &mcp.Tool{Name: fmt.Sprintf("alpha__big%d", i), Description: strings.Repeat("does one thing well ", 60), InputSchema: map[string]any{"type": "object"}})
	}
	catalog = append(catalog, &mcp.Tool{Name: "alpha__late", Description: strings.Repeat("does a later thing ", 80), InputSchema: map[string]any{"type": "object"}})
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var sessions []telemetry.Usage
	paths := map[string]price.Session{}
	for i := range 200 {
		tools := []string{"alpha__big0", "alpha__big1", "alpha__big2", "alpha__big3"}
		turns := []int{0, 0, 0, 0}
		if i%5 < 3 {
			tools, turns = append(tools, "alpha__late"), append(turns, 9)
		}
		id := fmt.Sprintf("s%d", i)
		s, err := price.NewSession(tools, turns, 10)
		if err != nil {
			t.Fatal(err)
		}
		paths[id] = s
		sessions = append(sessions, telemetry.Usage{Tools: slices.Sorted(slices.Values(tools)), Calls: len(tools), Session: telemetry.Session{ID: id, Start: start.Add(time.Duration(i) * time.Minute)}})
	}
	res, err := Choose(sessions, Config{Catalog: catalog, Counter: counter, Holdout: derive.DefaultHoldout, Paths: paths})
	if err != nil {
		t.Fatal(err)
	}
	d := res.Derive
	if d.SessionCost > d.SessionCostFull+1e-9 {
		t.Errorf("chosen layout (base from %s, %d groups) costs %.1f per derive session with caching, full %.1f", res.BaseFrom, len(res.Groups), d.SessionCost, d.SessionCostFull)
	}
	grouped := slices.ContainsFunc(res.Candidates, func(c Candidate) bool { return c.Feasible && c.Groups > 0 && c.MeanTokens < float64(d.FullTokens) })
	if !grouped {
		t.Errorf("no candidate groups the late tool for fewer context-model tokens than full: the case does not test the choice: %+v", res.Candidates)
	}
}
