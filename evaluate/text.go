package evaluate

import (
	"fmt"
	"io"
	"text/tabwriter"
)

// WriteText writes the report as profiler evaluate prints it: the
// sessions and needed uses, then per arm the protocols its figures are
// for, its served share, the share a search missed and the model found
// by name, recall, searches and cost per session.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "%d held-out sessions, %d needed tool uses (first calls of catalog tools)\n", r.Sessions, r.Needed)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "arm\tprofile\tprotocols\tserved\tby name\trecall@1\t@5\t@10\tsearches/session\tcost mean\tp50\tp95\tof full\t")
	for _, a := range r.Arms {
		recall := func(k string) string {
			if v, ok := a.RecallAt[k]; ok {
				return fmt.Sprintf("%.3f", v)
			}
			return "-"
		}
		served, byName := "-", "-" // of no needed uses: unknown
		if r.Needed > 0 {
			served = fmt.Sprintf("%.3f", a.ServedShare)
		}
		if len(a.RecallAt) > 0 { // it searched
			byName = fmt.Sprintf("%.3f", a.RecoveredShare)
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.0f\t%.0f\t%.0f\t%.3f\t\n", a.Name, a.Profile, a.Protocols, served, byName,
			recall("1"), recall("5"), recall("10"), a.SearchesPerSession, a.CostPerSession.Mean, a.CostPerSession.P50, a.CostPerSession.P95, a.CostShareOfFull)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "protocols: the clients the figures are for: all, 2026-07-28 (and later: no tool groups offered) or 2025-11-25 (and earlier only: groups)")
	fmt.Fprintln(w, "by name: needed uses a find_tools search missed that the model then asked for by name, after listing the names (query \"*\"); not in served")
	fmt.Fprintln(w, "cost: input-token equivalents of the model measure (anthropic, o200k_base) with prompt caching (write 1.25x, read 0.1x); search results count as conversation the model reads")
	return nil
}
