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
// listed does not hold, it searches ix with that call's query
// (Session.query) and the tools the session called before, over the
// tools searchable allows (nil: every tool), and counts where the tool
// ranks. Tools ix does not index (the trace names a tool the catalog
// lacks) are left out.
func SearchRecall(ix *toolsearch.Index, sessions []Session, listed map[string]bool, searchable func(string) bool) Recall {
	r := Recall{At: map[int]int{}}
	kmax := slices.Max(RecallRanks())
	for _, s := range sessions {
		var history []string // distinct tools called so far, in first-call order
		for _, c := range s.Calls {
			if slices.Contains(history, c.Tool) {
				continue
			}
			needed := !listed[c.Tool] && ix.Has(c.Tool) && (searchable == nil || searchable(c.Tool))
			if needed {
				r.count(ix.Search(s.query(c.Turn), history, kmax, searchable), c.Tool)
			}
			history = append(history, c.Tool)
		}
	}
	return r
}

// find is one find_tools call as the search arm makes it for a session of
// profile: ranked as the gateway ranks, over the searchable tools not
// found before, and cut as the gateway cuts (toolsearch.Cut); a query
// that is one of their names returns that tool alone (toolsearch.Lookup). It returns
// the ranking down to the deepest recall rank (or limit, if deeper) and
// the hits returned, the first limit cut at fraction cut, which it marks
// found.
func find(ix *toolsearch.Index, profile, query string, history []string, limit int, cut float64, searchable func(string) bool, found map[string]bool) (ranked, returned []toolsearch.Hit) {
	fresh := func(t string) bool { return (searchable == nil || searchable(t)) && !found[t] }
	if h, ok := ix.Lookup(query, fresh); ok {
		found[h.Name] = true
		return []toolsearch.Hit{h}, []toolsearch.Hit{h}
	}
	ranked = ix.SearchAs(profile, query, history, max(limit, slices.Max(RecallRanks())), fresh)
	returned = toolsearch.Cut(ranked[:min(limit, len(ranked))], cut)
	for _, h := range returned {
		found[h.Name] = true
	}
	return ranked, returned
}

// SearchOptions are how ReplaySearch searches.
type SearchOptions struct {
	Listed     map[string]bool   // tools the base lists: served without a search
	Searchable func(string) bool // tools a search may return; nil: every tool
	Limit      int               // find_tools' limit; 0 is toolsearch.DefaultLimit
	// Cut is the share of the best hit's score a returned hit reaches
	// (toolsearch.Cut); 0 is toolsearch.DefaultCut, negative none.
	Cut float64
	// QueryTurns is how many turns with words a query is written from
	// (Session.query); 0 is QueryTurns.
	QueryTurns int
}

// Served is what ReplaySearch measured.
type Served struct {
	Recall     // of the searches made: Needed counts them
	Uses   int // needed uses
	Served int // needed uses listed or found
	// Missed is the sessions with a needed use not served: the ones the
	// search arm prices on the full catalog from that use's turn on.
	Missed int
}

// ReplaySearch replays sessions as the search arm serves them, without
// pricing: a needed use (a tool's first call, of a tool ix indexes) not
// listed nor found by an earlier search is searched for, and served when
// the tool is in the first Limit hits; every hit returned stays found.
func ReplaySearch(ix *toolsearch.Index, sessions []Session, o SearchOptions) Served {
	limit := o.Limit
	if limit == 0 {
		limit = toolsearch.DefaultLimit
	}
	turns := o.QueryTurns
	if turns == 0 {
		turns = QueryTurns
	}
	cut := cutOf(o.Cut)
	out := Served{Recall: Recall{At: map[int]int{}}}
	for _, s := range sessions {
		found := map[string]bool{}
		var history []string
		missed := false
		for _, c := range s.Calls {
			if !ix.Has(c.Tool) || slices.Contains(history, c.Tool) {
				continue
			}
			out.Uses++
			if !o.Listed[c.Tool] && !found[c.Tool] && (o.Searchable == nil || o.Searchable(c.Tool)) {
				hits, _ := find(ix, "", s.queryFrom(c.Turn, turns), history, limit, cut, o.Searchable, found)
				out.count(hits, c.Tool)
			}
			if o.Listed[c.Tool] || found[c.Tool] {
				out.Served++
			} else {
				missed = true
			}
			history = append(history, c.Tool)
		}
		if missed {
			out.Missed++
		}
	}
	return out
}

// count counts a search made for tool and where tool ranked in hits.
func (r *Recall) count(hits []toolsearch.Hit, tool string) {
	r.Needed++
	at := slices.IndexFunc(hits, func(h toolsearch.Hit) bool { return h.Name == tool })
	for _, k := range RecallRanks() {
		if at >= 0 && at < k {
			r.At[k]++
		}
	}
}

// cutOf is the fraction a Cut field of 0 (the default) or below (none)
// means.
func cutOf(c float64) float64 {
	switch {
	case c == 0:
		return toolsearch.DefaultCut
	case c < 0:
		return 0
	}
	return c
}
