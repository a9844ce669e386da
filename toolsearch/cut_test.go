package toolsearch_test

import (
	"math"
	"slices"
	"testing"

	"github.com/toolprof/toolprof/toolsearch"
)

func TestCut(t *testing.T) {
	hits := func(scores ...float64) []toolsearch.Hit {
		var out []toolsearch.Hit
		for i, s := range scores {
			out = append(out, toolsearch.Hit{Name: string(rune('a' + i)), Score: s})
		}
		return out
	}
	for _, tc := range []struct {
		name     string
		hits     []toolsearch.Hit
		fraction float64
		want     int // hits kept
	}{
		{"clear: the rest far below the best", hits(4, 3.5, 1, 0.9, 0.5), 0.6, 2},
		{"flat: every hit near the best", hits(2, 1.9, 1.8, 1.7, 1.6), 0.6, 5},
		{"limit 1: the best alone", hits(3), 0.6, 1},
		{"at the floor exactly: kept", hits(5, 3, 2.5), 0.6, 2},
		{"ties at the boundary go together", hits(5, 3, 3, 3, 1), 0.6, 4},
		{"ties below the boundary go together", hits(5, 2, 2), 0.6, 1},
		{"no score at all: nothing to cut by", hits(0, 0, 0), 0.6, 3},
		{"fraction 0: none cut", hits(9, 1, 0.1, 0), 0, 4},
		{"fraction 1: the best and its ties", hits(2, 2, 1.99), 1, 2},
		{"fraction above 1: still the best", hits(2, 1), 1.5, 1},
		{"no hits", nil, 0.6, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := toolsearch.Cut(tc.hits, tc.fraction)
			if !slices.Equal(got, tc.hits[:tc.want]) {
				t.Fatalf("Cut(%v, %g) = %v, want the first %d", tc.hits, tc.fraction, got, tc.want)
			}
		})
	}
}

// TestCutSearch: over an index, a query naming one tool gets it alone
// where the limit would have added the unrelated rest, and one its words
// cannot tell apart keeps them all.
func TestCutSearch(t *testing.T) {
	ix := toolsearch.New(docs, nil, toolsearch.Weights{})
	for _, tc := range []struct {
		query string
		want  []string
	}{
		{"send a message to the receiver", []string{"mail.send_message"}},
		{"", []string{"fs.cat", "fs.ls", "fs.mv", "mail.listInbox", "mail.send_message"}},
	} {
		all := ix.Search(tc.query, nil, 5, nil)
		if got := names(toolsearch.Cut(all, toolsearch.DefaultCut)); !slices.Equal(got, tc.want) {
			t.Errorf("Cut(Search(%q), DefaultCut) = %v, want %v (uncut %v)", tc.query, got, tc.want, all)
		}
	}
}

func TestCheckCut(t *testing.T) {
	for _, tc := range []struct {
		fraction float64
		ok       bool
	}{{0, true}, {0.5, true}, {1, true}, {-0.1, false}, {1.01, false}, {math.NaN(), false}, {math.Inf(1), false}} {
		if err := toolsearch.CheckCut(tc.fraction); (err == nil) != tc.ok {
			t.Errorf("CheckCut(%g) = %v, want ok %v", tc.fraction, err, tc.ok)
		}
	}
}
