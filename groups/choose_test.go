package groups

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/internal/golden"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

var upstreams = []string{"alpha", "beta", "gamma", "delta"}

// mixedCatalog has four upstreams of ten tools each ("alpha__t0" ...),
// with descriptions of different lengths so that tools cost differently.
func mixedCatalog() []*mcp.Tool {
	var tools []*mcp.Tool
	for u, up := range upstreams {
		for i := range 10 {
			tools = append(tools, &mcp.Tool{
				Name:        fmt.Sprintf("%s__t%d", up, i),
				Description: strings.Repeat("does one thing well ", 3+(u*7+i*5)%17),
				InputSchema: map[string]any{"type": "object", "properties": map[string]any{"x": map[string]any{"type": "string"}}},
			})
		}
	}
	return tools
}

// mixedSessions is a mixed workload over mixedCatalog: each session uses one
// upstream (60%) or two, and within each one planted task cluster (tools
// 0-3 or 4-7), 2-4 of its tools. Tools 8 and 9 of every upstream are never
// used. Sessions are dated a minute apart.
func mixedSessions(n int, seed uint64) []telemetry.Usage {
	rng := rand.New(rand.NewPCG(seed, 2))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	var out []telemetry.Usage
	for i := range n {
		ups := []int{rng.IntN(len(upstreams))}
		if rng.IntN(10) >= 6 {
			ups = append(ups, (ups[0]+1+rng.IntN(len(upstreams)-1))%len(upstreams))
		}
		var tools []string
		for _, u := range ups {
			first := 4 * rng.IntN(2)
			k := 2 + rng.IntN(3)
			for _, j := range rng.Perm(4)[:k] {
				tools = append(tools, fmt.Sprintf("%s__t%d", upstreams[u], first+j))
			}
		}
		slices.Sort(tools)
		out = append(out, telemetry.Usage{Tools: tools, Session: telemetry.Session{Start: start.Add(time.Duration(i) * time.Minute)}})
	}
	return out
}

func newCounter(t *testing.T) *price.Counter {
	t.Helper()
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// staticBases derives core and standard static profiles from the sessions
// with the derive package, as profiler derive would.
func staticBases(t *testing.T, counter *price.Counter, catalog []*mcp.Tool, sessions []telemetry.Usage) ([]Base, *derive.Result) {
	t.Helper()
	costs, err := exchange.ModelToolCosts(catalog, counter)
	if err != nil {
		t.Fatal(err)
	}
	tools := make([]derive.Tool, len(costs))
	for i, c := range costs {
		tools[i] = derive.Tool{Name: c.Name, Bytes: c.Bytes, Tokens: c.Model[price.DefaultFamily]}
	}
	ds := make([]telemetry.Usage, len(sessions))
	for i, s := range sessions {
		ds[i] = telemetry.Usage{Tools: s.Tools, Calls: len(s.Tools), Session: telemetry.Session{Start: s.Session.Start}}
	}
	res, err := derive.Derive(ds, derive.Config{Tools: tools, Specs: derive.DefaultSpecs(), Holdout: derive.DefaultHoldout, DefaultTarget: derive.DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	var bases []Base
	for _, p := range res.Profiles[:len(res.Profiles)-1] {
		bases = append(bases, Base{Name: p.Name, Tools: p.Tools})
	}
	return bases, res
}

func chooseMixed(t *testing.T, counter *price.Counter, cfg Config) (*Result, *derive.Result) {
	t.Helper()
	catalog := mixedCatalog()
	sessions := mixedSessions(300, 11)
	bases, dres := staticBases(t, counter, catalog, sessions)
	cfg.Catalog, cfg.Counter, cfg.Holdout, cfg.Bases = catalog, counter, derive.DefaultHoldout, bases
	res, err := Choose(sessions, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return res, dres
}

func TestChooseNeverWorseThanStatic(t *testing.T) {
	counter := newCounter(t)
	res, dres := chooseMixed(t, counter, Config{})
	if len(res.Groups) == 0 {
		t.Fatalf("no groups chosen on a mixed workload (base from %s)", res.BaseFrom)
	}
	full := dres.Profiles[len(dres.Profiles)-1]
	if res.Holdout.FullTokens != full.Tokens {
		t.Fatalf("full catalog %d tokens, derive says %d", res.Holdout.FullTokens, full.Tokens)
	}
	for _, st := range res.Static {
		for _, part := range []struct {
			name string
			f    Figures
		}{{"derive", res.Derive}, {"held-out", res.Holdout}} {
			if part.f.MeanTokens > float64(st.Tokens) {
				t.Errorf("%s: base+groups cost %.1f tokens per session, more than static %s's %d", part.name, part.f.MeanTokens, st.Name, st.Tokens)
			}
		}
		t.Logf("static %s: %d tokens, held-out coverage %.1f%%", st.Name, st.Tokens, 100*st.HoldoutCoverage)
	}
	if res.Holdout.ShareOfFull >= 1 || res.Holdout.Fallback != 0 {
		t.Errorf("held-out: %.2f of full, %d served full", res.Holdout.ShareOfFull, res.Holdout.Fallback)
	}
	if res.Holdout.FloorTokens <= 0 || res.Holdout.OverFloor < 1 {
		t.Errorf("held-out floor %.1f, ratio %.2f: expected tokens can never be below the used tools' own", res.Holdout.FloorTokens, res.Holdout.OverFloor)
	}
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + table.String())
}

func TestChooseGroupsCoverCatalogWithinUpstreams(t *testing.T) {
	res, _ := chooseMixed(t, newCounter(t), Config{})
	where := map[string]string{}
	for _, b := range res.Base {
		where[b] = "base"
	}
	for _, g := range res.Groups {
		up := Upstream(g.Tools[0])
		for _, tool := range g.Tools {
			if Upstream(tool) != up {
				t.Errorf("group %s mixes upstreams %s and %s", g.Name, up, Upstream(tool))
			}
			if prev, ok := where[tool]; ok {
				t.Errorf("tool %s in %s and in group %s", tool, prev, g.Name)
			}
			where[tool] = g.Name
			unused := strings.HasSuffix(tool, "__t8") || strings.HasSuffix(tool, "__t9")
			if unused != strings.HasSuffix(g.Name, "-other") {
				t.Errorf("tool %s (never used: %v) in group %s", tool, unused, g.Name)
			}
		}
		if !strings.Contains(g.Description, fmt.Sprintf("(%d tool", len(g.Tools))) {
			t.Errorf("group %s description %q does not count its %d tools", g.Name, g.Description, len(g.Tools))
		}
	}
	for _, tool := range mixedCatalog() {
		if _, ok := where[tool.Name]; !ok {
			t.Errorf("tool %s is neither in the base nor in a group", tool.Name)
		}
	}
}

func TestChooseDeterministic(t *testing.T) {
	counter := newCounter(t)
	render := func() string {
		res, dres := chooseMixed(t, counter, Config{})
		var b bytes.Buffer
		if err := res.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		f := dres.File()
		if err := res.Apply(f, DefaultProfile); err != nil {
			t.Fatal(err)
		}
		if err := profiles.Encode(&b, f); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	first := render()
	if second := render(); second != first {
		t.Errorf("two runs differ:\n%s\n---\n%s", first, second)
	}
}

func TestChooseSwitchBudget(t *testing.T) {
	counter := newCounter(t)
	var prev *Result
	for _, budget := range []float64{3, 1, 0.3} {
		res, _ := chooseMixed(t, counter, Config{MaxSwitches: budget})
		i := slices.IndexFunc(res.Candidates, func(c Candidate) bool {
			return c.Base == res.BaseFrom && c.Resolution == res.Resolution && c.Penalty == res.Penalty
		})
		if res.BaseFrom != profiles.FullProfile {
			if i < 0 {
				t.Fatalf("budget %v: chosen start %s/%g/%d is not among the candidates", budget, res.BaseFrom, res.Resolution, res.Penalty)
			}
			if c := res.Candidates[i]; !c.Feasible || c.SwitchesBound > budget {
				t.Errorf("budget %v: chosen candidate %+v is over budget", budget, c)
			}
		}
		if res.Derive.MeanSwitches > budget {
			t.Errorf("budget %v: derive mean switches %.2f", budget, res.Derive.MeanSwitches)
		}
		if prev != nil {
			if res.Derive.MeanSwitches >= prev.Derive.MeanSwitches {
				t.Errorf("budget %v: mean switches %.2f, not fewer than %.2f under the looser budget", budget, res.Derive.MeanSwitches, prev.Derive.MeanSwitches)
			}
			if res.Derive.MeanTokens < prev.Derive.MeanTokens {
				t.Errorf("budget %v: %.1f tokens, fewer than %.1f under the looser budget, which could have chosen it", budget, res.Derive.MeanTokens, prev.Derive.MeanTokens)
			}
		}
		infeasible := slices.ContainsFunc(res.Candidates, func(c Candidate) bool { return !c.Feasible })
		if budget < 1 && !infeasible {
			t.Errorf("budget %v: every candidate feasible; the budget did not bind", budget)
		}
		prev = res
	}
}

func TestChooseFullWins(t *testing.T) {
	// Every session uses every tool: any group only adds enable_tools and
	// switch exchanges, so serving full is cheapest.
	catalog := mixedCatalog()[:6]
	var all []string
	for _, tl := range catalog {
		all = append(all, tl.Name)
	}
	sessions := make([]telemetry.Usage, 50)
	for i := range sessions {
		sessions[i] = telemetry.Usage{Tools: all}
	}
	res, err := Choose(sessions, Config{Catalog: catalog, Counter: newCounter(t), Holdout: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	if res.BaseFrom != profiles.FullProfile || len(res.Groups) != 0 || res.Enable != nil {
		t.Fatalf("base from %s with %d groups, want full and none", res.BaseFrom, len(res.Groups))
	}
	if res.Holdout.MeanTokens != float64(res.Holdout.FullTokens) || res.Holdout.MeanSwitches != 0 || res.Holdout.NoSwitchShare != 1 {
		t.Errorf("held-out %+v, want the full catalog's tokens and no switch", res.Holdout)
	}
	f := &profiles.File{Version: profiles.Version, Default: "full", Profiles: []profiles.Profile{{Name: "full", Tools: all}}}
	if err := res.Apply(f, DefaultProfile); err != nil || len(f.Profiles) != 1 || len(f.Groups) != 0 {
		t.Errorf("Apply without groups changed the file: %v, %+v", err, f)
	}
}

func TestChooseDestructive(t *testing.T) {
	catalog := mixedCatalog()
	yes := true
	catalog[0].Annotations = &mcp.ToolAnnotations{DestructiveHint: &yes} // alpha__t0, used
	sessions := mixedSessions(200, 5)
	counter := newCounter(t)
	for _, allow := range []bool{false, true} {
		res, err := Choose(sessions, Config{Catalog: catalog, Counter: counter, Holdout: 0.2, AllowDestructive: allow})
		if err != nil {
			t.Fatal(err)
		}
		held := slices.Contains(res.Base, "alpha__t0")
		for _, g := range res.Groups {
			held = held || slices.Contains(g.Tools, "alpha__t0")
		}
		if held != allow {
			t.Errorf("allow_destructive %v: destructive tool held by base or group: %v", allow, held)
		}
		if fb := res.Derive.Fallback > 0; fb == allow {
			t.Errorf("allow_destructive %v: %d derive sessions served full", allow, res.Derive.Fallback)
		}
	}
}

func TestSelectSessionsSwitchesAreDemand(t *testing.T) {
	index := map[string]int{"a.x": 0, "a.y": 1, "a.z": 2}
	prior := &profiles.File{Version: 1, Default: "lean",
		Profiles: []profiles.Profile{{Name: "lean", Tools: []string{"a.x"}, Groups: []string{"g"}}, {Name: "core", Tools: []string{"a.x"}}, {Name: "full", Tools: []string{"a.x", "a.y", "a.z"}}},
		Groups:   []profiles.Group{{Name: "g", Tools: []string{"a.y", "a.z", "gone.tool"}}}}
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	sessions := []telemetry.Usage{
		{Tools: []string{"a.x", profiles.EnableToolsName}, Session: telemetry.Session{Switches: []telemetry.Switch{{Group: "g"}}, Profile: "lean", Start: start}},                  // switched: x, y, z; enable_tools is the gateway's
		{Tools: []string{"a.x"}, Session: telemetry.Session{Profile: "core", Start: start.Add(time.Minute)}},                                                                       // restricted: skipped
		{Tools: []string{profiles.EnableToolsName}, Session: telemetry.Session{Switches: []telemetry.Switch{{Group: "nope"}}, Profile: "lean", Start: start.Add(2 * time.Minute)}}, // unknown group: no demand
		{Tools: []string{"a.y", "b.q", "get_operating_context"}, Session: telemetry.Session{Start: start.Add(-time.Minute)}},                                                       // no profile: saw all; b.q unknown, the gateway's tool not
		{Tools: []string{"a.z"}, Session: telemetry.Session{Profile: "full", Exploration: false}},                                                                                  // no start: after the previous
		{Tools: []string{"a.x"}, Session: telemetry.Session{Profile: "full", Exploration: true, Start: start.Add(time.Hour)}},                                                      // exploring, served full: used
		{Tools: []string{"a.y"}, Session: telemetry.Session{Profile: "core", Exploration: true, Start: start.Add(2 * time.Hour)}},                                                  // exploring under a ceiling: restricted
		{Tools: []string{"a.z"}, Session: telemetry.Session{Profile: "full", ReadOnly: true, Start: start.Add(3 * time.Hour)}},                                                     // full but read-only: restricted
	}
	used, _, c := selectSessions(sessions, index, prior, nil)
	var got []string
	for _, u := range used {
		got = append(got, fmt.Sprint(u.Tools))
	}
	want := []string{"[1]", "[2]", "[0 1 2]", "[]", "[0]"}
	if !slices.Equal(got, want) {
		t.Errorf("demand %v, want %v (time order, switches expanded)", got, want)
	}
	wantC := Counts{Input: 8, Used: 5, Restricted: 3, Grouped: 2, ZeroCalls: 0, UnknownCalls: 1, UnknownTools: []string{"b.q"}, UnknownGroups: []string{"nope"}}
	if fmt.Sprint(c) != fmt.Sprint(wantC) {
		t.Errorf("counts %+v, want %+v", c, wantC)
	}
	// Without the prior file a grouped profile's sessions cannot be read.
	if _, _, c := selectSessions(sessions, index, nil, nil); c.Restricted != 5 || c.Grouped != 0 {
		t.Errorf("no prior: %+v, want the three served sessions and the two restricted ones restricted", c)
	}
}

func TestChooseLearnsFromSwitches(t *testing.T) {
	// Sessions served a grouped profile only switched beta's group on:
	// beta's tools are demand (co-used), not unused catch-all material.
	catalog := mixedCatalog()
	var names []string
	for _, tl := range catalog {
		names = append(names, tl.Name)
	}
	beta := []string{"beta__t0", "beta__t1", "beta__t2"}
	var rest []string
	for _, n := range names {
		if !slices.Contains(beta, n) {
			rest = append(rest, n)
		}
	}
	prior := &profiles.File{Version: 1, Default: "lean",
		Profiles: []profiles.Profile{{Name: "lean", Tools: nil, Groups: []string{"b", "rest"}}},
		Groups:   []profiles.Group{{Name: "b", Tools: beta}, {Name: "rest", Tools: rest}}}
	sessions := mixedSessions(100, 3)
	for range 40 {
		sessions = append(sessions, telemetry.Usage{Session: telemetry.Session{Profile: "lean", Switches: []telemetry.Switch{{Group: "b"}}}})
	}
	res, err := Choose(sessions, Config{Catalog: catalog, Counter: newCounter(t), Holdout: 0, Prior: prior})
	if err != nil {
		t.Fatal(err)
	}
	if res.Counts.Grouped != 40 {
		t.Fatalf("grouped sessions %d, want 40", res.Counts.Grouped)
	}
	// No held-out part: its figures are not evaluable, never 100%.
	var table bytes.Buffer
	if err := res.WriteTable(&table); err != nil {
		t.Fatal(err)
	}
	if res.Holdout.Sessions != 0 || !strings.Contains(table.String(), "held-out  0         not evaluable") {
		t.Errorf("held-out %+v; table:\n%s", res.Holdout, table.String())
	}
	f := &profiles.File{Version: 1, Default: "full", Profiles: []profiles.Profile{{Name: "full", Tools: names}}}
	if err := res.Apply(f, DefaultProfile); err != nil {
		t.Fatal(err)
	}
	if m := f.Profiles[len(f.Profiles)-1].Measured; m.HoldoutCoverage != nil || !slices.Equal(m.NotEvaluable, []string{"holdout_ci", "holdout_coverage"}) {
		t.Errorf("grouped profile measured %+v, want held-out figures not evaluable", m)
	}
	for _, g := range res.Groups {
		if strings.HasSuffix(g.Name, "-other") && slices.ContainsFunc(beta, func(b string) bool { return slices.Contains(g.Tools, b) }) {
			t.Errorf("switched-on tools in catch-all %s: %v", g.Name, g.Tools)
		}
	}
}

func TestChooseConfigErrors(t *testing.T) {
	counter := newCounter(t)
	catalog := mixedCatalog()[:3]
	dup := append(slices.Clone(catalog), catalog[0])
	for _, tc := range []struct {
		name string
		cfg  Config
		want string
	}{
		{"no counter", Config{Catalog: catalog}, "token counter is required"},
		{"holdout 1", Config{Catalog: catalog, Counter: counter, Holdout: 1}, "holdout 1: want a share in [0,1)"},
		{"negative holdout", Config{Catalog: catalog, Counter: counter, Holdout: -0.1}, "holdout -0.1"},
		{"empty catalog", Config{Counter: counter}, "the catalog has no tools"},
		{"negative resolution", Config{Catalog: catalog, Counter: counter, Resolutions: []float64{1, -1}}, "resolution -1: want a finite number >= 0"},
		{"negative switches", Config{Catalog: catalog, Counter: counter, MaxSwitches: -1}, "max switches -1"},
		{"negative describe", Config{Catalog: catalog, Counter: counter, DescribeTools: -2}, "describe -2 tools"},
		{"duplicate tool", Config{Catalog: dup, Counter: counter}, `catalog lists tool "alpha__t0" twice`},
		{"reserved base", Config{Catalog: catalog, Counter: counter, Bases: []Base{{Name: "full"}}}, `candidate base name "full"`},
		{"cost missing", Config{Catalog: catalog, Counter: counter, Costs: map[string]exchange.ToolCost{"alpha__t0": {}}}, `no cost given for catalog tool "alpha__t1"`},
		{"unnamed base", Config{Catalog: catalog, Counter: counter, Bases: []Base{{Tools: []string{"alpha__t0"}}}}, `candidate base name ""`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Choose(nil, tc.cfg)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want one containing %q", err, tc.want)
			}
		})
	}
}

func TestApply(t *testing.T) {
	counter := newCounter(t)
	// No derived bases: the golden file depends on this package alone, not
	// on how derive's solver chooses core and standard.
	catalog := mixedCatalog()
	res, err := Choose(mixedSessions(300, 11), Config{Catalog: catalog, Counter: counter, Holdout: derive.DefaultHoldout})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Groups) == 0 {
		t.Fatal("no groups")
	}
	var all []string
	for _, tl := range catalog {
		all = append(all, tl.Name)
	}
	t.Run("new profile, golden", func(t *testing.T) {
		f := &profiles.File{Version: profiles.Version, Default: profiles.FullProfile, Profiles: []profiles.Profile{{Name: profiles.FullProfile, Tools: all}}}
		if err := res.Apply(f, DefaultProfile); err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := profiles.Encode(&b, f); err != nil {
			t.Fatal(err)
		}
		golden.Assert(t, filepath.Join("testdata", "mixed.generated.toml"), b.Bytes())
		back, err := profiles.DecodeFile(bytes.NewReader(b.Bytes()), "mixed.generated.toml")
		if err != nil {
			t.Fatalf("the file does not load back: %v", err)
		}
		lean := back.Profiles[slices.IndexFunc(back.Profiles, func(p profiles.Profile) bool { return p.Name == DefaultProfile })]
		if len(lean.Groups) != len(res.Groups) || len(back.Groups) != len(res.Groups) || back.Default != profiles.FullProfile {
			t.Errorf("loaded back: %d groups offered, %d defined, default %s; want %d, %d, full (unchanged)", len(lean.Groups), len(back.Groups), back.Default, len(res.Groups), len(res.Groups))
		}
		m := lean.Measured
		if m == nil || m.Sessions != res.Derive.Sessions || m.TokensO200k != res.BaseTokens || m.Bytes != res.BaseBytes || m.HoldoutCoverage == nil || *m.HoldoutCoverage != round4(res.Holdout.NoSwitchShare) {
			t.Errorf("grouped profile measured %+v; want its base's figures and the no-switch share as coverage", m)
		}
	})
	t.Run("existing profile with the base's tools offers the groups", func(t *testing.T) {
		f := &profiles.File{Version: 1, Default: "mine", Profiles: []profiles.Profile{{Name: "mine", Tools: slices.Clone(res.Base)}}}
		if err := res.Apply(f, DefaultProfile); err != nil {
			t.Fatal(err)
		}
		if len(f.Profiles) != 1 || len(f.Profiles[0].Groups) != len(res.Groups) {
			t.Errorf("profiles %+v, want mine offering %d groups", f.Profiles, len(res.Groups))
		}
	})
	t.Run("name taken by other tools", func(t *testing.T) {
		f := &profiles.File{Version: 1, Default: "lean", Profiles: []profiles.Profile{{Name: "lean", Tools: []string{"nothing"}}}}
		if err := res.Apply(f, DefaultProfile); err == nil || !strings.Contains(err.Error(), `profile "lean" exists`) {
			t.Errorf("error %v", err)
		}
	})
	t.Run("group defined already", func(t *testing.T) {
		f := &profiles.File{Version: 1, Default: "x", Groups: []profiles.Group{{Name: res.Groups[0].Name}}}
		if err := res.Apply(f, DefaultProfile); err == nil || !strings.Contains(err.Error(), "already defines group") {
			t.Errorf("error %v", err)
		}
	})
}

func TestEnableToolsToolGolden(t *testing.T) {
	groups := []profiles.Group{
		{Name: "fs", Description: "fs: cd, ls, … (12 tools)", Tools: []string{"fs.cd"}},
		{Name: "math-other", Description: "not used in measured sessions, math: add (1 tool)", Tools: []string{"math.add"}},
	}
	b, err := exchange.EncodeAsServed(profiles.EnableToolsTool(groups))
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "enable_tools.json"), append(b, '\n'))
	if !strings.Contains(profiles.EnableToolsTool(groups).Description, "\n- math-other: not used") {
		t.Error("description does not list the groups one per line")
	}
}

func TestChooseGivenCosts(t *testing.T) {
	catalog := mixedCatalog()
	costs := map[string]exchange.ToolCost{}
	for i, tl := range catalog {
		costs[tl.Name] = exchange.ToolCost{Name: tl.Name, Bytes: 40 + i, Tokens: map[string]int{price.O200kBase: 1000 + i}, Model: map[price.Family]int{price.DefaultFamily: 10 + i}}
	}
	res, err := Choose(mixedSessions(100, 4), Config{Catalog: catalog, Counter: newCounter(t), Costs: costs, Holdout: 0.2})
	if err != nil {
		t.Fatal(err)
	}
	want := 0
	for i := range catalog {
		want += 10 + i
	}
	if res.Holdout.FullTokens != want {
		t.Errorf("full catalog %d tokens, want %d from the given costs", res.Holdout.FullTokens, want)
	}
}
