package evaluate_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/profiles"
)

func arm(name, profile string, served, cost float64) evaluate.ArmReport {
	return evaluate.ArmReport{Name: name, Profile: profile, ServedShare: served,
		CostPerSession: evaluate.Cost{Mean: cost}, CostShareOfFull: cost / 100}
}

// TestChoose: each candidate arm is chosen when it is the cheapest that
// serves the target; always_load never is; none meeting it is an error.
func TestChoose(t *testing.T) {
	full := arm(evaluate.ArmFull, "full", 1, 100)
	for _, tc := range []struct {
		name               string
		arms               []evaluate.ArmReport
		target             float64
		want, wantProfile  string // "" : an error
		wantMissed, wantBt []string
	}{
		{"full when the rest miss", []evaluate.ArmReport{full, arm("default", "core", 0.9, 50), arm("groups", "lean", 0.94, 30), arm("search", "lean", 0.8, 20)},
			0.95, "full", "full", []string{"search", "groups", "default"}, nil},
		{"default", []evaluate.ArmReport{full, arm("default", "core", 0.96, 50), arm("groups", "lean", 0.99, 60), arm("search", "lean", 0.9, 20)},
			0.95, "default", "core", []string{"search"}, []string{"groups", "full"}},
		{"groups", []evaluate.ArmReport{full, arm("default", "core", 0.96, 50), arm("groups", "lean", 1, 30), arm("search", "lean", 0.96, 40)},
			0.95, "groups", "lean", nil, []string{"search", "default", "full"}},
		{"search, served under its own profile", []evaluate.ArmReport{full, arm("default", "core", 0.96, 50), arm("groups", "lean", 1, 30), arm("search", "lean", 0.955, 19), arm("search", "core", 0.999, 55)},
			0.95, "search", "lean-search", nil, []string{"groups", "default", "search", "full"}},
		{"a dearer arm that misses is not beaten", []evaluate.ArmReport{full, arm("default", "core", 0.96, 50), arm("groups", "lean", 1, 30), arm("search", "lean", 0.92, 45)},
			0.95, "groups", "lean", []string{"search"}, []string{"default", "full"}},
		{"the target is a floor, met exactly", []evaluate.ArmReport{full, arm("default", "core", 0.95, 50)},
			0.95, "default", "core", nil, []string{"full"}},
		{"always_load is never chosen", []evaluate.ArmReport{full, arm("always_load", "lean", 1, 10), arm("default", "core", 0.96, 50)},
			0.95, "default", "core", nil, []string{"full"}},
		{"equal cost: the earlier arm", []evaluate.ArmReport{full, arm("default", "core", 1, 100)},
			0.95, "full", "full", nil, []string{"default"}},
		{"none meets the target", []evaluate.ArmReport{arm("default", "core", 0.9, 50), arm("search", "lean", 0.8, 20)},
			0.95, "", "", nil, nil},
		{"no sessions: nothing served", []evaluate.ArmReport{arm("full", "full", 0, 0)},
			0.95, "", "", nil, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := evaluate.Choose(tc.arms, 10, tc.target)
			if tc.want == "" {
				if err == nil || !strings.Contains(err.Error(), "no arm serves 0.95") {
					t.Fatalf("Choose = %+v, %v; want an error naming the target", c, err)
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
			if c.Chosen.Name != tc.want || c.Profile() != tc.wantProfile || !slices.Equal(names(c.Missed), tc.wantMissed) || !slices.Equal(names(c.Beaten), tc.wantBt) {
				t.Fatalf("chose %s (%s), missed %v, beaten %v; want %s (%s), %v, %v",
					c.Chosen.Name, c.Profile(), names(c.Missed), names(c.Beaten), tc.want, tc.wantProfile, tc.wantMissed, tc.wantBt)
			}
			md := c.Markdown()
			if !strings.Contains(md, "Default arm: "+tc.want) || !strings.Contains(md, tc.wantProfile) || !strings.Contains(md, "target 95.0%") {
				t.Errorf("summary does not name the chosen profile and target:\n%s", md)
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

func TestChoiceApply(t *testing.T) {
	file := func() *profiles.File {
		return &profiles.File{Version: profiles.Version, Default: "core", Profiles: []profiles.Profile{
			{Name: "core", Tools: []string{"a", "b"}}, {Name: "full", Tools: []string{"a", "b", "c"}},
			{Name: "lean", Tools: []string{"a"}, Groups: []string{"g"}, Measured: &profiles.Measured{Tools: 1}}}}
	}
	for _, tc := range []struct {
		chosen      evaluate.ArmReport
		wantDefault string
		wantAdded   *profiles.Profile
	}{
		{arm("full", "full", 1, 1), "full", nil},
		{arm("default", "core", 1, 1), "core", nil},
		{arm("groups", "lean", 1, 1), "lean", nil},
		{arm("search", "lean", 1, 1), "lean-search", &profiles.Profile{Name: "lean-search", Tools: []string{"a"}, Search: true, Measured: &profiles.Measured{Tools: 1}}},
	} {
		t.Run(tc.chosen.Name, func(t *testing.T) {
			f := file()
			c := &evaluate.Choice{Target: 0.95, Chosen: tc.chosen}
			if err := c.Apply(f); err != nil {
				t.Fatal(err)
			}
			if f.Default != tc.wantDefault {
				t.Errorf("default %q, want %q", f.Default, tc.wantDefault)
			}
			if tc.wantAdded == nil {
				if len(f.Profiles) != 3 {
					t.Errorf("profiles %+v, want the three it had", f.Profiles)
				}
				return
			}
			got := f.Profiles[len(f.Profiles)-1]
			if len(f.Profiles) != 4 || got.Name != tc.wantAdded.Name || !slices.Equal(got.Tools, tc.wantAdded.Tools) || !got.Search || got.Groups != nil || got.Measured.Tools != tc.wantAdded.Measured.Tools || got.Measured == f.Profiles[2].Measured {
				t.Errorf("added %+v, want %+v", got, tc.wantAdded)
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
	bases := map[string]bool{}
	for _, a := range append(append([]evaluate.ArmReport{c.Chosen}, c.Beaten...), c.Missed...) {
		if a.Name == evaluate.ArmSearch {
			bases[a.Profile] = true
		}
		if c.Chosen.CostPerSession.Mean > a.CostPerSession.Mean && a.ServedShare >= 1 {
			t.Errorf("%s over %s serves the target for less than the chosen %+v", a.Name, a.Profile, c.Chosen)
		}
	}
	if !bases["core"] || !bases["grouped"] {
		t.Errorf("search evaluated over %v, want every profile but full", bases)
	}
	if _, err := evaluate.ChooseDefault(context.Background(), evaluate.ChooseConfig{Config: evaluate.Config{Catalog: cfg.Catalog, Profiles: cfg.Profiles, Cache: cfg.Cache}}); err == nil {
		t.Error("chose with no held-out sessions")
	}
}
