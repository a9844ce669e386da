package policy

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/visible"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// Verdicts of checking a recorded session against a profiles file. A
// session is refused at its first refused call; the verdict names the
// reason of that call, and the detail lists every refused tool.
const (
	VerdictCovered        = "covered"
	VerdictExcluded       = "excluded"        // a tool the upstreams offer is outside the session's profile
	VerdictUnknownTool    = "unknown-tool"    // a tool no upstream offers
	VerdictUnknownProfile = "unknown-profile" // the session names a profile the file lacks
)

// Call is one recorded call of a session to check: the tool, and the
// arguments when the record kept them (only enable_tools' and call_tool's
// are read).
type Call struct {
	Tool      string
	Arguments json.RawMessage
	// ViaSearch marks a call of Tool the session made through call_tool
	// (telemetry's Call.Search), as a call of call_tool naming Tool is.
	ViaSearch bool
}

// Verdict is what the profiles file would have done to one session.
type Verdict struct {
	Session, Profile string
	Calls            int
	Status           string
	Excluded         []string            // offered tools outside the profile, in call order
	IncludedIn       map[string][]string // excluded tool -> profiles holding it
	Unknown          []string            // tools no upstream offers, in call order
	Valid            []string            // for an unknown profile: the profiles that exist
}

// CheckSession replays a session's calls through Decide as a session of
// profile, switching groups on as its enable_tools calls did where the
// gateway would (GroupAdds; not a group reaching beyond the ceiling), as
// the gateway would serve them: enable_tools, find_tools and call_tool are the
// gateway's own where it serves them to profile (groups, search), and a
// call through call_tool is allowed a tool the profile does not hold only
// when the tool is searchable; one whose recorded arguments name no tool
// (no name, an empty one, or not a string) the gateway refuses, and so is
// an unknown tool here. Where profile is not served search, a call
// made through call_tool is one of a tool named call_tool (an upstream's,
// or unknown).
func CheckSession(snap *Snapshot, session string, calls []Call, profile string) Verdict {
	res := snap.Resolved
	v := Verdict{Session: session, Profile: profile, Calls: len(calls), Status: VerdictCovered, IncludedIn: map[string][]string{}}
	if _, ok := res.Profiles[profile]; !ok {
		v.Status = VerdictUnknownProfile
		v.Valid = res.Names()
		return v
	}
	// Tools switched on by enable_tools, which the gateway serves itself
	// in a profile offering groups (unless an upstream offers a tool of
	// that name).
	st := &State{Profile: profile}
	groupsOffered := len(snap.OfferedGroups(st)) > 0
	searchOffered := snap.SearchOffered(profile)
	unknown := func(tool string) {
		if !slices.Contains(v.Unknown, tool) {
			v.Unknown = append(v.Unknown, tool)
		}
		if v.Status == VerdictCovered {
			v.Status = VerdictUnknownTool
		}
	}
	for _, c := range calls {
		tool, viaSearch := c.Tool, c.ViaSearch
		switch {
		case viaSearch && !searchOffered:
			tool, viaSearch = toolsearch.CallToolName, false
		case viaSearch:
		case groupsOffered && tool == profiles.EnableToolsName:
			for _, g := range switchedGroups(res, profile, c.Arguments) {
				// As the gateway decides enable_tools: a group that would
				// add a tool outside the ceiling is refused whole
				// (group_not_allowed), one it cannot resolve too
				// (invalid_arguments); nothing of it is switched on.
				adds, beyond, err := snap.GroupAdds(profile, g)
				if err != nil || len(beyond) > 0 {
					continue
				}
				for _, t := range adds {
					if !slices.Contains(st.Switched, t) {
						st.Switched = append(st.Switched, t)
					}
				}
			}
			continue
		case searchOffered && tool == toolsearch.FindToolsName:
			continue
		case searchOffered && tool == toolsearch.CallToolName:
			if len(c.Arguments) == 0 {
				// The record does not say which tool (exported telemetry
				// records the carried call instead): any searchable one.
				continue
			}
			name, ok := calledTool(c.Arguments)
			if !ok {
				// The gateway refuses it (invalid_arguments), whatever
				// the session meant to call.
				unknown(callToolNamingNone)
				continue
			}
			tool, viaSearch = name, true
		}
		st.ViaSearch = viaSearch
		switch Decide(snap, st, tool).Refusal {
		case Allowed:
		case UnknownTool:
			unknown(tool)
		default:
			if !slices.Contains(v.Excluded, tool) {
				v.Excluded = append(v.Excluded, tool)
				v.IncludedIn[tool] = res.ProfilesWith(tool)
			}
			if v.Status == VerdictCovered {
				v.Status = VerdictExcluded
			}
		}
	}
	return v
}

// switchedGroups returns the groups an enable_tools call with arguments
// switched on: the group it names, or, when the record does not say
// (exported telemetry never stores arguments), every group the profile
// offers, so that a session is refused only for what no switch could have
// served.
func switchedGroups(res *profiles.Resolved, profile string, arguments json.RawMessage) []string {
	offered := res.Profiles[profile].Groups
	var args struct {
		Group *string `json:"group"`
	}
	if len(arguments) == 0 || json.Unmarshal(arguments, &args) != nil || args.Group == nil {
		return offered
	}
	if slices.Contains(offered, *args.Group) {
		return []string{*args.Group}
	}
	return nil // the gateway refuses a group the profile does not offer
}

// callToolNamingNone stands, among a verdict's unknown tools, for
// call_tool calls whose recorded arguments name no tool.
const callToolNamingNone = "call_tool without a tool name"

// calledTool returns the tool a call_tool call with arguments runs, as the
// gateway reads it; ok is false when the arguments do not name one.
func calledTool(arguments json.RawMessage) (string, bool) {
	var args struct {
		Name *string `json:"name"`
	}
	if len(arguments) == 0 || json.Unmarshal(arguments, &args) != nil || args.Name == nil || *args.Name == "" {
		return "", false
	}
	return *args.Name, true
}

// Detail says why the session would be refused: the excluded tools with
// the profiles holding them, the unknown tools, or the valid profiles.
func (v Verdict) Detail() string {
	if v.Status == VerdictUnknownProfile {
		return fmt.Sprintf("no profile %q; valid profiles: %s", v.Profile, strings.Join(v.Valid, ", "))
	}
	var parts []string
	if len(v.Excluded) > 0 {
		var ex []string
		for _, t := range v.Excluded {
			ex = append(ex, fmt.Sprintf("%s (in %s)", t, strings.Join(v.IncludedIn[t], ", ")))
		}
		parts = append(parts, "excluded: "+strings.Join(ex, "; "))
	}
	if len(v.Unknown) > 0 {
		parts = append(parts, "unknown: "+strings.Join(v.Unknown, ", "))
	}
	return strings.Join(parts, " | ")
}

// NamedTools stands in for a catalog: every tool the profiles file or its
// policy names, without annotations.
func NamedTools(set *profiles.Set) []*mcp.Tool {
	seen := map[string]bool{}
	add := func(names []string) {
		for _, n := range names {
			seen[n] = true
		}
	}
	for _, p := range set.File.Profiles {
		add(p.Tools)
	}
	for _, g := range set.File.Groups {
		add(g.Tools)
	}
	if set.Policy != nil {
		for _, p := range set.Policy.Profiles {
			add(p.Pin)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	tools := make([]*mcp.Tool, len(names))
	for i, n := range names {
		tools[i] = &mcp.Tool{Name: n}
	}
	return tools
}

// WriteVerdicts writes one line per session (only the refused ones with
// refusedOnly): its profile, calls, verdict and detail. Session ids,
// profile and tool names are the trace's, which a client chose: their
// control and format characters are shown as escapes (visible.String).
func WriteVerdicts(w io.Writer, vs []Verdict, refusedOnly bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tPROFILE\tCALLS\tVERDICT\tDETAIL")
	for _, v := range vs {
		if refusedOnly && v.Status == VerdictCovered {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", visible.String(v.Session), visible.String(v.Profile), v.Calls, v.Status, visible.String(v.Detail()))
	}
	return tw.Flush()
}

// WriteVerdictSummary prints the totals, of the sessions of tracePath
// checked against profilesPath, and returns how many would be refused.
func WriteVerdictSummary(w io.Writer, vs []Verdict, profilesPath, tracePath string) int {
	count := map[string]int{}
	type tally struct{ covered, total int }
	per := map[string]*tally{}
	var order []string
	for _, v := range vs {
		count[v.Status]++
		t, ok := per[v.Profile]
		if !ok {
			t = &tally{}
			per[v.Profile] = t
			order = append(order, v.Profile)
		}
		t.total++
		if v.Status == VerdictCovered {
			t.covered++
		}
	}
	refused := len(vs) - count[VerdictCovered]
	share := 0.0
	if len(vs) > 0 {
		share = 100 * float64(count[VerdictCovered]) / float64(len(vs))
	}
	fmt.Fprintf(w, "\n%d sessions of %s against %s: %d covered (%.1f%%), %d refused: %d tool excluded from profile, %d unknown tool, %d unknown profile\n",
		len(vs), tracePath, profilesPath, count[VerdictCovered], share, refused, count[VerdictExcluded], count[VerdictUnknownTool], count[VerdictUnknownProfile])
	slices.Sort(order)
	parts := make([]string, len(order))
	for i, p := range order {
		parts[i] = fmt.Sprintf("%s %d/%d", p, per[p].covered, per[p].total)
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "covered per profile: %s\n", strings.Join(parts, ", "))
	}
	return refused
}
