package evaluate_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/profiles"
)

// TestDeriveSearchBaseUnderStartRules: the derived base never lists a
// tool its start's rules keep out, from the generated file or
// profiles.toml: every session calls fs.mv, which search cannot find
// (TestDeriveSearchBase lists it when nothing keeps it out).
func TestDeriveSearchBaseUnderStartRules(t *testing.T) {
	yes := true
	for _, tc := range []struct {
		name   string
		edit   func(*profiles.Profile) // core in the generated file
		policy []profiles.PolicyProfile
		want   []string
	}{
		{"no rules", nil, nil, []string{"fs.mv"}},
		{"denied on core", nil, []profiles.PolicyProfile{{Name: "core", Deny: []string{"fs.mv"}}}, []string{}},
		{"core read-only in profiles.toml", nil, []profiles.PolicyProfile{{Name: "core", ReadOnly: &yes}}, []string{}},
		{"core read-only in the generated file", func(p *profiles.Profile) { p.ReadOnly = true }, nil, []string{}},
		{"core searchable narrowed", func(p *profiles.Profile) { p.Searchable = []string{"fs.l*"} }, nil, []string{}},
		{"denied on another profile", nil, []profiles.PolicyProfile{{Name: "grouped", Deny: []string{"fs.mv"}}}, []string{"fs.mv"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := armsFixture(t)
			cfg.Limit, cfg.Sessions = 1, sessionsOf("s", 4, "fs.mv", "zzz qqq", "yyy")
			f := *cfg.Profiles.File
			f.Profiles = slices.Clone(f.Profiles)
			if tc.edit != nil {
				tc.edit(&f.Profiles[slices.IndexFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == "core" })])
			}
			cfg.Profiles = &profiles.Set{File: &f}
			if tc.policy != nil {
				cfg.Profiles.Policy = &profiles.Policy{Version: 1, Profiles: tc.policy}
			}
			b, err := evaluate.DeriveSearchBase(context.Background(), cfg)
			if err != nil {
				t.Fatal(err)
			}
			if b.Start != "core" || !slices.Equal(b.Tools, tc.want) {
				t.Fatalf("base from %q: %v (moves %v), want %v from core", b.Start, b.Tools, b.Moves, tc.want)
			}
			// As written: the derived profile carries core's own restrictions.
			c := &evaluate.Choice{Chosen: arm(evaluate.ArmSearch, evaluate.DerivedSearchProfile, 1, 1), SearchBase: b}
			if err := c.Apply(&f); err != nil {
				t.Fatal(err)
			}
			core, got := f.Profiles[slices.IndexFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == "core" })], f.Profiles[len(f.Profiles)-1]
			if got.Name != evaluate.DerivedSearchProfile || got.ReadOnly != core.ReadOnly || !slices.Equal(got.Searchable, core.Searchable) {
				t.Errorf("written %+v, want core's read_only %v and searchable %v", got, core.ReadOnly, core.Searchable)
			}
		})
	}
}

// TestCheckServedDerived: search over the derived base is served as
// profile search, which the start's profiles.toml entry does not reach;
// it is refused unless a search entry with the start's keys makes it
// served as it was derived and measured.
func TestCheckServedDerived(t *testing.T) {
	const core = "[[profile]]\nname = \"core\"\nread_only = true\ndeny = [\"fs.mv\"]\n"
	for _, tc := range []struct {
		name, policy string // "": none
		want         string // "": accepted
	}{
		{"no policy", "", ""},
		{"an entry for the start only", core,
			`profiles.toml:4: profile[0].name: the chosen default, search over "core", would be served as profile "search", which this entry for "core" does not reach: add a [[profile]] name = "search" entry with the same keys as "core"'s`},
		{"the entry copied", core + "\n[[profile]]\nname = \"search\"\nread_only = true\ndeny = [\"fs.mv\"]\n", ""},
		{"the copy lacks deny", core + "\n[[profile]]\nname = \"search\"\nread_only = true\n",
			`profiles.toml:9: profile[1].name: the chosen default, search over "core", would be served as profile "search" under this entry, other than it was measured: make its keys those of "core"'s entry`},
		{"an entry for search only", "[[profile]]\nname = \"search\"\ndeny = [\"fs.ls\"]\n",
			`profiles.toml:4: profile[0].name: the chosen default, search over "core", would be served as profile "search" under this entry, other than it was measured: remove it`},
		{"an entry for another profile", "[[profile]]\nname = \"grouped\"\ndeny = [\"fs.mv\"]\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := &profiles.Set{File: &profiles.File{Version: profiles.Version, Default: "core", Profiles: []profiles.Profile{
				{Name: "core", Tools: []string{"fs.ls"}}, {Name: "grouped", Tools: []string{"fs.ls"}}}}}
			if tc.policy != "" {
				set.PolicyPath = filepath.Join(t.TempDir(), profiles.PolicyFile)
				if err := os.WriteFile(set.PolicyPath, []byte("version = 1\n\n"+tc.policy), 0o644); err != nil {
					t.Fatal(err)
				}
				pol, err := profiles.LoadPolicy(set.PolicyPath)
				if err != nil {
					t.Fatal(err)
				}
				set.Policy = pol
			}
			c := &evaluate.Choice{Target: 0.95, Chosen: arm(evaluate.ArmSearch, evaluate.DerivedSearchProfile, 1, 1),
				SearchBase: &evaluate.SearchBase{Start: "core", Tools: []string{"fs.cat"}}}
			err := c.CheckServed(set)
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), set.PolicyPath)) {
				t.Fatalf("CheckServed = %v, want an error naming %s and %q", err, set.PolicyPath, tc.want)
			}
			if tc.want == "" && err != nil {
				t.Fatalf("CheckServed = %v, want nil", err)
			}
		})
	}
}

// TestLearning: the learning part is the sessions that started before
// the first held-out one, in time order; one derive held out of neither
// part (a restricted session) that started in the held-out period is not
// learned from.
func TestLearning(t *testing.T) {
	at := func(id string, h int) evaluate.Session {
		return evaluate.Session{ID: id, Start: time.Date(2026, 3, 1, h, 0, 0, 0, time.UTC)}
	}
	ids := func(ss []evaluate.Session) []string {
		var out []string
		for _, s := range ss {
			out = append(out, s.ID)
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		sessions []evaluate.Session
		heldOut  []string
		want     []string
	}{
		{"in time order", []evaluate.Session{at("l0", 0), at("l1", 1), at("h0", 2), at("h1", 3)}, []string{"h0", "h1"}, []string{"l0", "l1"}},
		{"restricted in the held-out period", []evaluate.Session{at("l0", 0), at("l1", 1), at("h0", 2), at("r", 3), at("h1", 4)}, []string{"h0", "h1"}, []string{"l0", "l1"}},
		{"out of order in the trace", []evaluate.Session{at("r", 3), at("h0", 2), at("l1", 1), at("l0", 0)}, []string{"h0"}, []string{"l0", "l1"}},
		{"nothing held out", []evaluate.Session{at("l0", 0), at("l1", 1)}, nil, []string{"l0", "l1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ids(evaluate.Learning(tc.sessions, tc.heldOut)); !slices.Equal(got, tc.want) {
				t.Errorf("Learning = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestChooseDefaultSkipsDerivedBaseOnNameClash: a file that has a profile
// named search already has no base derived, says so in the summary, and
// its other arms still compete.
func TestChooseDefaultSkipsDerivedBaseOnNameClash(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Limit, cfg.ClientResults = 1, 1
	f := *cfg.Profiles.File
	f.Profiles = append(slices.Clone(f.Profiles), profiles.Profile{Name: evaluate.DerivedSearchProfile, Tools: []string{"fs.ls"}})
	cfg.Profiles = &profiles.Set{File: &f}
	cfg.Sessions = sessionsOf("held", 4, "fs.ls", "list the files")
	c, err := evaluate.ChooseDefault(context.Background(), evaluate.ChooseConfig{Config: cfg, Target: 0.5, Learn: sessionsOf("learn", 4, "fs.mv", "zzz")})
	if err != nil {
		t.Fatal(err)
	}
	if c.SearchBase != nil {
		t.Errorf("derived %+v beside a profile named %q", c.SearchBase, evaluate.DerivedSearchProfile)
	}
	if want := "- no search base derived from the learning sessions: the file has a profile named `search`"; !strings.Contains(c.Markdown(), want) {
		t.Errorf("summary lacks %q:\n%s", want, c.Markdown())
	}
}

// TestChooseNoNeededUses: held-out sessions with no needed use give no
// served share to compare, and the refusal says so rather than print a
// best share of 0.
func TestChooseNoNeededUses(t *testing.T) {
	_, err := evaluate.Choose([]evaluate.ArmReport{arm("full", "full", 0, 100), arm("default", "core", 0, 10)}, 0, 0.95)
	if err == nil || !strings.Contains(err.Error(), "no needed tool uses") || strings.Contains(err.Error(), "0.0000") {
		t.Errorf("Choose with no needed uses: %v; want it to say there are none", err)
	}
}
