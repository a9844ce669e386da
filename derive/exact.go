package derive

import "math/bits"

// exact enumerates when the instance is small: every subset of the
// signatures not covered by the pinned tools (an optimal set is always the
// pinned tools plus a union of signatures), or every subset of the tools
// they need, whichever is smaller, in Gray-code order so that each step
// changes one element. It returns nil when the instance is too large.
func (s *solver) exact(g goal) *Solution {
	if s.opt.ExactWork < 0 {
		return nil
	}
	base := s.newState()
	var sigs []int
	seen := make([]bool, len(s.costs))
	var tools []int
	for i := range s.sigs {
		if base.missCount[i] == 0 {
			continue
		}
		sigs = append(sigs, i)
		for _, t := range s.sigs[i].Tools {
			if !base.in[t] && !seen[t] {
				seen[t] = true
				tools = append(tools, t)
			}
		}
	}
	k, bySig := len(tools), false
	if len(sigs) < k {
		k, bySig = len(sigs), true
	}
	if k > 30 || (1<<k)*(len(sigs)+1) > s.opt.ExactWork {
		return nil
	}
	st := base.clone()
	best := s.solution(st, g, "exact")
	count := make([]int, len(s.costs))
	flip := func(j int, on bool) {
		if !bySig {
			if on {
				st.add(tools[j])
			} else {
				st.remove(tools[j])
			}
			return
		}
		for _, t := range s.sigs[sigs[j]].Tools {
			if s.pinned[t] {
				continue // in from the start, never flipped
			}
			if on {
				count[t]++
				if count[t] == 1 {
					st.add(t)
				}
			} else {
				count[t]--
				if count[t] == 0 {
					st.remove(t)
				}
			}
		}
	}
	on := make([]bool, k)
	for step := uint64(1); step < 1<<k; step++ {
		j := bits.TrailingZeros64(step)
		on[j] = !on[j]
		flip(j, on[j])
		// Cheap pre-check before building a Solution.
		feas := g.feasible(st)
		if feas != best.Feasible {
			if !feas {
				continue
			}
		} else if feas && g.budget < 0 && st.cost > best.Cost {
			continue
		} else if (g.budget >= 0 || !feas) && st.covered < best.Covered {
			continue
		}
		if sol := s.solution(st, g, "exact"); g.better(sol, best) {
			best = sol
		}
	}
	if g.budget < 0 && best.Feasible {
		best.LowerBound = best.Cost
	}
	return best
}
