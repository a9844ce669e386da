package groups

import (
	"slices"
	"testing"
)

func TestNames(t *testing.T) {
	names := []string{
		"fs.cd", "fs.ls", "fs.mkdir", // 0-2
		"math.add", "math.mean", // 3-4
		"update_reservation_flights", "update_reservation_baggages", // 5-6 (no upstream)
		"think", "calculate", // 7-8
		"book", "book-group", // 9-10: "book" collides with a tool, and so does "book-group"
	}
	upstream := make([]string, len(names))
	for i, n := range names {
		upstream[i] = Upstream(n)
	}
	uses := []int{5, 9, 1, 3, 3, 4, 2, 8, 1, 2, 0}
	nm := newNamer(names, upstream, uses, 2)
	for _, tc := range []struct {
		name   string
		drafts []groupDraft
		want   []string
	}{
		{"whole upstream is named after it", []groupDraft{{tools: []int{0, 1, 2}}}, []string{"fs"}},
		{"split upstream: most used tool", []groupDraft{{tools: []int{0, 2}}, {tools: []int{1}}}, []string{"fs-cd", "fs-ls"}},
		{"catch-all", []groupDraft{{tools: []int{0, 1}}, {tools: []int{2}, catchAll: true}}, []string{"fs-ls", "fs-other"}},
		{"common word prefix", []groupDraft{{tools: []int{5, 6}}}, []string{"update_reservation"}},
		{"no upstream, no prefix: most used tool, which is a tool name", []groupDraft{{tools: []int{7, 8}}}, []string{"think-group"}},
		{"single tool", []groupDraft{{tools: []int{8}}}, []string{"calculate-group"}},
		{"same key twice", []groupDraft{{tools: []int{0}}, {tools: []int{0, 2}}}, []string{"fs-cd", "fs-cd-2"}},
		{"collision, then repeat", []groupDraft{{tools: []int{9}}, {tools: []int{9, 10}}}, []string{"book-group-2", "book-group-3"}},
		{"other upstream catch-all", []groupDraft{{tools: []int{3, 4}, catchAll: true}}, []string{"math-other"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := nm.name(tc.drafts); !slices.Equal(got, tc.want) {
				t.Errorf("names %q, want %q", got, tc.want)
			}
		})
	}
	for _, tc := range []struct {
		draft groupDraft
		want  string
	}{
		{groupDraft{tools: []int{0, 1, 2}}, "fs: ls, cd, … (3 tools)"},
		{groupDraft{tools: []int{3, 4}}, "math: add, mean (2 tools)"},
		{groupDraft{tools: []int{7}}, "tools: think (1 tool)"},
		{groupDraft{tools: []int{2, 1, 0}, catchAll: true}, "not used in measured sessions, fs: cd, ls, … (3 tools)"},
	} {
		if got := nm.description(tc.draft); got != tc.want {
			t.Errorf("description(%v) = %q, want %q", tc.draft, got, tc.want)
		}
	}
}

func TestSanitise(t *testing.T) {
	for in, want := range map[string]string{"a b": "a_b", "_x": "x", "": "group", "ok.-_9": "ok.-_9", "é": "group"} {
		if got := sanitise(in); got != want {
			t.Errorf("sanitise(%q) = %q, want %q", in, got, want)
		}
	}
}
