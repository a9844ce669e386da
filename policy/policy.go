// Package policy decides whether a session may call a tool. The gateway
// asks it once per tools/call, from one snapshot of its catalog, and
// profiler check asks it for each call of a trace, so that what check
// predicts is what the gateway does.
//
// A decision is an ordered chain of small rules over data (Rules): the
// first that refuses decides, and a call no rule refuses is allowed. The
// snapshot and the state are values; Decide reads nothing else and
// changes nothing.
package policy

import (
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// Snapshot is what a decision reads of the served catalog. The gateway
// takes one per request; nothing in it changes while a decision is made.
type Snapshot struct {
	// Resolved are the profiles, resolved against Tools.
	Resolved *profiles.Resolved
	// Tools are the upstreams' tools by name. A tool not in it is unknown.
	Tools map[string]*mcp.Tool
	// Ceiling is the profile no served tool may lie outside
	// (server --max-profile); "" is no ceiling.
	Ceiling string
	// CredentialCeiling is the ceiling of the request's credential (a
	// tokens file's ceiling =), which bounds every rule as Ceiling does:
	// a served tool lies within both. "" is none. profiler check models
	// no credential, and leaves it "".
	CredentialCeiling string
	// ReadOnly serves every profile read-only (server --read-only).
	ReadOnly bool
	// Search is whether the catalog can serve find_tools and call_tool
	// (the gateway built a search index); a profile's search = true is
	// served only then.
	Search bool
}

// State is what a decision reads of the session.
type State struct {
	// Profile is the profile the session is served.
	Profile string
	// Switched are the tools the session's switched-on groups add.
	Switched []string
	// Sessionless is a session whose list may not change as a side effect
	// of its requests: it is offered no groups.
	Sessionless bool
	// ViaSearch is a call carried by call_tool.
	ViaSearch bool
}

// Refusal says why a call is refused; "" is allowed.
type Refusal string

// The refusals, in the order the rules check them.
const (
	Allowed       Refusal = ""
	UnknownTool   Refusal = "unknown_tool"   // no upstream offers the tool
	ReadOnly      Refusal = "read_only"      // the session is served read-only and the tool is not read or evaluate
	BeyondCeiling Refusal = "beyond_ceiling" // the tool lies outside the ceiling
	NotInProfile  Refusal = "not_in_profile" // neither the profile, a switched-on group nor search reaches it
)

// Decision is the answer for one call.
type Decision struct {
	Refusal Refusal
	// Group is, for BeyondCeiling and NotInProfile, the first group of the
	// profile (in its order) that would let the session call the tool if
	// switched on; "" when none would.
	Group string
}

// Allowed reports whether the call may go ahead.
func (d Decision) Allowed() bool { return d.Refusal == Allowed }

// Rule is one step of the chain: the refusal it makes of tool, or Allowed
// to leave the decision to the rules after it.
type Rule struct {
	Name  string
	Check func(snap *Snapshot, st *State, tool string) Refusal
}

// Rules returns the chain Decide runs, in order.
func Rules() []Rule { return rules }

// rules is never modified: Rules hands out the slice for reading.
var rules = []Rule{
	{"known", func(snap *Snapshot, _ *State, tool string) Refusal {
		if _, ok := snap.Tools[tool]; !ok {
			return UnknownTool
		}
		return Allowed
	}},
	{"read-only", func(snap *Snapshot, st *State, tool string) Refusal {
		if snap.ServedReadOnly(st.Profile) && !snap.Effect(tool).Kind.ReadOnly() {
			return ReadOnly
		}
		return Allowed
	}},
	// The ceiling is checked on every call, not only when a session is
	// opened: a profile reload may put a tool beyond it into the profile
	// an open session is served.
	{"ceiling", func(snap *Snapshot, _ *State, tool string) Refusal {
		if !snap.InCeiling(tool) {
			return BeyondCeiling
		}
		return Allowed
	}},
	{"reach", func(snap *Snapshot, st *State, tool string) Refusal {
		if snap.Resolved.Allowed(st.Profile, tool) || slices.Contains(st.Switched, tool) && len(snap.OfferedGroups(st)) > 0 ||
			st.ViaSearch && snap.Searchable(st.Profile, tool) {
			return Allowed
		}
		return NotInProfile
	}},
}

// Decide runs Rules over one call of tool by a session in state st.
func Decide(snap *Snapshot, st *State, tool string) Decision {
	for _, r := range rules {
		if ref := r.Check(snap, st, tool); ref != Allowed {
			d := Decision{Refusal: ref}
			if ref == BeyondCeiling || ref == NotInProfile {
				d.Group = snap.GroupToEnable(st, tool)
			}
			return d
		}
	}
	return Decision{}
}

// ServedReadOnly reports whether profile is served read-only: by the
// gateway's flag or by the profile's read_only.
func (snap *Snapshot) ServedReadOnly(profile string) bool {
	if snap.ReadOnly {
		return true
	}
	p, ok := snap.Resolved.Profiles[profile]
	return ok && p.ReadOnly
}

// Effect is the effect of an offered tool as served: the resolved one, or,
// for a tool the profiles were not resolved against, the tool's own.
func (snap *Snapshot) Effect(tool string) profiles.Effect {
	if e := snap.Resolved.Effect(tool); e.Kind != "" {
		return e
	}
	if t, ok := snap.Tools[tool]; ok {
		return profiles.EffectOf(t, nil)
	}
	return profiles.Effect{}
}

// InCeiling reports whether tool may be served at all: it lies within
// Ceiling and CredentialCeiling.
func (snap *Snapshot) InCeiling(tool string) bool {
	for _, c := range [...]string{snap.Ceiling, snap.CredentialCeiling} {
		if c != "" && !snap.Resolved.Allowed(c, tool) {
			return false
		}
	}
	return true
}

// SearchServed reports whether a gateway serving res serves search at all
// (it then builds the index Snapshot.Search stands for): some profile asks
// for it.
func SearchServed(res *profiles.Resolved) bool {
	return res != nil && slices.ContainsFunc(res.Order, func(p string) bool { return res.Profiles[p].Search })
}

// SearchOffered reports whether sessions of profile are served search: the
// profile asks for it, the catalog can serve it, and no upstream offers a
// tool named find_tools or call_tool.
func (snap *Snapshot) SearchOffered(profile string) bool {
	p, ok := snap.Resolved.Profiles[profile]
	if !ok || !p.Search || !snap.Search {
		return false
	}
	_, clashFind := snap.Tools[toolsearch.FindToolsName]
	_, clashCall := snap.Tools[toolsearch.CallToolName]
	return !clashFind && !clashCall
}

// Searchable reports whether find_tools may return tool to a session of
// profile and call_tool run it.
func (snap *Snapshot) Searchable(profile, tool string) bool {
	if !snap.SearchOffered(profile) || !snap.InCeiling(tool) || !snap.Resolved.Searchable(profile, tool) {
		return false
	}
	return !snap.ServedReadOnly(profile) || snap.Effect(tool).Kind.ReadOnly()
}

// OfferedGroups returns the groups offered to a session in st, in the
// profile's order: none for a sessionless one, nor when an upstream offers
// a tool named enable_tools (the upstream's tool is never shadowed).
func (snap *Snapshot) OfferedGroups(st *State) []profiles.Group {
	if st.Sessionless {
		return nil
	}
	p, ok := snap.Resolved.Profiles[st.Profile]
	if !ok || len(p.Groups) == 0 {
		return nil
	}
	if _, clash := snap.Tools[profiles.EnableToolsName]; clash {
		return nil
	}
	var out []profiles.Group
	for _, name := range p.Groups {
		if rg, ok := snap.Resolved.Groups[name]; ok {
			out = append(out, *rg)
		}
	}
	return out
}

// GroupAdds returns the tools switching group on adds to a session of
// profile (GroupTools, less those not read or evaluate when the profile is
// served read-only), and those of them outside the ceiling.
func (snap *Snapshot) GroupAdds(profile, group string) (adds, beyond []string, err error) {
	tools, err := snap.Resolved.GroupTools(profile, group)
	if err != nil {
		return nil, nil, err
	}
	ro := snap.ServedReadOnly(profile)
	for _, t := range tools {
		if ro && !snap.Effect(t).Kind.ReadOnly() {
			continue
		}
		adds = append(adds, t)
		if !snap.InCeiling(t) {
			beyond = append(beyond, t)
		}
	}
	return adds, beyond, nil
}

// GroupToEnable returns the first offered group (in the profile's order)
// that would let a session in st call tool: adding it, within the
// ceiling. "" when there is none.
func (snap *Snapshot) GroupToEnable(st *State, tool string) string {
	for _, grp := range snap.OfferedGroups(st) {
		adds, beyond, err := snap.GroupAdds(st.Profile, grp.Name)
		if err == nil && len(beyond) == 0 && slices.Contains(adds, tool) {
			return grp.Name
		}
	}
	return ""
}
