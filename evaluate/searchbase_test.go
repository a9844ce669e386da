package evaluate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// sessionsOf is n sessions of turns words each, calling tool at the
// last turn.
func sessionsOf(id string, n int, tool string, turns ...string) []evaluate.Session {
	var out []evaluate.Session
	for i := range n {
		out = append(out, evaluate.Session{ID: fmt.Sprintf("%s%d", id, i), Turns: turns, Calls: []evaluate.Call{{Tool: tool, Turn: len(turns) - 1}}})
	}
	return out
}

// TestDeriveSearchBase derives bases where listing a tool pays (a use no
// search with the session's words finds: a refusal saved) and where it
// does not (a use the words find late in a long session), from the
// smallest profile, whose tools no session calls.
func TestDeriveSearchBase(t *testing.T) {
	unnamed := sessionsOf("unnamed", 4, "fs.mv", "zzz qqq", "yyy")
	named := sessionsOf("named", 4, "mail.send", "hello", "hi there", "ok then", "thanks", "send a mail message to bob")
	for _, tc := range []struct {
		name     string
		sessions []evaluate.Session
		want     []string
	}{
		{"a use search misses is listed", unnamed, []string{"fs.mv"}},
		{"a use search finds is not", named, []string{}},
		{"both", append(slices.Clone(named), unnamed...), []string{"fs.mv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := armsFixture(t)
			cfg.Limit, cfg.Sessions = 1, tc.sessions
			b, err := evaluate.DeriveSearchBase(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if b.Start != "core" || !slices.Equal(b.Tools, tc.want) {
				t.Fatalf("base from %q: %v (moves %v), want %v from core", b.Start, b.Tools, b.Moves, tc.want)
			}
			if !(b.Cost < b.StartCost) {
				t.Errorf("cost %.2f, from %.2f over core: want lower", b.Cost, b.StartCost)
			}
			checkAsReported(t, cfg, b)
		})
	}
}

// checkAsReported checks b against Run, the report's own replay: Run's
// search arm over b costs b.Cost on the sessions b was derived from, and
// no single tool listed or no longer listed costs less.
func checkAsReported(t *testing.T, cfg evaluate.Config, b *evaluate.SearchBase) {
	t.Helper()
	cost := func(tools []string) float64 {
		f := *cfg.Profiles.File
		f.Profiles = append(slices.Clone(f.Profiles), profiles.Profile{Name: "derived", Tools: tools, Search: true})
		run := cfg
		run.Profiles, run.SearchBase = &profiles.Set{File: &f}, "derived"
		rep, err := evaluate.Run(context.Background(), run)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Arm(evaluate.ArmSearch).CostPerSession.Mean
	}
	if got := cost(b.Tools); math.Abs(got-b.Cost) > 0.005 {
		t.Errorf("Run prices search over %v at %.2f per session; the derivation at %.4f", b.Tools, got, b.Cost)
	}
	for _, tool := range cfg.Catalog.Tools {
		tools := slices.Clone(b.Tools)
		if i := slices.Index(tools, tool.Name); i >= 0 {
			tools = slices.Delete(tools, i, i+1)
		} else {
			tools = append(tools, tool.Name)
			slices.Sort(tools)
		}
		if got := cost(tools); got < b.Cost-0.005 {
			t.Errorf("search over %v costs %.2f, less than the derived %v at %.2f", tools, got, b.Tools, b.Cost)
		}
	}
}

// TestDeriveSearchBaseDeterministic: the same sessions give the same base
// and moves, whatever the order of the catalog's tools.
func TestDeriveSearchBaseDeterministic(t *testing.T) {
	sessions := append(sessionsOf("a", 3, "fs.mv", "zzz"), sessionsOf("b", 3, "trade.buy", "qqq")...)
	var first *evaluate.SearchBase
	for i := range 3 {
		cfg := armsFixture(t)
		if i == 2 {
			slices.Reverse(cfg.Catalog.Tools)
		}
		cfg.Limit, cfg.Sessions = 1, sessions
		b, err := evaluate.DeriveSearchBase(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if first == nil {
			first = b
			if len(b.Tools) == 0 {
				t.Fatalf("derived an empty base: %+v", b)
			}
			continue
		}
		if !slices.Equal(b.Tools, first.Tools) || !slices.Equal(b.Moves, first.Moves) || b.Cost != first.Cost {
			t.Errorf("run %d derived %+v, run 0 %+v", i, b, first)
		}
	}
}

// TestDeriveSearchBaseRefuses: no learning sessions, or a profile of the
// derived base's name, is an error.
func TestDeriveSearchBaseRefuses(t *testing.T) {
	cfg := armsFixture(t)
	if _, err := evaluate.DeriveSearchBase(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "no learning sessions") {
		t.Errorf("no sessions: %v", err)
	}
	cfg.Sessions = sessionsOf("a", 1, "fs.mv", "zzz")
	f := *cfg.Profiles.File
	f.Profiles = append(slices.Clone(f.Profiles), profiles.Profile{Name: evaluate.DerivedSearchProfile, Tools: []string{"fs.ls"}})
	cfg.Profiles = &profiles.Set{File: &f}
	if _, err := evaluate.DeriveSearchBase(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "rename the profile") {
		t.Errorf("a profile named %q: %v", evaluate.DerivedSearchProfile, err)
	}
}

// TestChooseDefaultDerivesFromLearnOnly: the derived base is learned from
// ChooseConfig.Learn alone; the held-out sessions, which call another
// unnamed tool, change its figures but never its tools.
func TestChooseDefaultDerivesFromLearnOnly(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Limit, cfg.ClientResults = 1, 1
	learn := sessionsOf("learn", 4, "fs.mv", "zzz")
	var bases [][]string
	for _, held := range [][]evaluate.Session{sessionsOf("held", 4, "fs.mv", "zzz"), sessionsOf("held", 8, "trade.buy", "qqq")} {
		cfg.Sessions = held
		c, err := evaluate.ChooseDefault(context.Background(), evaluate.ChooseConfig{Config: cfg, Target: 0.5, Learn: learn})
		if err != nil {
			t.Fatal(err)
		}
		if c.SearchBase == nil {
			t.Fatal("no search base derived")
		}
		bases = append(bases, c.SearchBase.Tools)
		all := append(append([]evaluate.ArmReport{c.Chosen}, c.Beaten...), c.Missed...)
		if !slices.ContainsFunc(all, func(a evaluate.ArmReport) bool {
			return a.Name == evaluate.ArmSearch && a.Profile == evaluate.DerivedSearchProfile
		}) {
			t.Errorf("search over the derived base is not a candidate: %+v", all)
		}
	}
	if !slices.Equal(bases[0], []string{"fs.mv"}) || !slices.Equal(bases[0], bases[1]) {
		t.Errorf("derived %v with held-out sessions calling fs.mv, %v with trade.buy; want [fs.mv] both", bases[0], bases[1])
	}
}

// TestChoiceApplyDerivedBase: a chosen search arm over the derived base
// is served as profile DerivedSearchProfile, its base's tools with search,
// ranked with its start's demand, and the summary says so.
func TestChoiceApplyDerivedBase(t *testing.T) {
	f := &profiles.File{Version: profiles.Version, Default: "core", Profiles: []profiles.Profile{
		{Name: "core", Tools: []string{"a", "b"}}, {Name: "full", Tools: []string{"a", "b", "c"}}, {Name: "lean", Tools: []string{"a"}}},
		Search: &profiles.SearchPriors{Sessions: 2, Profiles: []profiles.SearchProfile{{Name: "lean", Sessions: 2, Tools: []profiles.SearchTool{{Name: "c", Weight: 0.5}}}}}}
	c := &evaluate.Choice{Target: 0.95, Needed: 10, Chosen: arm(evaluate.ArmSearch, evaluate.DerivedSearchProfile, 0.97, 0.18),
		Beaten:     []evaluate.ArmReport{arm(evaluate.ArmSearch, "lean", 0.96, 0.26)},
		SearchBase: &evaluate.SearchBase{Start: "lean", Tools: []string{"a", "c"}, StartCost: 50, Cost: 40}}
	if got := c.Profile(); got != evaluate.DerivedSearchProfile {
		t.Fatalf("Profile() = %q, want %q", got, evaluate.DerivedSearchProfile)
	}
	if err := c.Apply(f); err != nil {
		t.Fatal(err)
	}
	got := f.Profiles[len(f.Profiles)-1]
	if f.Default != evaluate.DerivedSearchProfile || len(f.Profiles) != 4 || got.Name != evaluate.DerivedSearchProfile || !got.Search || !slices.Equal(got.Tools, []string{"a", "c"}) {
		t.Errorf("default %q, added %+v; want %q listing [a c] with search", f.Default, got, evaluate.DerivedSearchProfile)
	}
	if d := f.Search.Profiles; len(d) != 2 || d[1].Name != evaluate.DerivedSearchProfile || !slices.Equal(d[1].Tools, d[0].Tools) {
		t.Errorf("demand %+v, want lean's copied as %q", d, evaluate.DerivedSearchProfile)
	}
	md := c.Markdown()
	for _, want := range []string{"search over the derived base (served as `search`, its tools below)", "- met it at a higher cost: search over `lean`", "- search base `search` derived from the learning sessions, from `lean`'s tools: 2 listed beside find_tools and call_tool (a, c); search over it costs 40 per learning session, 50 over `lean`"} {
		if !strings.Contains(md, want) {
			t.Errorf("summary lacks %q:\n%s", want, md)
		}
	}
	if err := c.Apply(f); err == nil {
		t.Error("a second profile named search was added")
	}
	// A search arm over a profile named like the derived base, with no
	// derived base, is served as any search arm is.
	plain := &evaluate.Choice{Target: 0.95, Chosen: arm(evaluate.ArmSearch, evaluate.DerivedSearchProfile, 1, 1)}
	if got := plain.Profile(); got != evaluate.DerivedSearchProfile+evaluate.SearchProfileSuffix {
		t.Errorf("without a derived base Profile() = %q", got)
	}
}

// TestDeriveChooseDefaultSearchBaseLearnsOnly: derive --choose-default
// derives the search base from the sessions it did not hold out. The
// newest sessions, held out, call a tool their words never name; the
// older ones never call it, so the base never lists it.
func TestDeriveChooseDefaultSearchBaseLearnsOnly(t *testing.T) {
	dir := t.TempDir()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var trace strings.Builder
	for i := range 20 {
		line := map[string]any{"session": fmt.Sprintf("s%02d", i), "started": base.Add(time.Duration(i) * time.Hour).Format(time.RFC3339),
			"turns": []string{"list the files"}, "calls": []map[string]any{{"tool": "fs.ls", "turn": 0}}}
		if i >= 16 {
			line["turns"], line["calls"] = []string{"zzz qqq"}, []map[string]any{{"tool": "mail.inbox", "turn": 0}}
		}
		raw, _ := json.Marshal(line)
		trace.Write(append(raw, '\n'))
	}
	tracePath, catalogPath := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(catalogPath, []byte(armsCatalog), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tracePath, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := generate.Run(context.Background(), generate.Config{Traces: []string{tracePath}, Catalog: catalogPath, Out: filepath.Join(dir, "profiles.generated.toml"),
		Specs: derive.DefaultSpecs(), Holdout: 0.2, DefaultTarget: derive.DefaultTarget, Search: true, Force: true, Cache: price.DefaultCache(),
		Choose: &generate.Choose{ServedTarget: 0.5, SearchLimit: 1}})
	if err != nil {
		t.Fatal(err)
	}
	if out.Choice == nil || out.Choice.SearchBase == nil {
		t.Fatalf("no search base derived: %+v", out.Choice)
	}
	if sb := out.Choice.SearchBase; slices.Contains(sb.Tools, "mail.inbox") {
		t.Errorf("the search base %v lists mail.inbox, which only held-out sessions call", sb.Tools)
	}
}

// TestDeriveSearchBaseTiesByName: two tools alike but for their names,
// each needed by as many sessions that search misses, lower the cost
// alike; the one first by name is listed first, whichever order the
// catalog gives them in.
func TestDeriveSearchBaseTiesByName(t *testing.T) {
	for _, order := range [][]string{{"kv.a", "kv.b"}, {"kv.b", "kv.a"}} {
		var tools []string
		for _, n := range append(order, "kv.z") {
			tools = append(tools, fmt.Sprintf(`{"name": %q, "description": "Store a value.", "inputSchema": {"type": "object"}}`, n))
		}
		// Ranked first on a query matching no words (ties by name) and
		// long, so that a session refused goes on an expensive catalog.
		for i := range 8 {
			tools = append(tools, fmt.Sprintf(`{"name": "kv.%d", "description": %q, "inputSchema": {"type": "object"}}`, i, strings.Repeat("Keep the records of the ledger in order. ", 20)))
		}
		cat, err := catalog.Decode(strings.NewReader(`{"tools": [` + strings.Join(tools, ",") + `]}`))
		if err != nil {
			t.Fatal(err)
		}
		f := &profiles.File{Version: profiles.Version, Default: "core", Profiles: []profiles.Profile{{Name: "core", Tools: []string{"kv.z"}}}}
		sessions := append(sessionsOf("a", 3, "kv.a", "zzz"), sessionsOf("b", 3, "kv.b", "zzz")...)
		cfg := evaluate.Config{Catalog: cat, Profiles: &profiles.Set{File: f}, Cache: price.DefaultCache(), Limit: 1, Sessions: sessions}
		b, err := evaluate.DeriveSearchBase(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if want := []string{"+kv.a", "+kv.b", "-kv.z"}; !slices.Equal(b.Moves, want) {
			t.Errorf("catalog order %v: moves %v, want %v", order, b.Moves, want)
		}
	}
}
