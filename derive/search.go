package derive

import (
	"time"

	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/toolsearch"
)

// SearchPriors are find_tools' ranking priors (package toolsearch) learned
// from the derive part of the sessions alone, so that the held-out part
// tests search as it tests the profiles: each tool's share of sessions and
// each tool's toolsearch.DefaultPairsPerTool most co-used tools, and each
// profile's measured demand from the sessions served it that precede the
// held-out part (profileDemand). The same sessions give the same priors.
func (r *Result) SearchPriors() *profiles.SearchPriors {
	sets := make([][]string, len(r.learned))
	for i, tools := range r.learned {
		names := make([]string, len(tools))
		for j, t := range tools {
			names[j] = r.Names[t]
		}
		sets[i] = names
	}
	l := toolsearch.Learn(sets, 0)
	l.Profiles = toolsearch.LearnDemand(r.demand)
	return profiles.SearchPriorsOf(l)
}

// profileDemand returns, by profile, the catalog tools (index) used by
// each session served that profile (not full, not exploration, not
// read-only: what the profile's own users asked for, search included)
// that comes before the held-out session firstHeld in time order; every
// such session when firstHeld is "" (nothing held out). A session placed
// at or after firstHeld is never learned from, so the held-out part tests
// these priors as it tests the profiles.
func profileDemand(sessions []telemetry.Usage, index map[string]int, firstHeld string) map[string][][]string {
	order := timeOrder(len(sessions), func(i int) time.Time { return sessions[i].Session.Start })
	out := map[string][][]string{}
	for i := range sessions {
		if order != nil {
			i = order[i]
		}
		s := &sessions[i].Session
		if firstHeld != "" && s.ID == firstHeld {
			break
		}
		if s.Profile == "" || s.Profile == profiles.FullProfile || s.Exploration || s.ReadOnly {
			continue
		}
		var tools []string
		for _, t := range sessions[i].Tools {
			if _, ok := index[t]; ok {
				tools = append(tools, t)
			}
		}
		out[s.Profile] = append(out[s.Profile], tools)
	}
	return out
}
