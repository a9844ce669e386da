package opcontext

import "fmt"

// Describe says in a line what the status is, as profiler doctor prints
// it: for an active file its revision and sizes.
func (st Status) Describe() string {
	switch st.State {
	case StateActive:
		rev := st.Revision
		if rev == "" {
			rev = "(unlabelled)"
		}
		return fmt.Sprintf("active rev %s, %d doctrine sections, summary %d characters",
			rev, st.DoctrineSections, st.SummaryChars)
	case StateInvalid:
		return "invalid (feature off until the file is fixed)"
	}
	return string(st.State)
}
