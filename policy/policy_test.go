package policy_test

import (
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
)

// testProfiles: core holds read and write; grouped holds read and offers
// group media (audio, image) and errors (fail); searchy holds read and
// reaches the rest by search (but destructive drop); viewer is read_only.
const testProfiles = `version = 1
default = "grouped"

[[profile]]
name = "core"
tools = ["read", "write", "fail", "image"]

[[profile]]
name = "grouped"
tools = ["read"]
groups = ["media", "errors"]

[[profile]]
name = "searchy"
tools = ["read"]
search = true

[[profile]]
name = "viewer"
tools = ["read"]
groups = ["errors"]
read_only = true

[[group]]
name = "media"
description = "audio and image"
tools = ["audio", "image"]

[[group]]
name = "errors"
description = "error handling"
tools = ["fail"]
`

func snapshot(t *testing.T, extra ...string) *policy.Snapshot {
	t.Helper()
	file, err := profiles.DecodeFile(strings.NewReader(testProfiles), "profiles.generated.toml")
	if err != nil {
		t.Fatal(err)
	}
	ro, closed, open := true, false, true
	tools := []*mcp.Tool{
		{Name: "drop", Annotations: &mcp.ToolAnnotations{DestructiveHint: &open}},
		{Name: "read", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "write", Annotations: &mcp.ToolAnnotations{DestructiveHint: &closed}},
		{Name: "fail", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: ro}},
		{Name: "audio", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "image", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
	}
	for _, n := range extra {
		tools = append(tools, &mcp.Tool{Name: n})
	}
	res, err := (&profiles.Set{File: file}).Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	snap := &policy.Snapshot{Resolved: res, Tools: map[string]*mcp.Tool{}, Search: true}
	for _, tl := range tools {
		snap.Tools[tl.Name] = tl
	}
	return snap
}

// TestDecide runs each rule of the chain, and their order, over one
// snapshot: the refusal and the group a refusal names.
func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name     string
		ceiling  string
		credCeil string // the credential's ceiling
		readOnly bool
		search   bool // the catalog serves search
		extra    []string
		st       policy.State
		tool     string
		want     policy.Decision
	}{
		{name: "in profile", st: policy.State{Profile: "core"}, tool: "write", want: policy.Decision{}},
		{name: "unknown tool", st: policy.State{Profile: "core"}, tool: "nope", want: policy.Decision{Refusal: policy.UnknownTool}},
		{name: "unknown before read-only", readOnly: true, st: policy.State{Profile: "core"}, tool: "nope", want: policy.Decision{Refusal: policy.UnknownTool}},
		{name: "not in profile", st: policy.State{Profile: "core"}, tool: "audio", want: policy.Decision{Refusal: policy.NotInProfile}},
		{name: "not in profile names the group", st: policy.State{Profile: "grouped"}, tool: "audio", want: policy.Decision{Refusal: policy.NotInProfile, Group: "media"}},
		{name: "first group in profile order", st: policy.State{Profile: "grouped"}, tool: "fail", want: policy.Decision{Refusal: policy.NotInProfile, Group: "errors"}},
		{name: "switched on", st: policy.State{Profile: "grouped", Switched: []string{"audio", "image"}}, tool: "audio", want: policy.Decision{}},
		{name: "sessionless: no groups", st: policy.State{Profile: "grouped", Switched: []string{"audio"}, Sessionless: true}, tool: "audio", want: policy.Decision{Refusal: policy.NotInProfile}},
		{name: "enable_tools clash: no groups", extra: []string{profiles.EnableToolsName}, st: policy.State{Profile: "grouped", Switched: []string{"audio"}}, tool: "audio", want: policy.Decision{Refusal: policy.NotInProfile}},
		{name: "gateway read-only", readOnly: true, st: policy.State{Profile: "core"}, tool: "write", want: policy.Decision{Refusal: policy.ReadOnly}},
		{name: "gateway read-only lets reads by", readOnly: true, st: policy.State{Profile: "core"}, tool: "read", want: policy.Decision{}},
		{name: "profile read_only", st: policy.State{Profile: "viewer"}, tool: "write", want: policy.Decision{Refusal: policy.ReadOnly}},
		{name: "beyond the ceiling", ceiling: "grouped", st: policy.State{Profile: "core"}, tool: "write", want: policy.Decision{Refusal: policy.BeyondCeiling}},
		{name: "ceiling before the switch", ceiling: "core", st: policy.State{Profile: "grouped", Switched: []string{"audio", "image"}}, tool: "audio", want: policy.Decision{Refusal: policy.BeyondCeiling}},
		{name: "group beyond the ceiling is not named", ceiling: "core", st: policy.State{Profile: "grouped"}, tool: "image", want: policy.Decision{Refusal: policy.NotInProfile}},
		{name: "beyond the credential's ceiling", credCeil: "grouped", st: policy.State{Profile: "core"}, tool: "write", want: policy.Decision{Refusal: policy.BeyondCeiling}},
		{name: "within both ceilings", ceiling: "core", credCeil: "core", st: policy.State{Profile: "core"}, tool: "write", want: policy.Decision{}},
		{name: "within the server's, beyond the credential's", ceiling: "core", credCeil: "grouped", st: policy.State{Profile: "core"}, tool: "write", want: policy.Decision{Refusal: policy.BeyondCeiling}},
		{name: "credential's ceiling before the switch", credCeil: "core", st: policy.State{Profile: "grouped", Switched: []string{"audio", "image"}}, tool: "audio", want: policy.Decision{Refusal: policy.BeyondCeiling}},
		{name: "group beyond the credential's ceiling is not named", credCeil: "core", st: policy.State{Profile: "grouped"}, tool: "image", want: policy.Decision{Refusal: policy.NotInProfile}},
		{name: "via search beyond the credential's ceiling", search: true, credCeil: "grouped", st: policy.State{Profile: "searchy", ViaSearch: true}, tool: "write", want: policy.Decision{Refusal: policy.BeyondCeiling}},
		{name: "via search", search: true, st: policy.State{Profile: "searchy", ViaSearch: true}, tool: "write", want: policy.Decision{}},
		{name: "search only through call_tool", search: true, st: policy.State{Profile: "searchy"}, tool: "write", want: policy.Decision{Refusal: policy.NotInProfile}},
		{name: "no search index", st: policy.State{Profile: "searchy", ViaSearch: true}, tool: "write", want: policy.Decision{Refusal: policy.NotInProfile}},
		{name: "search read-only", search: true, readOnly: true, st: policy.State{Profile: "searchy", ViaSearch: true}, tool: "audio", want: policy.Decision{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t, tc.extra...)
			snap.Ceiling, snap.CredentialCeiling, snap.ReadOnly, snap.Search = tc.ceiling, tc.credCeil, tc.readOnly, tc.search
			if got := policy.Decide(snap, &tc.st, tc.tool); got != tc.want {
				t.Errorf("Decide(%s, %q) = %+v, want %+v", tc.st.Profile, tc.tool, got, tc.want)
			}
		})
	}
}

// TestCredentialCeilingBoundsGroupsAndSearch: a credential's ceiling bounds
// what a group adds and what search reaches as the server's ceiling does.
func TestCredentialCeilingBoundsGroupsAndSearch(t *testing.T) {
	for _, tc := range []struct {
		name, ceiling, credCeil string
		beyond                  []string // of group media for grouped
		searchable              bool     // audio for searchy
	}{
		{name: "no ceiling", searchable: true},
		{name: "server's ceiling", ceiling: "core", beyond: []string{"audio"}},
		{name: "credential's ceiling", credCeil: "core", beyond: []string{"audio"}},
		{name: "credential's ceiling narrower", credCeil: "grouped", beyond: []string{"audio", "image"}},
		{name: "both", ceiling: "core", credCeil: "grouped", beyond: []string{"audio", "image"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t)
			snap.Ceiling, snap.CredentialCeiling = tc.ceiling, tc.credCeil
			_, beyond, err := snap.GroupAdds("grouped", "media")
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(beyond, ",") != strings.Join(tc.beyond, ",") {
				t.Errorf("GroupAdds(grouped, media) beyond = %v, want %v", beyond, tc.beyond)
			}
			if got := snap.Searchable("searchy", "audio"); got != tc.searchable {
				t.Errorf("Searchable(searchy, audio) = %v, want %v", got, tc.searchable)
			}
		})
	}
}
