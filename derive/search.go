package derive

import (
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// SearchPriors are find_tools' ranking priors (package toolsearch) learned
// from the derive part of the sessions alone, so that the held-out part
// tests search as it tests the profiles: each tool's share of sessions and
// each tool's toolsearch.DefaultPairsPerTool most co-used tools. The same
// sessions give the same priors.
func (r *Result) SearchPriors() *profiles.SearchPriors {
	sets := make([][]string, len(r.learned))
	for i, d := range r.learned {
		names := make([]string, len(d.Tools))
		for j, t := range d.Tools {
			names[j] = r.Names[t]
		}
		sets[i] = names
	}
	return profiles.SearchPriorsOf(toolsearch.Learn(sets, 0))
}
