package derive

import (
	"fmt"
	"math"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"pgregory.net/rapid"
)

func TestWilson(t *testing.T) {
	// Reference values: Wilson score interval, z = 1.96 (e.g. statsmodels
	// proportion_confint(method="wilson")).
	tests := []struct {
		k, n   int
		lo, hi float64
	}{
		{8, 10, 0.4902, 0.9433},
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{50, 100, 0.4038, 0.5962},
		{81, 263, 0.2553, 0.3662}, // Newcombe (1998), Stat Med 17:857, example (a)
		{15, 148, 0.0624, 0.1605}, // example (b)
	}
	for _, tt := range tests {
		lo, hi := Wilson(tt.k, tt.n)
		if math.Abs(lo-tt.lo) > 1e-4 || math.Abs(hi-tt.hi) > 1e-4 {
			t.Errorf("Wilson(%d,%d) = [%.4f, %.4f], want [%.4f, %.4f]", tt.k, tt.n, lo, hi, tt.lo, tt.hi)
		}
	}
}

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// fixture: tools a..f (tokens 10 each, e destructive), sessions in time
// order with a known mix.
func fixtureTools() []Tool {
	var ts []Tool
	for _, n := range []string{"a", "b", "c", "d", "e", "f"} {
		ts = append(ts, Tool{Name: n, Bytes: 40, Tokens: 10, Destructive: n == "e"})
	}
	return ts
}

func sessionsOf(sets ...[]string) []telemetry.Usage {
	out := make([]telemetry.Usage, len(sets))
	for i, s := range sets {
		out[i] = telemetry.Usage{Tools: s, Calls: len(s), Session: telemetry.Session{Start: t0.Add(time.Duration(i) * time.Minute)}}
	}
	return out
}

func repeat(n int, set []string) [][]string {
	out := make([][]string, n)
	for i := range out {
		out[i] = set
	}
	return out
}

func fixtureSessions() []telemetry.Usage {
	var sets [][]string
	sets = append(sets, repeat(40, []string{"a"})...)
	sets = append(sets, repeat(25, []string{"a", "b"})...)
	sets = append(sets, repeat(15, []string{"c"})...)
	sets = append(sets, repeat(10, []string{"d", "e"})...)
	sets = append(sets, repeat(5, []string{"f"})...)
	sets = append(sets, repeat(5, nil)...)
	// Interleave deterministically so both parts see every kind.
	mixed := make([][]string, 0, len(sets))
	for i := range 10 {
		for j := i; j < len(sets); j += 10 {
			mixed = append(mixed, sets[j])
		}
	}
	return sessionsOf(mixed...)
}

func TestDeriveNestedFamily(t *testing.T) {
	cfg := Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget}
	res, err := Derive(fixtureSessions(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	names := []string{}
	for _, p := range res.Profiles {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"core", "standard", "full"}) {
		t.Fatalf("profiles %v", names)
	}
	for k := 1; k < len(res.Profiles); k++ {
		for _, tool := range res.Profiles[k-1].Tools {
			if !slices.Contains(res.Profiles[k].Tools, tool) {
				t.Errorf("%s holds %s but %s does not: not nested", res.Profiles[k-1].Name, tool, res.Profiles[k].Name)
			}
		}
	}
	core, std, full := res.Profiles[0], res.Profiles[1], res.Profiles[2]
	if !slices.Equal(core.Tools, []string{"a", "b", "c"}) {
		t.Errorf("core = %v, want [a b c] (covers 85 of 100)", core.Tools)
	}
	// e is destructive: standard may not hold it, so d+e sessions are
	// uncoverable and the 0.95 target cannot be met.
	if slices.Contains(std.Tools, "e") || !slices.Contains(full.Tools, "e") {
		t.Errorf("destructive e: standard %v, full %v", std.Tools, full.Tools)
	}
	removedE := `the destructive rule removed e (set allow_destructive = true under [[profile]] name = "%s" in profiles.toml to serve them)`
	want := []string{
		`profile "core" cannot hold 1 tool(s) sessions called: ` + fmt.Sprintf(removedE, "core"),
		`profile "standard": target 0.95 unreachable`,
		`profile "standard" cannot hold 1 tool(s) sessions called: ` + fmt.Sprintf(removedE, "standard"),
		"only 20 held-out sessions",
	}
	if len(res.Warnings) != len(want) {
		t.Errorf("warnings %q, want %d", res.Warnings, len(want))
	}
	for i := range min(len(want), len(res.Warnings)) {
		if !strings.Contains(res.Warnings[i], want[i]) {
			t.Errorf("warning %d %q, want one containing %q", i, res.Warnings[i], want[i])
		}
	}
	for _, p := range []ProfileResult{core, std} {
		if want := []profiles.Removal{{Tool: "e", Rule: profiles.RuleDestructive}}; !slices.Equal(p.Removed, want) {
			t.Errorf("profile %s removed %v, want %v", p.Name, p.Removed, want)
		}
	}
	if full.Removed != nil {
		t.Errorf("full removed %v, want none", full.Removed)
	}
	if len(full.Tools) != 6 || full.Destructive != 1 {
		t.Errorf("full = %v", full.Tools)
	}
	if res.Counts.ZeroCalls != 5 || res.Counts.Derive != 80 || res.Counts.Holdout != 20 {
		t.Errorf("counts %+v", res.Counts)
	}
	if res.Default != "core" {
		t.Errorf("default %q, want core (holdout coverage %+v)", res.Default, core.Holdout)
	}
	if core.Baseline == nil || core.Baseline.Tokens < core.Tokens {
		t.Errorf("baseline %+v cheaper than the solver's %d", core.Baseline, core.Tokens)
	}
}

func TestDerivePolicy(t *testing.T) {
	tests := []struct {
		name    string
		policy  profiles.Policy
		check   func(t *testing.T, res *Result)
		wantErr string
	}{
		{
			name:   "pin forced in",
			policy: profiles.Policy{Profiles: []profiles.PolicyProfile{{Name: "core", Pin: []string{"f"}}}},
			check: func(t *testing.T, res *Result) {
				for _, p := range res.Profiles {
					if !slices.Contains(p.Tools, "f") {
						t.Errorf("%s lacks pinned f (nested)", p.Name)
					}
				}
			},
		},
		{
			name:   "deny in larger profile reaches smaller",
			policy: profiles.Policy{Profiles: []profiles.PolicyProfile{{Name: "standard", Deny: []string{"a"}}}},
			check: func(t *testing.T, res *Result) {
				if slices.Contains(res.Profiles[0].Tools, "a") || slices.Contains(res.Profiles[1].Tools, "a") {
					t.Errorf("a denied in standard but held: core %v standard %v", res.Profiles[0].Tools, res.Profiles[1].Tools)
				}
				if !slices.Contains(res.Profiles[2].Tools, "a") {
					t.Error("full lost a")
				}
			},
		},
		{
			name: "allow_destructive everywhere lets standard hold e",
			policy: profiles.Policy{Profiles: []profiles.PolicyProfile{
				{Name: "core", AllowDestructive: true}, {Name: "standard", AllowDestructive: true}}},
			check: func(t *testing.T, res *Result) {
				if !slices.Contains(res.Profiles[1].Tools, "e") {
					t.Errorf("standard %v lacks e", res.Profiles[1].Tools)
				}
			},
		},
		{
			name:    "allow_destructive in core alone is not enough",
			policy:  profiles.Policy{Profiles: []profiles.PolicyProfile{{Name: "core", AllowDestructive: true, Pin: []string{"e"}}}},
			wantErr: `tool "e" is pinned`,
		},
		{
			name:    "pattern in pin refused",
			policy:  profiles.Policy{Profiles: []profiles.PolicyProfile{{Name: "core", Pin: []string{"a*"}}}},
			wantErr: "patterns are not accepted",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pol := tt.policy
			cfg := Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Policy: &pol, Holdout: 0.2, DefaultTarget: DefaultTarget}
			res, err := Derive(fixtureSessions(), cfg)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			tt.check(t, res)
		})
	}
}

func TestDeriveSessionSelection(t *testing.T) {
	ss := []telemetry.Usage{
		{Tools: []string{"a"}, Calls: 1, Session: telemetry.Session{Start: t0.Add(3 * time.Hour)}},
		{Tools: []string{"b"}, Calls: 1, Session: telemetry.Session{Profile: "core"}}, // restricted: skipped
		{Tools: []string{"c"}, Calls: 2, Session: telemetry.Session{Profile: "full", Exploration: true}},
		{Tools: []string{"zz", "a"}, Calls: 2, Session: telemetry.Session{Profile: "full"}}, // unknown tool counted
		{Calls: 0, Session: telemetry.Session{Start: t0}},                                   // zero calls
	}
	res, err := Derive(ss, Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.5, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	c := res.Counts
	if c.Input != 5 || c.Full != 3 || c.Exploration != 1 || c.Restricted != 1 || c.ZeroCalls != 1 || c.UnknownToolSessions != 1 || !slices.Equal(c.UnknownTools, []string{"zz"}) {
		t.Errorf("counts %+v", c)
	}
	// Time order: zero-call (t0) first, then a (3h) with the undated c and
	// zz+a after it; holdout 0.5 of 4 -> 2 newest: {c}, {zz,a} (uncoverable).
	if c.Derive != 2 || c.Holdout != 2 {
		t.Fatalf("split %d/%d", c.Derive, c.Holdout)
	}
	if !res.DataFrom.Equal(t0) || !res.DataUntil.Equal(t0.Add(3*time.Hour)) {
		t.Errorf("window %v..%v", res.DataFrom, res.DataUntil)
	}
	full := res.Profiles[len(res.Profiles)-1]
	if full.Holdout != (Score{Covered: 1, Sessions: 2}) {
		t.Errorf("full holdout %+v: want 1 of 2, a session calling a tool the catalog lacks is covered by no profile", full.Holdout)
	}
}

func TestClassifySession(t *testing.T) {
	tests := []struct {
		name string
		s    telemetry.Usage
		want sessionClass
	}{
		{"no profile recorded", telemetry.Usage{}, classFull},
		{"served full", telemetry.Usage{Session: telemetry.Session{Profile: "full"}}, classFull},
		{"served a smaller profile", telemetry.Usage{Session: telemetry.Session{Profile: "core"}}, classRestricted},
		{"exploration served full", telemetry.Usage{Session: telemetry.Session{Profile: "full", Exploration: true}}, classExploration},
		{"exploration served the ceiling", telemetry.Usage{Session: telemetry.Session{Profile: "standard", Exploration: true}}, classRestricted},
		{"exploration with no profile recorded", telemetry.Usage{Session: telemetry.Session{Exploration: true}}, classRestricted},
		{"exploration served full read-only", telemetry.Usage{Session: telemetry.Session{Profile: "full", Exploration: true, ReadOnly: true}}, classRestricted},
		{"served full read-only", telemetry.Usage{Session: telemetry.Session{Profile: "full", ReadOnly: true}}, classRestricted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := classify(tt.s); got != tt.want {
				t.Errorf("classify(%+v) = %d, want %d", tt.s, got, tt.want)
			}
		})
	}
	// The counts follow the classification.
	ss := []telemetry.Usage{
		{Tools: []string{"a"}, Calls: 1, Session: telemetry.Session{Profile: "full", Exploration: true}},
		{Tools: []string{"b"}, Calls: 1, Session: telemetry.Session{Profile: "standard", Exploration: true}},
		{Tools: []string{"c"}, Calls: 1, Session: telemetry.Session{Profile: "full", Exploration: true, ReadOnly: true}},
		{Tools: []string{"a"}, Calls: 1},
	}
	_, c, _ := selectSessions(ss, indexOf(fixtureTools()), nil)
	if c.Exploration != 1 || c.Full != 1 || c.Restricted != 2 {
		t.Errorf("counts %+v, want 1 exploration, 1 full, 2 restricted", c)
	}
}

func TestNotEvaluable(t *testing.T) {
	tests := []struct {
		name     string
		sessions []telemetry.Usage
		holdout  float64
		want     []string
	}{
		{"no holdout", fixtureSessions(), 0, []string{"holdout_ci", "holdout_coverage"}},
		{"no sessions", nil, 0.2, []string{"coverage", "holdout_ci", "holdout_coverage"}},
		{"all restricted", []telemetry.Usage{{Tools: []string{"a"}, Calls: 1, Session: telemetry.Session{Profile: "core"}}}, 0.2, []string{"coverage", "holdout_ci", "holdout_coverage"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Derive(tt.sessions, Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: tt.holdout, DefaultTarget: DefaultTarget})
			if err != nil {
				t.Fatal(err)
			}
			f := res.File()
			for _, p := range f.Profiles {
				m := p.Measured
				if !slices.Equal(m.NotEvaluable, tt.want) {
					t.Errorf("%s not_evaluable %v, want %v", p.Name, m.NotEvaluable, tt.want)
				}
				if slices.Contains(tt.want, "holdout_coverage") && (m.HoldoutCoverage != nil || m.HoldoutCI != nil) {
					t.Errorf("%s: holdout figure written without sessions", p.Name)
				}
				if slices.Contains(tt.want, "coverage") && m.Coverage != nil {
					t.Errorf("%s: coverage written without sessions", p.Name)
				}
			}
			if f.Default != profiles.FullProfile {
				t.Errorf("default %q without held-out evidence, want full", f.Default)
			}
		})
	}
}

func TestDeriveBudgetSpec(t *testing.T) {
	res, err := Derive(fixtureSessions(), Config{Tools: fixtureTools(), Specs: []Spec{{Name: "tiny", Budget: 20}}, Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	if got := res.Profiles[0]; got.Tokens > 20 || !slices.Equal(got.Tools, []string{"a", "b"}) {
		t.Errorf("tiny = %v (%d tokens), want [a b]", got.Tools, got.Tokens)
	}
}

func TestDeriveRejectsBadSpecs(t *testing.T) {
	tests := []struct {
		specs []Spec
		want  string
	}{
		{[]Spec{{Name: "full", Target: 0.5}}, "reserved"},
		{[]Spec{{Name: "a", Target: 0.5}, {Name: "a", Target: 0.6}}, "twice"},
		{[]Spec{{Name: "a", Target: 0.9}, {Name: "b", Target: 0.6}}, "smallest first"},
		{[]Spec{{Name: "a", Target: 1.5}}, "target 1.5"},
	}
	for _, tt := range tests {
		_, err := Derive(nil, Config{Tools: fixtureTools(), Specs: tt.specs, Holdout: 0.2})
		if err == nil || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("specs %v: err %v, want %q", tt.specs, err, tt.want)
		}
	}
	if _, err := Derive(nil, Config{Tools: fixtureTools(), Holdout: 1}); err == nil {
		t.Error("holdout 1 accepted")
	}
}

func TestDeriveDeterministic(t *testing.T) {
	cfg := Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget}
	var outs []string
	for range 2 {
		res, err := Derive(fixtureSessions(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		var b strings.Builder
		if err := profiles.Encode(&b, res.File()); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b.String()+fmt.Sprint(res.Parameters(cfg)))
	}
	if outs[0] != outs[1] {
		t.Errorf("two runs differ:\n%s\n---\n%s", outs[0], outs[1])
	}
}

// TestDefaultIsSmallestReachingTarget: the file's default is the smallest
// profile whose held-out coverage reaches the default target; every arm:
// the smallest reaches, only a larger one does, only full does, and a
// share equal to the target reaches it. (No held-out sessions: see
// TestNotEvaluable.) Held-out coverage on the fixture: core [a b c] 18/20,
// standard 18/20, full 20/20; a core at 0.5 holds less.
func TestDefaultIsSmallestReachingTarget(t *testing.T) {
	loose := []Spec{{Name: "core", Target: 0.5}, {Name: "standard", Target: 0.95}}
	tests := []struct {
		name          string
		specs         []Spec
		defaultTarget float64
		want          string
	}{
		{"smallest reaches", DefaultSpecs(), 0.8, "core"},
		{"equal to the target reaches", DefaultSpecs(), 0.9, "core"},
		{"only the larger reaches", loose, 0.85, "standard"},
		{"only full reaches", DefaultSpecs(), 0.95, profiles.FullProfile},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Derive(fixtureSessions(), Config{Tools: fixtureTools(), Specs: tt.specs, Holdout: 0.2, DefaultTarget: tt.defaultTarget})
			if err != nil {
				t.Fatal(err)
			}
			if res.Default != tt.want {
				t.Fatalf("default %q, want %q", res.Default, tt.want)
			}
			for _, p := range res.Profiles {
				share, _ := p.Holdout.Share()
				if p.Name == tt.want {
					if share < tt.defaultTarget {
						t.Errorf("default %s holds out %v, below %v", p.Name, share, tt.defaultTarget)
					}
					break
				}
				if share >= tt.defaultTarget {
					t.Errorf("%s (held-out %v) is smaller than %s and reaches %v", p.Name, share, tt.want, tt.defaultTarget)
				}
			}
			if f := res.File(); f.Default != tt.want {
				t.Errorf("file default %q, want %q", f.Default, tt.want)
			}
		})
	}
}

// TestSmallSampleWarning: Derive warns when the unrestricted sessions
// (full, unrecorded profile, exploration; restricted ones do not count)
// are fewer than MinSessions, and only then.
func TestSmallSampleWarning(t *testing.T) {
	restricted := append(fixtureSessions(), sessionsOf(repeat(50, []string{"a"})...)...)
	for i := 100; i < len(restricted); i++ {
		restricted[i].Session.Profile = "core"
	}
	for _, tt := range []struct {
		name     string
		sessions []telemetry.Usage
		min      int
		warn     bool
	}{
		{"below", fixtureSessions(), 101, true},
		{"restricted sessions do not count", restricted, 101, true},
		{"at", fixtureSessions(), 100, false},
		{"off", fixtureSessions(), 0, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			res, err := Derive(tt.sessions, Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget, MinSessions: tt.min})
			if err != nil {
				t.Fatal(err)
			}
			want := fmt.Sprintf("only 100 unrestricted sessions (served full or exploration), below %d", tt.min)
			if got := slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, want) }); got != tt.warn {
				t.Errorf("warnings %q: small-sample warning %v, want %v", res.Warnings, got, tt.warn)
			}
		})
	}
}

// TestDeriveReadOnlyPolicy: the server strips every tool that changes state
// from a profile profiles.toml makes read_only, so a derived profile holding
// one measured a coverage it never serves. Such tools are kept out of that
// profile and, profiles being nested, of every smaller one.
func TestDeriveReadOnlyPolicy(t *testing.T) {
	tools := fixtureTools()
	for i := range tools {
		tools[i].Mutates = tools[i].Name == "b" || tools[i].Destructive
	}
	yes := true
	pol := profiles.Policy{Profiles: []profiles.PolicyProfile{{Name: "standard", ReadOnly: &yes}}}
	res, err := Derive(fixtureSessions(), Config{Tools: tools, Specs: DefaultSpecs(), Policy: &pol, Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range res.Profiles[:2] {
		if slices.Contains(p.Tools, "b") {
			t.Errorf("%s holds b, which changes state, under a read_only standard: %v", p.Name, p.Tools)
		}
	}
	if !slices.Contains(res.Profiles[2].Tools, "b") {
		t.Error("full lost b")
	}
	// Without read_only b is worth holding: the case is not vacuous.
	res, err = Derive(fixtureSessions(), Config{Tools: tools, Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(res.Profiles[1].Tools, "b") {
		t.Errorf("without read_only standard %v lacks b", res.Profiles[1].Tools)
	}
}

// A catalog that does not match the sessions (another server version: every
// tool renamed) must not yield an empty profile reported as covering every
// session.
func TestDeriveCatalogMismatch(t *testing.T) {
	var ss []telemetry.Usage
	for i := range 40 {
		ss = append(ss, telemetry.Usage{Tools: []string{"old_" + string(rune('a'+i%3))}, Calls: 2, Session: telemetry.Session{Start: t0.Add(time.Duration(i) * time.Minute)}})
	}
	toolCalls := map[string]int{"old_a": 28, "old_b": 26, "old_c": 26, "get_operating_context": 5}
	res, err := Derive(ss, Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.25, DefaultTarget: DefaultTarget, ToolCalls: toolCalls})
	if err != nil {
		t.Fatal(err)
	}
	if res.Default != "full" {
		t.Errorf("default %q: want full (no profile reaches the target)", res.Default)
	}
	for _, p := range res.Profiles {
		if p.Derive.Covered != 0 || p.Holdout.Covered != 0 || p.Holdout.Sessions != 10 {
			t.Errorf("profile %s: derive %+v holdout %+v: want 0 of 30 and 0 of 10 covered", p.Name, p.Derive, p.Holdout)
		}
	}
	c := res.Counts
	want := []ToolShare{{"old_a", 28}, {"old_b", 26}, {"old_c", 26}}
	if c.Calls != 80 || !slices.Equal(c.UnknownCalls, want) || c.UnknownCallShare() != 1 {
		t.Errorf("calls %d unknown %v share %v: want 80, %v, 1 (gateway tools are not counted)", c.Calls, c.UnknownCalls, c.UnknownCallShare(), want)
	}
	f := res.File()
	for _, p := range f.Profiles {
		if m := p.Measured; m.Coverage == nil || *m.Coverage != 0 {
			t.Errorf("profile %s: coverage %v: want 0", p.Name, *m.Coverage)
		}
	}
	if ps := res.Parameters(Config{Specs: DefaultSpecs()}); !slices.Contains(ps, "calls.unknown_tool_share=1") {
		t.Errorf("parameters %v: want calls.unknown_tool_share=1", ps)
	}
}

func TestDeriveEmptyDefault(t *testing.T) {
	tests := []struct {
		name string
		sets [][]string
		want string
	}{
		// 9 in 10 sessions call nothing: an empty core covers 90%, but it
		// would serve the tenth nothing.
		{"mostly idle", append(slices.Repeat([][]string{nil}, 36), slices.Repeat([][]string{{"a"}}, 4)...), "standard"},
		{"all idle", slices.Repeat([][]string{nil}, 40), "core"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ss := sessionsOf(tt.sets...)
			// Interleave so that both parts hold a caller.
			for i := range ss {
				ss[i].Session.Start = t0.Add(time.Duration((i*7)%len(ss)) * time.Minute)
			}
			res, err := Derive(ss, Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.25, DefaultTarget: DefaultTarget})
			if err != nil {
				t.Fatal(err)
			}
			if res.Default != tt.want {
				for _, p := range res.Profiles {
					t.Logf("%s %v %+v", p.Name, p.Tools, p.Holdout)
				}
				t.Errorf("default %q: want %q", res.Default, tt.want)
			}
		})
	}
}

// The selection, which keeps each session as indices into the distinct
// tool sets, gives every part the Demands one Demand per session gives:
// the same sessions in the same time order, the same tools and paths,
// and the same signatures.
func TestSelectionMatchesDemands(t *testing.T) {
	names := []string{"a", "b", "c", "gone", profiles.EnableToolsName}
	index := map[string]int{"a": 0, "b": 1, "c": 2}
	rapid.Check(t, func(t *rapid.T) {
		sessions, paths := drawUsage(t, names, 30)
		// One Demand per session, as Derive once built them.
		var want []Demand
		for _, s := range sessions {
			if classify(s) == classRestricted {
				continue
			}
			idx, miss := CatalogDemand(nil, s.Tools, index, map[string]bool{})
			slices.Sort(idx)
			idx = slices.Compact(idx)
			path, ok := paths[s.Session.ID]
			want = append(want, Demand{ID: s.Session.ID, Tools: idx, Start: s.Session.Start, Unknown: miss, Path: pathOf(path, ok, idx, index)})
		}
		want = TimeOrder(want)
		sel, _, _ := selectSessions(sessions, index, paths)
		if len(sel.kept) != len(want) {
			t.Fatalf("kept %d sessions, want %d", len(sel.kept), len(want))
		}
		for i, k := range sel.kept {
			u, w := sel.usage(k), want[i]
			if u.Session.ID != w.ID || !u.Session.Start.Equal(w.Start) || !slices.Equal(sel.sets[k.set], w.Tools) || k.unknown != w.Unknown || !reflect.DeepEqual(sel.path(k), w.Path) {
				t.Fatalf("session %d: %s %v %v unknown %v %+v, want %s %v %v unknown %v %+v", i,
					u.Session.ID, u.Session.Start, sel.sets[k.set], k.unknown, sel.path(k), w.ID, w.Start, w.Tools, w.Unknown, w.Path)
			}
		}
		// Signatures: each distinct tool set with its sessions, sorted.
		cut := rapid.IntRange(0, len(want)).Draw(t, "cut")
		for _, part := range []struct {
			got  []selected
			want []Demand
		}{{sel.kept[:cut], want[:cut]}, {sel.kept[cut:], want[cut:]}} {
			ref := &sample{total: len(part.want)}
			bySet := map[string]int{}
			for _, d := range part.want {
				switch key := fmt.Sprint(d.Tools); {
				case d.Unknown:
					ref.uncoverable++
				case len(d.Tools) == 0:
					ref.free++
				case bySet[key] > 0:
					ref.sigs[bySet[key]-1].Weight++
				default:
					ref.sigs = append(ref.sigs, Signature{Tools: d.Tools, Weight: 1})
					bySet[key] = len(ref.sigs)
				}
			}
			slices.SortFunc(ref.sigs, func(a, b Signature) int { return slices.Compare(a.Tools, b.Tools) })
			if got := sel.reduce(part.got); !reflect.DeepEqual(got, ref) {
				t.Fatalf("signatures %+v, one Demand per session gives %+v", got, ref)
			}
		}
	})
}

// Selecting sessions in parts, each on its own goroutine, gives the
// selection one pass gives: the same kept sessions in the same order,
// the same sets numbered in order of first use, the same paths, counts
// and unknown tools.
func TestSelectionInPartsMatchesOnePass(t *testing.T) {
	names := []string{"a", "b", "c", "d", "gone", "lost", profiles.EnableToolsName}
	index := map[string]int{"a": 0, "b": 1, "c": 2, "d": 3}
	rapid.Check(t, func(t *rapid.T) {
		sessions, paths := drawUsage(t, names, 40)
		want, wantCounts, wantUnknown := selectSessionsIn(sessions, index, paths, 1)
		parts := rapid.IntRange(2, 8).Draw(t, "parts")
		got, counts, unknown := selectSessionsIn(sessions, index, paths, parts)
		for _, sel := range []*selection{want, got} {
			for i, set := range sel.sets {
				if len(set) == 0 {
					sel.sets[i] = nil // an empty set is nil or not as the scratch space was
				}
			}
		}
		if !reflect.DeepEqual(got.kept, want.kept) || !reflect.DeepEqual(got.sets, want.sets) ||
			!reflect.DeepEqual(got.setPaths, want.setPaths) || !reflect.DeepEqual(got.traced, want.traced) {
			t.Fatalf("%d parts: kept %v sets %v traced %v\nwant kept %v sets %v traced %v", parts, got.kept, got.sets, got.traced, want.kept, want.sets, want.traced)
		}
		if !reflect.DeepEqual(counts, wantCounts) || !slices.Equal(unknown, wantUnknown) {
			t.Fatalf("%d parts: counts %+v unknown %v, want %+v %v", parts, counts, unknown, wantCounts, wantUnknown)
		}
	})
}

// drawUsage draws up to most sessions calling tools of names, some with
// starts, profiles, exploration and traced paths.
func drawUsage(t *rapid.T, names []string, most int) ([]telemetry.Usage, map[string]price.Session) {
	n := rapid.IntRange(0, most).Draw(t, "sessions")
	sessions := make([]telemetry.Usage, n)
	paths := map[string]price.Session{}
	for i := range sessions {
		u := &sessions[i]
		u.Session.ID = fmt.Sprint("s", i)
		if h := rapid.IntRange(-1, 5).Draw(t, fmt.Sprint("start", i)); h >= 0 {
			u.Session.Start = t0.Add(time.Duration(h) * time.Hour)
		}
		u.Session.Profile = rapid.SampledFrom([]string{"", profiles.FullProfile, "core"}).Draw(t, fmt.Sprint("profile", i))
		u.Session.Exploration = rapid.Bool().Draw(t, fmt.Sprint("explore", i))
		u.Tools = rapid.SliceOfDistinct(rapid.SampledFrom(names), rapid.ID[string]).Draw(t, fmt.Sprint("tools", i))
		u.Calls = len(u.Tools)
		if len(u.Tools) > 0 && rapid.Bool().Draw(t, fmt.Sprint("traced", i)) {
			s, err := price.NewSession(slices.Concat(u.Tools, u.Tools[:1]), nil, 0)
			if err != nil {
				t.Fatal(err)
			}
			paths[u.Session.ID] = s
		}
	}
	return sessions, paths
}
