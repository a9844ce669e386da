package derive

import (
	"fmt"
	"slices"
)

// CapTools trims sol to at most max tools, the constraint of derive
// --max-tools: it removes, one at a time, the tool not pinned whose loss
// uncovers the fewest sessions, the dearest first on a tie (then the
// highest index, so the result is deterministic). A solution within max is
// returned as it is. The trimmed solution is infeasible when it no longer
// covers sol.Need; its LowerBound no longer applies and is cleared. More
// pinned tools than max is an error.
func CapTools(p Problem, sol *Solution, max int) (*Solution, error) {
	if max <= 0 || len(sol.Tools) <= max {
		return sol, nil
	}
	pinned := make(map[int]bool, len(p.Pinned))
	for _, t := range p.Pinned {
		pinned[t] = true
	}
	if len(pinned) > max {
		return nil, fmt.Errorf("%d tools are pinned (or held by a smaller profile), over the cap of %d tools", len(pinned), max)
	}
	in := make(map[int]bool, len(sol.Tools))
	for _, t := range sol.Tools {
		in[t] = true
	}
	// loss[t] is the weight of the covered signatures holding t.
	loss := func() map[int]int {
		l := map[int]int{}
		for _, sg := range p.Sigs {
			covered := true
			for _, t := range sg.Tools {
				if !in[t] {
					covered = false
					break
				}
			}
			if covered {
				for _, t := range sg.Tools {
					l[t] += sg.Weight
				}
			}
		}
		return l
	}
	for len(in) > max {
		l := loss()
		best := -1
		for t := range in {
			if pinned[t] {
				continue
			}
			if best < 0 || l[t] < l[best] || l[t] == l[best] && (p.Costs[t] > p.Costs[best] || p.Costs[t] == p.Costs[best] && t > best) {
				best = t
			}
		}
		delete(in, best)
	}
	out := &Solution{Total: sol.Total, Need: sol.Need, Method: sol.Method + " + tool cap", Covered: p.Free}
	for t := range in {
		out.Tools = append(out.Tools, t)
		out.Cost += p.Costs[t]
	}
	slices.Sort(out.Tools)
	for _, sg := range p.Sigs {
		covered := true
		for _, t := range sg.Tools {
			covered = covered && in[t]
		}
		if covered {
			out.Covered += sg.Weight
		}
	}
	out.Feasible = sol.Feasible && out.Covered >= sol.Need
	return out, nil
}
