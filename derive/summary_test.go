package derive

import (
	"strings"
	"testing"

	"github.com/toolprof/toolprof/profiles"
)

func TestMarkdown(t *testing.T) {
	res, err := Derive(fixtureSessions(), Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	next := res.File()
	cov := 0.5
	cur := &profiles.File{Version: 1, Default: "standard", Profiles: []profiles.Profile{
		{Name: "core", Tools: []string{"a", "b", "z"}, Measured: &profiles.Measured{TokensO200k: 100, HoldoutCoverage: &cov}},
		{Name: "old", Tools: []string{"a"}},
	}}
	tests := []struct {
		name string
		cur  *profiles.File
		want []string
	}{
		{"against a file", cur, []string{
			"Default profile: `standard` → `core`.",
			"- `core`: added `c`; removed `z`",
			"| `core` | 3 | 30 | -70 | 90.0% [69.9, 97.2] | +40.0 pts | 3, 30, 90.0% |",
			"| `standard` | 4 | 40 | new |",
			"- `old`: profile removed",
			"Learned from 100 sessions (100 full or unrecorded profile, 0 exploration); 0 restricted sessions skipped; 5 with no tool call",
			`> warning: profile "standard": target 0.95 unreachable`,
			"Cost per held-out session with prompt caching (model measure, o200k_base tokens of the tool list entries; cache write 1.25x",
			"| `full` | 82 | 81 | 87 | 100.0% |",
		}},
		{"no current file", nil, []string{"No current file: everything below is new.", "| `full` | 6 | 60 | new | 100.0% [83.9, 100.0] | new | — |"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := Markdown("profiles.generated.toml", tt.cur, next, res)
			for _, w := range tt.want {
				if !strings.Contains(got, w) {
					t.Errorf("summary lacks %q:\n%s", w, got)
				}
			}
		})
	}
}
