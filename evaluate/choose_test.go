package evaluate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/profiles"
)

// arm is an arm's figures as Run reports them: groups for clients of
// 2025-11-25 and earlier only, the rest for all.
func arm(name, profile string, served, cost float64) evaluate.ArmReport {
	protocols := evaluate.ProtocolsAll
	if name == evaluate.ArmGroups {
		protocols = evaluate.ProtocolsLegacy
	}
	return evaluate.ArmReport{Name: name, Profile: profile, Protocols: protocols, ServedShare: served,
		CostPerSession: evaluate.Cost{Mean: cost}, CostShareOfFull: cost / 100}
}

// TestChoose: each arm a 2026-07-28 client is served is chosen when it is
// the cheapest that serves the target; groups, served to earlier clients
// only, and always_load never are; none meeting it is an error.
func TestChoose(t *testing.T) {
	full := arm(evaluate.ArmFull, "full", 1, 100)
	groups := arm(evaluate.ArmGroups, "lean", 1, 30)
	leanModern := arm(evaluate.ArmDefault, "lean", 0.03, 99)
	leanModern.Protocols = evaluate.ProtocolsModern
	for _, tc := range []struct {
		name               string
		arms               []evaluate.ArmReport
		target             float64
		want, wantProfile  string // "" : an error
		wantMissed, wantBt []string
		wantLegacy         []string
		wantSummary        []string // lines the summary holds
	}{
		{"full when the rest miss", []evaluate.ArmReport{full, arm("default", "core", 0.9, 50), arm("groups", "lean", 0.94, 30), arm("search", "lean", 0.8, 20)},
			0.95, "full", "full", []string{"search", "default"}, nil, []string{"groups"},
			[]string{"Default arm for clients of protocol 2026-07-28, whose tool list never changes: full: 100.0%", "- missed the target: search over `lean` (cost 20.0%, served 80.0%); default `core` (cost 50.0%, served 90.0%)"}},
		{"default", []evaluate.ArmReport{full, arm("default", "core", 0.96, 50), arm("groups", "lean", 0.99, 60), arm("search", "lean", 0.9, 20)},
			0.95, "default", "core", []string{"search"}, []string{"full"}, []string{"groups"},
			[]string{"- met it at a higher cost: full (cost 100.0%, served 100.0%)"}},
		{"groups cheaper but served to earlier clients only: search", []evaluate.ArmReport{full, leanModern, arm("default", "core", 0.96, 50), groups, arm("search", "lean", 0.96, 40)},
			0.95, "search", "lean-search", []string{"default"}, []string{"default", "full"}, []string{"groups"},
			[]string{"search over `lean` (served as `lean-search`): 40.0%", "(target 95.0%). Clients of 2025-11-25 and earlier are served the same list.\n",
				"- not eligible: groups `lean` (cost 30.0%, served 100.0%) is served to clients of protocol 2025-11-25 and earlier only; a 2026-07-28 client served `lean` is offered no groups: default `lean` (cost 99.0%, served 3.0%)"}},
		{"groups the only cheap arm to meet it: full", []evaluate.ArmReport{full, arm("default", "core", 0.9, 50), groups, arm("search", "lean", 0.9, 40)},
			0.95, "full", "full", []string{"search", "default"}, nil, []string{"groups"}, []string{"- not eligible: groups `lean`"}},
		{"a default with groups: earlier clients are offered them", []evaluate.ArmReport{full, func() evaluate.ArmReport { a := leanModern; a.ServedShare = 0.97; return a }(), groups},
			0.95, "default", "lean", nil, []string{"full"}, []string{"groups"}, []string{"(target 95.0%).\n", "; earlier clients served the chosen default are offered these groups"}},
		{"search, served under its own profile", []evaluate.ArmReport{full, arm("default", "core", 0.96, 50), arm("groups", "lean", 1, 30), arm("search", "lean", 0.955, 19), arm("search", "core", 0.999, 55)},
			0.95, "search", "lean-search", nil, []string{"default", "search", "full"}, []string{"groups"}, nil},
		{"a dearer arm that misses is not beaten", []evaluate.ArmReport{full, arm("default", "core", 0.96, 50), arm("search", "lean", 0.92, 55)},
			0.95, "default", "core", []string{"search"}, []string{"full"}, nil, nil},
		{"the target is a floor, met exactly", []evaluate.ArmReport{full, arm("default", "core", 0.95, 50)},
			0.95, "default", "core", nil, []string{"full"}, nil, nil},
		{"always_load is never chosen", []evaluate.ArmReport{full, arm("always_load", "lean", 1, 10), arm("default", "core", 0.96, 50)},
			0.95, "default", "core", nil, []string{"full"}, nil, []string{"- not chosen: always_load over `lean` (cost 10.0%)"}},
		{"equal cost: the earlier arm", []evaluate.ArmReport{full, arm("default", "core", 1, 100)},
			0.95, "full", "full", nil, []string{"default"}, nil, nil},
		{"none meets the target", []evaluate.ArmReport{arm("default", "core", 0.9, 50), arm("search", "lean", 0.8, 20)},
			0.95, "", "", nil, nil, nil, nil},
		{"only groups meets the target", []evaluate.ArmReport{arm("default", "core", 0.9, 50), groups},
			0.95, "", "", nil, nil, nil, nil},
		{"no sessions: nothing served", []evaluate.ArmReport{arm("full", "full", 0, 0)},
			0.95, "", "", nil, nil, nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := evaluate.Choose(tc.arms, 10, tc.target)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "no arm served to clients of protocol 2026-07-28 serves 0.95") {
					t.Fatalf("Choose = %+v, %v; want an error naming the protocol and the target", c, err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			names := func(as []evaluate.ArmReport) []string {
				var out []string
				for _, a := range as {
					out = append(out, a.Name)
				}
				return out
			}
			if c.Chosen.Name != tc.want || c.Profile() != tc.wantProfile || !slices.Equal(names(c.Missed), tc.wantMissed) || !slices.Equal(names(c.Beaten), tc.wantBt) || !slices.Equal(names(c.LegacyOnly), tc.wantLegacy) {
				t.Fatalf("chose %s (%s), missed %v, beaten %v, legacy only %v; want %s (%s), %v, %v, %v",
					c.Chosen.Name, c.Profile(), names(c.Missed), names(c.Beaten), names(c.LegacyOnly), tc.want, tc.wantProfile, tc.wantMissed, tc.wantBt, tc.wantLegacy)
			}
			md := c.Markdown()
			if !strings.HasPrefix(md, "Default arm for clients of protocol 2026-07-28") || !strings.Contains(md, tc.wantProfile) || !strings.Contains(md, "target 95.0%") {
				t.Errorf("summary does not name the protocol, the chosen profile and target:\n%s", md)
			}
			for _, line := range tc.wantSummary {
				if !strings.Contains(md, line) {
					t.Errorf("summary lacks %q:\n%s", line, md)
				}
			}
		})
	}
}

func TestChooseTargetRange(t *testing.T) {
	for _, target := range []float64{-0.1, 0, 1.01} {
		if _, err := evaluate.Choose([]evaluate.ArmReport{arm("full", "full", 1, 1)}, 1, target); err == nil {
			t.Errorf("target %v accepted", target)
		}
	}
}

// TestChoiceApply: the chosen arm becomes the default; a search arm adds
// its profile with its base's demand; an arm served to clients of
// 2025-11-25 and earlier only is refused.
func TestChoiceApply(t *testing.T) {
	file := func() *profiles.File {
		return &profiles.File{Version: profiles.Version, Default: "core", Profiles: []profiles.Profile{
			{Name: "core", Tools: []string{"a", "b"}}, {Name: "full", Tools: []string{"a", "b", "c"}},
			{Name: "lean", Tools: []string{"a"}, Groups: []string{"g"}, Measured: &profiles.Measured{Tools: 1}}},
			Search: &profiles.SearchPriors{Sessions: 2, Profiles: []profiles.SearchProfile{{Name: "lean", Sessions: 2, Tools: []profiles.SearchTool{{Name: "c", Weight: 0.5}}}}}}
	}
	for _, tc := range []struct {
		chosen      evaluate.ArmReport
		wantDefault string // "": an error
		wantAdded   *profiles.Profile
	}{
		{arm("full", "full", 1, 1), "full", nil},
		{arm("default", "core", 1, 1), "core", nil},
		{arm("groups", "lean", 1, 1), "", nil},
		{arm("search", "lean", 1, 1), "lean-search", &profiles.Profile{Name: "lean-search", Tools: []string{"a"}, Search: true, Measured: &profiles.Measured{Tools: 1}}},
	} {
		t.Run(tc.chosen.Name, func(t *testing.T) {
			f := file()
			c := &evaluate.Choice{Target: 0.95, Chosen: tc.chosen}
			err := c.Apply(f)
			if tc.wantDefault == "" {
				if err == nil || f.Default != "core" || !strings.Contains(err.Error(), "2025-11-25 and earlier only") {
					t.Fatalf("Apply = %v, default %q; want an error and the default unchanged", err, f.Default)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f.Default != tc.wantDefault {
				t.Errorf("default %q, want %q", f.Default, tc.wantDefault)
			}
			if tc.wantAdded == nil {
				if len(f.Profiles) != 3 || len(f.Search.Profiles) != 1 {
					t.Errorf("profiles %+v, demand %+v, want those it had", f.Profiles, f.Search.Profiles)
				}
				return
			}
			got := f.Profiles[len(f.Profiles)-1]
			if len(f.Profiles) != 4 || got.Name != tc.wantAdded.Name || !slices.Equal(got.Tools, tc.wantAdded.Tools) || !got.Search || got.Groups != nil || got.Measured.Tools != tc.wantAdded.Measured.Tools || got.Measured == f.Profiles[2].Measured {
				t.Errorf("added %+v, want %+v", got, tc.wantAdded)
			}
			if d := f.Search.Profiles; len(d) != 2 || d[1].Name != tc.wantAdded.Name || !slices.Equal(d[1].Tools, d[0].Tools) || d[0].Name != "lean" {
				t.Errorf("demand %+v, want lean's copied as %s", d, tc.wantAdded.Name)
			}
			if lean := f.Profiles[2]; lean.Search || len(lean.Groups) != 1 {
				t.Errorf("the base changed: %+v", lean)
			}
			if err := c.Apply(f); err == nil {
				t.Error("a second search profile of the same name was added")
			}
		})
	}
}

// TestChooseDefault runs every arm, search over each profile of the file,
// on sessions a grouped profile serves best.
func TestChooseDefault(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Limit, cfg.ClientResults = 2, 2
	cfg.Sessions = []evaluate.Session{
		{ID: "a", Turns: []string{"list the files", "send a mail message to bob"}, Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}, {Tool: "mail.send", Turn: 1}}},
		{ID: "b", Turns: []string{"show the inbox"}, Calls: []evaluate.Call{{Tool: "fs.cat", Turn: 0}, {Tool: "mail.inbox", Turn: 0}}},
	}
	c, err := evaluate.ChooseDefault(context.Background(), evaluate.ChooseConfig{Config: cfg, Target: 1})
	if err != nil {
		t.Fatal(err)
	}
	if c.Chosen.ServedShare != 1 || c.Needed != 4 {
		t.Fatalf("chose %+v of %d needed", c.Chosen, c.Needed)
	}
	bases, defaults := map[string]bool{}, map[string]string{}
	for _, a := range append(append([]evaluate.ArmReport{c.Chosen}, c.Beaten...), c.Missed...) {
		switch a.Name {
		case evaluate.ArmSearch:
			bases[a.Profile] = true
		case evaluate.ArmDefault:
			defaults[a.Profile] = a.Protocols
		}
		if !a.Modern() {
			t.Errorf("%s over %s is a candidate, but served to clients of 2025-11-25 and earlier only", a.Name, a.Profile)
		}
		if c.Chosen.CostPerSession.Mean > a.CostPerSession.Mean && a.ServedShare >= 1 {
			t.Errorf("%s over %s serves the target for less than the chosen %+v", a.Name, a.Profile, c.Chosen)
		}
	}
	if !bases["core"] || !bases["grouped"] {
		t.Errorf("search evaluated over %v, want every profile but full", bases)
	}
	if defaults["core"] != evaluate.ProtocolsAll || defaults["grouped"] != evaluate.ProtocolsModern {
		t.Errorf("profiles served as the default %v, want core for all, grouped for 2026-07-28", defaults)
	}
	if len(c.LegacyOnly) != 1 || c.LegacyOnly[0].Name != evaluate.ArmGroups || c.LegacyOnly[0].ServedShare != 1 || c.Limit != 2 {
		t.Errorf("legacy only %+v, limit %d; want the groups arm, which serves every use, and limit 2", c.LegacyOnly, c.Limit)
	}
	// A profiles.toml default does not shadow the profile served as the
	// default while choosing.
	withPolicy := cfg
	withPolicy.Profiles = &profiles.Set{File: cfg.Profiles.File, Policy: &profiles.Policy{Version: 1, Default: "core"}}
	pc, err := evaluate.ChooseDefault(context.Background(), evaluate.ChooseConfig{Config: withPolicy, Target: 1})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(append(pc.Missed, pc.Beaten...), func(a evaluate.ArmReport) bool {
		return a.Name == evaluate.ArmDefault && a.Profile == "grouped" && a.Protocols == evaluate.ProtocolsModern
	}) {
		t.Errorf("under a policy default, grouped was not served as the default: missed %+v, beaten %+v", pc.Missed, pc.Beaten)
	}
	if _, err := evaluate.ChooseDefault(context.Background(), evaluate.ChooseConfig{Config: evaluate.Config{Catalog: cfg.Catalog, Profiles: cfg.Profiles, Cache: cfg.Cache}}); err == nil {
		t.Error("chose with no held-out sessions")
	}
}
