package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// With a Playwright-like catalog, where 18 of 25 tools are annotated
// destructive, derive, bench and check each name the tools that the
// destructive rule removed from a profile, and how to allow them, once.
func TestRemovedToolsNamedOnce(t *testing.T) {
	dir := filepath.Join("testdata", "playwright")
	profilesPath, catalogPath := filepath.Join(dir, "profiles.generated.toml"), filepath.Join(dir, "catalog.json")
	var trace strings.Builder
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 40 {
		calls := `{"tool":"browser_snapshot"}`
		if i%2 == 0 {
			calls = `{"tool":"browser_navigate"},{"tool":"browser_snapshot"},{"tool":"browser_click"}`
		}
		fmt.Fprintf(&trace, `{"session":"s%d","started":%q,"calls":[%s]}`+"\n", i, start.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), calls)
	}
	tracePath := writeTemp(t, "trace.jsonl", trace.String())
	policy := filepath.Join(dir, "profiles.toml")
	allow := `(set allow_destructive = true under [[profile]] name = %q in ` + policy + ` to serve them)`
	browse := `profile "browse" serves 1 of the 5 offered tools it names: the destructive rule removed browser_click, browser_navigate, browser_press_key, browser_type ` + fmt.Sprintf(allow, "browse")
	core := `profile "core" serves 1 of the 3 offered tools it names: the destructive rule removed browser_click, browser_navigate ` + fmt.Sprintf(allow, "core")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"check", []string{"check", "--profiles", profilesPath, "--catalog", catalogPath, "--trace", tracePath}, []string{core, browse}},
		{"bench", []string{"bench", "--profiles", profilesPath, "--catalog", catalogPath}, []string{core, browse}},
		{"derive", []string{"derive", "--trace", tracePath, "--catalog", catalogPath, "--policy", policy, "--out", filepath.Join(t.TempDir(), "p.toml")},
			[]string{
				`profile "core" cannot hold 2 tool(s) sessions called: the destructive rule removed browser_click, browser_navigate ` + fmt.Sprintf(allow, "core"),
				`profile "standard" cannot hold 2 tool(s) sessions called: the destructive rule removed browser_click, browser_navigate ` + fmt.Sprintf(allow, "standard"),
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, stderr, code := runProfiler(t, tt.args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			for _, w := range tt.want {
				if n := strings.Count(stderr, w); n != 1 {
					t.Errorf("stderr says %d times, want once: %s\nstderr:\n%s", n, w, stderr)
				}
			}
			if n := strings.Count(stderr, "browser_type"); tt.name != "derive" && n != 1 {
				t.Errorf("browser_type named %d times, want once:\n%s", n, stderr)
			}
		})
	}
}
