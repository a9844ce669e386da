package groups

import (
	"slices"
	"testing"
)

func TestNames(t *testing.T) {
	tools := []struct{ name, description string }{
		{"fs.cd", "Change the working directory."}, // 0-2
		{"fs.ls", "List the files of a directory."},
		{"fs.mkdir", "Make a directory."},
		{"math.add", "Add two numbers."}, // 3-4
		{"math.mean", "Mean of a list of numbers."},
		{"list_issues", "List the issues of a repository."}, // 5-9: no upstream
		{"issue_read", "Read one issue of a repository."},
		{"add_issue_comment", "Add a comment to an issue."},
		{"list_issue_comments", "List the comments of an issue."},
		{"list_commits", "List the commits of a branch."},
		{"update_reservation_flights", ""}, // 10-11: no description
		{"update_reservation_baggages", ""},
		{"book", "Book it."}, // 12-13: "book" is a tool, and so is "book-group"
		{"book-group", "Book a group."},
	}
	var names, descriptions []string
	for _, tl := range tools {
		names, descriptions = append(names, tl.name), append(descriptions, tl.description)
	}
	upstream := make([]string, len(names))
	for i, n := range names {
		upstream[i] = Upstream(n)
	}
	uses := []int{5, 9, 1, 3, 3, 4, 2, 8, 1, 2, 0, 0, 1, 1}
	nm := newNamer(names, upstream, descriptions, uses, 2)
	for _, tc := range []struct {
		name   string
		drafts []groupDraft
		want   []string
	}{
		{"whole upstream is named after it", []groupDraft{{tools: []int{0, 1, 2}}}, []string{"fs"}},
		// cd's and ls's descriptions say "directory", as mkdir's does: it
		// tells them apart from nothing; "change" and "files" are words of
		// one description's prose.
		{"split upstream: rare words, a lone tool's name", []groupDraft{{tools: []int{0, 2}}, {tools: []int{1}}}, []string{"fs-mkdir", "fs-ls"}},
		{"catch-all, and no distinctive word: the most used tool", []groupDraft{{tools: []int{0, 1}}, {tools: []int{2}, catchAll: true}}, []string{"fs-ls", "fs-other"}},
		{"description words, never a generic verb", []groupDraft{{tools: []int{5, 6}}, {tools: []int{9}}}, []string{"issue", "commits"}},
		{"a shared best word: the next ones", []groupDraft{{tools: []int{5, 6}}, {tools: []int{7, 8}}}, []string{"issue", "comment"}},
		{"no description: the words of the names", []groupDraft{{tools: []int{10, 11}}}, []string{"reservation"}},
		{"every key a tool or taken: numbered", []groupDraft{{tools: []int{12}}, {tools: []int{12}}}, []string{"book-group-2", "book-group-3"}},
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
		{groupDraft{tools: []int{0, 1, 2}}, "fs (mkdir): ls, cd, … (3 tools)"},
		{groupDraft{tools: []int{5, 6, 7, 8}}, "tools (issue, comment, repository): add_issue_comment, list_issues, … (4 tools)"},
		{groupDraft{tools: []int{2, 1, 0}, catchAll: true}, "not used in measured sessions, fs (mkdir): cd, ls, … (3 tools)"},
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
