package replay

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
)

// WriteTable prints the per-tool outcomes, the totals and the first
// errors, as profiler replay does.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "TOOL\tCALLS\tOK\tTOOL_ERROR\tDENIED\tUNKNOWN_TOOL\tERROR\t")
	for _, t := range r.Tools {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\t%d\t%d\t\n", t.Name, t.Calls, t.Outcomes[OK], t.Outcomes[ToolError], t.Outcomes[Denied], t.Outcomes[UnknownTool], t.Outcomes[Error])
	}
	o := r.Outcomes
	fmt.Fprintf(tw, "total\t%d\t%d\t%d\t%d\t%d\t%d\t\n", r.Calls, o[OK], o[ToolError], o[Denied], o[UnknownTool], o[Error])
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\n%d sessions of %s replayed against %s in %.1fs: %d calls, %d ok, %d tool_error, %d denied, %d unknown_tool, %d error; %d sessions could not be opened\n",
		r.SessionsRun, r.Trace, r.Target, r.Duration, r.Calls, o[OK], o[ToolError], o[Denied], o[UnknownTool], o[Error], r.SessionErrors)
	if len(r.DeniedCodes) > 0 {
		codes := make([]string, 0, len(r.DeniedCodes))
		for c := range r.DeniedCodes {
			codes = append(codes, c)
		}
		slices.Sort(codes)
		parts := make([]string, len(codes))
		for i, c := range codes {
			parts[i] = fmt.Sprintf("%s %d", c, r.DeniedCodes[c])
		}
		fmt.Fprintf(w, "denied by code: %s\n", strings.Join(parts, ", "))
	}
	for _, e := range r.Errors {
		if e.Call < 0 {
			fmt.Fprintf(w, "error: session %s: %s\n", e.Session, e.Message)
		} else {
			fmt.Fprintf(w, "error: session %s call %d (%s): %s\n", e.Session, e.Call, e.Tool, e.Message)
		}
	}
	return nil
}
