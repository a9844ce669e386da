package derive

import (
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/mdtext"
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

// TestMarkdownHostileNames: tool and profile names, which come from
// upstreams and files, and warnings quoting them, cannot close their code
// span or bring HTML, links or images into the pull request body.
func TestMarkdownHostileNames(t *testing.T) {
	res, err := Derive(fixtureSessions(), Config{Tools: fixtureTools(), Specs: DefaultSpecs(), Holdout: 0.2, DefaultTarget: DefaultTarget})
	if err != nil {
		t.Fatal(err)
	}
	next := res.File()
	hostile := "x` <img src=\"https://example.com/p.png\"> `y"
	cur := &profiles.File{Version: 1, Default: "standard", Profiles: []profiles.Profile{{Name: "core", Tools: []string{"a", "b", hostile}}}}
	res.Warnings = append(res.Warnings, "profile \"core\": tool "+hostile+" [approve](https://example.com)")
	got := Markdown("profiles.generated.toml", cur, next, res)
	removed := false
	for _, line := range strings.Split(got, "\n") {
		if rest, ok := strings.CutPrefix(line, "- `core`: "); ok {
			_, span, _ := strings.Cut(rest, "removed ")
			content, isSpan := mdtext.CodeContent(span)
			if !isSpan || content != hostile {
				t.Errorf("removed tool written as %q: shows %q (one code span %v), want %q", span, content, isSpan, hostile)
			}
			removed = true
		}
		if w, ok := strings.CutPrefix(line, "> warning: "); ok {
			for i := range len(w) {
				if strings.IndexByte("<>[]`", w[i]) >= 0 && (i == 0 || w[i-1] != '\\') {
					t.Errorf("warning %q leaves %q at %d unescaped", w, w[i], i)
				}
			}
		}
	}
	if !removed {
		t.Errorf("summary lacks the removal from core:\n%s", got)
	}
}
