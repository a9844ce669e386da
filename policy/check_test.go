package policy_test

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/toolprof/toolprof/policy"
)

// TestCheckSession runs each arm of CheckSession over testProfiles: calls
// the profile holds, refused ones (the first refusal names the verdict,
// each tool listed once), enable_tools switching groups on, the search
// tools where the profile is served search and where it is not, and calls
// reached through call_tool, allowed only what serving allows.
func TestCheckSession(t *testing.T) {
	type call = policy.Call
	args := func(s string) json.RawMessage { return json.RawMessage(s) }
	for _, tc := range []struct {
		name     string
		profile  string
		ceiling  string
		noIndex  bool     // the catalog builds no search index
		extra    []string // more offered tools, without annotations
		calls    []call
		status   string
		excluded []string
		unknown  []string
	}{
		{name: "covered", profile: "core", calls: []call{{Tool: "read"}, {Tool: "write"}}, status: policy.VerdictCovered},
		{name: "unknown profile", profile: "gone", calls: []call{{Tool: "read"}}, status: policy.VerdictUnknownProfile},
		{name: "excluded, once per tool", profile: "core", calls: []call{{Tool: "audio"}, {Tool: "read"}, {Tool: "audio"}}, status: policy.VerdictExcluded, excluded: []string{"audio"}},
		{name: "unknown tool", profile: "core", calls: []call{{Tool: "nope"}}, status: policy.VerdictUnknownTool, unknown: []string{"nope"}},
		{name: "the first refusal names the verdict", profile: "core", calls: []call{{Tool: "nope"}, {Tool: "audio"}}, status: policy.VerdictUnknownTool, excluded: []string{"audio"}, unknown: []string{"nope"}},
		{name: "read-only refusal is an exclusion", profile: "viewer", calls: []call{{Tool: "write"}}, status: policy.VerdictExcluded, excluded: []string{"write"}},
		{name: "beyond the ceiling is an exclusion", profile: "core", ceiling: "grouped", calls: []call{{Tool: "write"}}, status: policy.VerdictExcluded, excluded: []string{"write"}},

		{name: "enable_tools switches the group named", profile: "grouped", calls: []call{{Tool: "enable_tools", Arguments: args(`{"group": "media"}`)}, {Tool: "audio"}, {Tool: "fail"}}, status: policy.VerdictExcluded, excluded: []string{"fail"}},
		{name: "enable_tools unrecorded switches every group", profile: "grouped", calls: []call{{Tool: "enable_tools"}, {Tool: "audio"}, {Tool: "fail"}}, status: policy.VerdictCovered},
		{name: "enable_tools of a group beyond the ceiling switches nothing", profile: "grouped", ceiling: "core", calls: []call{{Tool: "enable_tools", Arguments: args(`{"group": "media"}`)}, {Tool: "image"}}, status: policy.VerdictExcluded, excluded: []string{"image"}},
		{name: "enable_tools of a group within the ceiling", profile: "grouped", ceiling: "core", calls: []call{{Tool: "enable_tools", Arguments: args(`{"group": "errors"}`)}, {Tool: "fail"}}, status: policy.VerdictCovered},
		{name: "enable_tools unrecorded switches only groups within the ceiling", profile: "grouped", ceiling: "core", calls: []call{{Tool: "enable_tools"}, {Tool: "fail"}, {Tool: "image"}, {Tool: "audio"}}, status: policy.VerdictExcluded, excluded: []string{"image", "audio"}},
		{name: "enable_tools read-only switches only read tools", profile: "viewer", calls: []call{{Tool: "enable_tools", Arguments: args(`{"group": "errors"}`)}, {Tool: "fail"}}, status: policy.VerdictCovered},
		{name: "enable_tools of a group not offered", profile: "grouped", calls: []call{{Tool: "enable_tools", Arguments: args(`{"group": "other"}`)}, {Tool: "audio"}}, status: policy.VerdictExcluded, excluded: []string{"audio"}},
		{name: "enable_tools in a profile without groups", profile: "core", calls: []call{{Tool: "enable_tools"}}, status: policy.VerdictUnknownTool, unknown: []string{"enable_tools"}},
		{name: "enable_tools through call_tool switches nothing", profile: "grouped", calls: []call{{Tool: "enable_tools", ViaSearch: true}, {Tool: "audio"}}, status: policy.VerdictUnknownTool, excluded: []string{"audio"}, unknown: []string{"call_tool"}},

		{name: "via search: searchable", profile: "searchy", calls: []call{{Tool: "write", ViaSearch: true}}, status: policy.VerdictCovered},
		{name: "via search: held by the profile", profile: "searchy", calls: []call{{Tool: "read", ViaSearch: true}}, status: policy.VerdictCovered},
		{name: "via search: destructive, not searchable", profile: "searchy", calls: []call{{Tool: "drop", ViaSearch: true}}, status: policy.VerdictExcluded, excluded: []string{"drop"}},
		{name: "via search: beyond the ceiling", profile: "searchy", ceiling: "grouped", calls: []call{{Tool: "write", ViaSearch: true}}, status: policy.VerdictExcluded, excluded: []string{"write"}},
		{name: "via search: unknown tool", profile: "searchy", calls: []call{{Tool: "nope", ViaSearch: true}}, status: policy.VerdictUnknownTool, unknown: []string{"nope"}},
		{name: "via search: profile without search", profile: "core", calls: []call{{Tool: "audio", ViaSearch: true}}, status: policy.VerdictUnknownTool, unknown: []string{"call_tool"}},
		{name: "via search: no search index", profile: "searchy", noIndex: true, calls: []call{{Tool: "write", ViaSearch: true}}, status: policy.VerdictUnknownTool, unknown: []string{"call_tool"}},
		{name: "via search: an upstream's call_tool", profile: "searchy", extra: []string{"call_tool"}, calls: []call{{Tool: "write", ViaSearch: true}}, status: policy.VerdictExcluded, excluded: []string{"call_tool"}},
		{name: "searchable, called directly", profile: "searchy", calls: []call{{Tool: "write"}}, status: policy.VerdictExcluded, excluded: []string{"write"}},

		{name: "find_tools served", profile: "searchy", calls: []call{{Tool: "find_tools"}}, status: policy.VerdictCovered},
		{name: "find_tools not served", profile: "core", calls: []call{{Tool: "find_tools"}}, status: policy.VerdictUnknownTool, unknown: []string{"find_tools"}},
		{name: "call_tool naming a searchable tool", profile: "searchy", calls: []call{{Tool: "call_tool", Arguments: args(`{"name": "write", "arguments": {}}`)}}, status: policy.VerdictCovered},
		{name: "call_tool naming a tool not searchable", profile: "searchy", calls: []call{{Tool: "call_tool", Arguments: args(`{"name": "drop"}`)}}, status: policy.VerdictExcluded, excluded: []string{"drop"}},
		{name: "call_tool unrecorded", profile: "searchy", calls: []call{{Tool: "call_tool"}}, status: policy.VerdictCovered},
		{name: "call_tool with no name", profile: "searchy", calls: []call{{Tool: "call_tool", Arguments: args(`{"arguments": {}}`)}}, status: policy.VerdictUnknownTool, unknown: []string{"call_tool without a tool name"}},
		{name: "call_tool with an empty name", profile: "searchy", calls: []call{{Tool: "call_tool", Arguments: args(`{"name": ""}`)}}, status: policy.VerdictUnknownTool, unknown: []string{"call_tool without a tool name"}},
		{name: "call_tool with a name not a string", profile: "searchy", calls: []call{{Tool: "call_tool", Arguments: args(`{"name": 7}`)}}, status: policy.VerdictUnknownTool, unknown: []string{"call_tool without a tool name"}},
		{name: "call_tool with null arguments", profile: "searchy", calls: []call{{Tool: "call_tool", Arguments: args(`null`)}, {Tool: "read"}}, status: policy.VerdictUnknownTool, unknown: []string{"call_tool without a tool name"}},
		{name: "call_tool not served", profile: "core", calls: []call{{Tool: "call_tool", Arguments: args(`{"name": "write"}`)}}, status: policy.VerdictUnknownTool, unknown: []string{"call_tool"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap := snapshot(t, tc.extra...)
			snap.Ceiling, snap.Search = tc.ceiling, !tc.noIndex
			v := policy.CheckSession(snap, "s", tc.calls, tc.profile)
			if v.Status != tc.status || !slices.Equal(v.Excluded, tc.excluded) || !slices.Equal(v.Unknown, tc.unknown) {
				t.Errorf("CheckSession = %s, excluded %q, unknown %q; want %s, %q, %q", v.Status, v.Excluded, v.Unknown, tc.status, tc.excluded, tc.unknown)
			}
			if v.Session != "s" || v.Profile != tc.profile || v.Calls != len(tc.calls) {
				t.Errorf("verdict names session %q, profile %q, %d calls; want s, %s, %d", v.Session, v.Profile, v.Calls, tc.profile, len(tc.calls))
			}
			for _, tool := range v.Excluded {
				if want := snap.Resolved.ProfilesWith(tool); !slices.Equal(v.IncludedIn[tool], want) {
					t.Errorf("excluded %s included in %q, want %q", tool, v.IncludedIn[tool], want)
				}
			}
		})
	}
}

// TestCheckSessionUnknownProfileNamesValid: a session naming a profile
// the file lacks is told the profiles that exist.
func TestCheckSessionUnknownProfileNamesValid(t *testing.T) {
	snap := snapshot(t)
	v := policy.CheckSession(snap, "s", nil, "gone")
	if want := snap.Resolved.Names(); !slices.Equal(v.Valid, want) || len(want) == 0 {
		t.Errorf("valid profiles %q, want %q", v.Valid, want)
	}
}
