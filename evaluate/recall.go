package evaluate

import (
	"slices"

	"github.com/toolprof/toolprof/toolsearch"
)

// RecallRanks are the ranks search recall is reported at.
func RecallRanks() []int { return []int{1, 5, 10} }

// Recall is how well search finds the tools sessions need.
type Recall struct {
	Needed int         // needed tool uses of tools not listed
	At     map[int]int // found within the top k, for k in 1, 5, 10
}

// Share returns the share found within the top k; 0 when nothing was
// needed.
func (r Recall) Share(k int) float64 {
	if r.Needed == 0 {
		return 0
	}
	return float64(r.At[k]) / float64(r.Needed)
}

// SearchRecall replays sessions: for each first call of a tool that
// listed does not hold, it searches ix with that call's turn's words and
// the tools the session called before, over the tools searchable allows
// (nil: every tool), and counts where the tool ranks. Tools ix does not
// index (the trace names a tool the catalog lacks) are left out.
func SearchRecall(ix *toolsearch.Index, sessions []Session, listed map[string]bool, searchable func(string) bool) Recall {
	r := Recall{At: map[int]int{}}
	ks := RecallRanks()
	kmax := slices.Max(ks)
	for _, s := range sessions {
		var history []string // distinct tools called so far, in first-call order
		for _, c := range s.Calls {
			if slices.Contains(history, c.Tool) {
				continue
			}
			needed := !listed[c.Tool] && ix.Has(c.Tool) && (searchable == nil || searchable(c.Tool))
			if needed {
				hits := ix.Search(s.query(c.Turn), history, kmax, searchable)
				r.Needed++
				rank := slices.IndexFunc(hits, func(h toolsearch.Hit) bool { return h.Name == c.Tool })
				for _, k := range ks {
					if rank >= 0 && rank < k {
						r.At[k]++
					}
				}
			}
			history = append(history, c.Tool)
		}
	}
	return r
}
