package evaluate_test

import (
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/profiles"
)

// TestCheckServed: a chosen search arm is served as NAME-search, which a
// profiles.toml entry for the base does not reach; the choice is refused
// unless an entry for NAME-search makes it served as it was measured.
func TestCheckServed(t *testing.T) {
	const core = "[[profile]]\nname = \"core\"\nread_only = true\ndeny = [\"write\"]\n"
	tools := []*mcp.Tool{{Name: "read", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, {Name: "look", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}}, {Name: "write"}}
	for _, tc := range []struct {
		name   string
		chosen evaluate.ArmReport
		policy string // "": none
		want   string // "": accepted
	}{
		{"no policy", arm("search", "core", 1, 1), "", ""},
		{"an entry for the base only", arm("search", "core", 1, 1), core,
			`profiles.toml:4: profile[0].name: the chosen default, search over "core", would be served as profile "core-search", which this entry for "core" does not reach: add a [[profile]] name = "core-search" entry`},
		{"the entry copied", arm("search", "core", 1, 1), core + "\n[[profile]]\nname = \"core-search\"\nread_only = true\ndeny = [\"write\"]\n", ""},
		{"the entry copied with search", arm("search", "core", 1, 1), core + "\n[[profile]]\nname = \"core-search\"\nsearch = true\nread_only = true\ndeny = [\"write\"]\n", ""},
		{"the copy lacks read_only", arm("search", "core", 1, 1), core + "\n[[profile]]\nname = \"core-search\"\ndeny = [\"write\"]\n",
			`profiles.toml:9: profile[1].name: the chosen default, search over "core", would be served as profile "core-search" under this entry, other than it was measured: make its keys those of "core"'s entry`},
		{"the copy turns search off", arm("search", "core", 1, 1), core + "\n[[profile]]\nname = \"core-search\"\nsearch = false\nread_only = true\ndeny = [\"write\"]\n",
			`profiles.toml:9: profile[1].name:`},
		{"an entry for the search profile only", arm("search", "core", 1, 1), "[[profile]]\nname = \"core-search\"\ndeny = [\"look\"]\n",
			`profiles.toml:4: profile[0].name: the chosen default, search over "core", would be served as profile "core-search" under this entry, other than it was measured: remove it`},
		{"an entry for another profile", arm("search", "core", 1, 1), "[[profile]]\nname = \"lean\"\ndeny = [\"write\"]\n", ""},
		{"a default arm is served under its own entry", arm("default", "core", 1, 1), core, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			set := &profiles.Set{File: &profiles.File{Version: profiles.Version, Default: "core", Profiles: []profiles.Profile{
				{Name: "core", Tools: []string{"read"}}, {Name: "lean", Tools: []string{"read"}}}}}
			if tc.policy != "" {
				dir := t.TempDir()
				set.PolicyPath = filepath.Join(dir, profiles.PolicyFile)
				if err := os.WriteFile(set.PolicyPath, []byte("version = 1\n\n"+tc.policy), 0o644); err != nil {
					t.Fatal(err)
				}
				pol, err := profiles.LoadPolicy(set.PolicyPath)
				if err != nil {
					t.Fatal(err)
				}
				set.Policy = pol
			}
			c := &evaluate.Choice{Target: 0.95, Chosen: tc.chosen}
			err := c.CheckServed(set)
			if tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.HasPrefix(err.Error(), set.PolicyPath)) {
				t.Fatalf("CheckServed = %v, want an error naming %s and %q", err, set.PolicyPath, tc.want)
			}
			if tc.want == "" && err != nil {
				t.Fatalf("CheckServed = %v, want nil", err)
			}
			// What it guards: applied, the profile served is the one
			// measured (the base with search on, profiles.toml's rules
			// for the base) exactly when the choice is accepted.
			if err := c.Apply(set.File); err != nil {
				t.Fatal(err)
			}
			r, err := set.Resolve(tools)
			if err != nil {
				t.Fatal(err)
			}
			if same := servedAsMeasured(r, c.Profile(), tc.chosen, tools); same != (tc.want == "") {
				t.Errorf("served as measured: %v; refused: %v", same, tc.want != "")
			}
		})
	}
}

// servedAsMeasured reports whether r serves name as Run measures the arm
// a: its profile, with search on for a search arm.
func servedAsMeasured(r *profiles.Resolved, name string, a evaluate.ArmReport, tools []*mcp.Tool) bool {
	m := *r.Profiles[a.Profile]
	if a.Name == evaluate.ArmSearch {
		m.Name, m.Search, m.Groups = "measured", true, nil
	}
	rm := *r
	rm.Profiles = maps.Clone(r.Profiles)
	rm.Profiles["measured"] = &m
	s := r.Profiles[name]
	if s == nil || s.ReadOnly != m.ReadOnly || s.Search != m.Search || !slices.Equal(s.Tools, m.Tools) {
		return false
	}
	for _, t := range tools {
		if r.Searchable(name, t.Name) != rm.Searchable("measured", t.Name) {
			return false
		}
	}
	return true
}
