package derive

import (
	"fmt"
	"io"
)

// WriteTable writes the family as profiler derive prints it: per profile
// its tools, tokens, share of full, solver gap and coverage beside the
// top-k baseline, then the cost per held-out session with caching.
func (res *Result) WriteTable(w io.Writer) {
	full := res.Profiles[len(res.Profiles)-1]
	share := func(tokens int) string {
		if full.Tokens == 0 {
			return "n/a"
		}
		return fmt.Sprintf("%.1f%%", 100*float64(tokens)/float64(full.Tokens))
	}
	cov := func(s Score) string {
		v, ok := s.Share()
		if !ok {
			return "not evaluable"
		}
		return fmt.Sprintf("%.1f%% of %d", 100*v, s.Sessions)
	}
	fmt.Fprintf(w, "%-12s %5s %8s %8s %7s  %-18s %-18s | %s\n", "profile", "tools", "tokens", "of full", "gap<=", "coverage", "held-out", "top-k baseline: tools tokens of-full held-out")
	for _, p := range res.Profiles {
		base, gap := "", "-"
		if b := p.Baseline; b != nil {
			base = fmt.Sprintf("%d %d %s %s", len(b.Tools), b.Tokens, share(b.Tokens), cov(b.Holdout))
		}
		if sol := p.Solution; sol != nil && sol.LowerBound > 0 {
			gap = fmt.Sprintf("%.1f%%", 100*float64(sol.Cost-sol.LowerBound)/float64(sol.LowerBound))
		}
		fmt.Fprintf(w, "%-12s %5d %8d %8s %7s  %-18s %-18s | %s\n", p.Name, len(p.Tools), p.Tokens, share(p.Tokens), gap, cov(p.Derive), cov(p.Holdout), base)
	}
	fmt.Fprintln(w, "gap<=: how far the listing's tokens can be above the cheapest listing covering the target, from the Lagrangian lower bound")
	fmt.Fprintf(w, "per held-out session with prompt caching (%s):\n", CostAssumptions(res.Cache))
	fmt.Fprintf(w, "%-12s %10s %10s %10s %8s\n", "profile", "mean", "p50", "p95", "of full")
	for _, p := range res.Profiles {
		if c := p.HoldoutCost; c.Sessions > 0 {
			fmt.Fprintf(w, "%-12s %10.0f %10.0f %10.0f %7.1f%%\n", p.Name, c.Mean, c.P50, c.P95, 100*c.ShareOfFull)
		}
	}
	fmt.Fprintf(w, "default: %s\n", res.Default)
}
