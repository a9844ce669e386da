package evaluate

import "encoding/json"

// MarshalJSON writes the report as its fields say, but for served_share,
// left out of every arm when there were no needed uses: a share of none
// cannot be computed, and 0 would read as an arm that served nothing.
func (r Report) MarshalJSON() ([]byte, error) {
	type arm struct {
		ArmReport
		ServedShare *float64 `json:"served_share,omitempty"`
	}
	type report Report // its fields, without this method
	out := struct {
		report
		Arms []arm `json:"arms"`
	}{report: report(r)}
	if r.Arms != nil {
		out.Arms = make([]arm, len(r.Arms))
	}
	for i, a := range r.Arms {
		out.Arms[i].ArmReport = a
		if r.Needed > 0 {
			out.Arms[i].ServedShare = &r.Arms[i].ServedShare
		}
	}
	return json.Marshal(out)
}
