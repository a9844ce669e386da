package derive

import (
	"slices"
	"time"

	"github.com/toolprof/toolprof/opcontext"
	"github.com/toolprof/toolprof/profiles"
)

// GatewayTool reports whether name is a tool the gateway itself serves
// (enable_tools, get_operating_context) rather than an upstream's. The
// gateway records calls to them like any other, but a catalog of the
// upstreams never lists them.
func GatewayTool(name string) bool {
	return name == profiles.EnableToolsName || name == opcontext.ToolName
}

// Demand is one learning session's demand: catalog tool indices, sorted
// and distinct, and the session's start (zero when unknown). It is not a
// second shape of a session but its index form: built from a
// telemetry.Usage against one catalog (CatalogDemand), after sessions that
// did not see every tool are left out, so the solver and the split work on
// small integers instead of tool names.
type Demand struct {
	ID    string // the session's id
	Tools []int
	Start time.Time
	// Unknown marks a session that called a tool the catalog lacks: no
	// profile, not even full, serves it, so no tool set covers it.
	Unknown bool
	// Path is the session's demand in time, which its cost per session
	// with prompt caching depends on.
	Path Path
}

// CatalogDemand appends to idx the catalog indices (index) of the tools
// called (names) and reports whether a name was unknown, adding it to
// unknown. A tool the catalog lacks is unknown unless it is a gateway
// tool: a call to the gateway's own tool is no demand for an upstream tool
// and no sign of a stale catalog, so it is left out silently. When an
// upstream offers a tool of that name the gateway serves the upstream's,
// and the catalog lists it: a catalog tool is always demand.
func CatalogDemand(idx []int, names []string, index map[string]int, unknown map[string]bool) ([]int, bool) {
	miss := false
	for _, t := range names {
		switch i, ok := index[t]; {
		case ok:
			idx = append(idx, i)
		case GatewayTool(t):
		default:
			miss = true
			unknown[t] = true
		}
	}
	return idx, miss
}

// TimeOrder returns sessions (in recorded or imported order) sorted by
// start, stably: a session without a start keeps its place after the
// session recorded before it.
func TimeOrder(sessions []Demand) []Demand {
	order := timeOrder(len(sessions), func(i int) time.Time { return sessions[i].Start })
	if order == nil {
		return sessions
	}
	sorted := make([]Demand, len(sessions))
	for i, o := range order {
		sorted[i] = sessions[o]
	}
	return sorted
}

// TimeOrderIndex is TimeOrder as a permutation of the sessions' starts
// (order[i] is the index of the i-th session in time), for callers that
// reorder more than Demands; nil when they are in order already.
func TimeOrderIndex(starts []time.Time) []int {
	return timeOrder(len(starts), func(i int) time.Time { return starts[i] })
}

// timeOrder is TimeOrderIndex of n sessions' starts; sessions already in
// order, as telemetry returns them, cost no allocation.
func timeOrder(n int, start func(int) time.Time) []int {
	sorted := true
	var last, prev time.Time
	for i := range n {
		if s := start(i); !s.IsZero() {
			last = s
		}
		if last.Before(prev) {
			sorted = false
			break
		}
		prev = last
	}
	if sorted {
		return nil
	}
	keys := make([]time.Time, n)
	last = time.Time{}
	for i := range n {
		if s := start(i); !s.IsZero() {
			last = s
		}
		keys[i] = last
	}
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return keys[a].Compare(keys[b]) })
	return order
}
