package gateway

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
)

// profiler check predicts what the gateway does with enable_tools under a
// ceiling: a group reaching beyond it is refused whole (group_not_allowed),
// so a tool it would add stays out (tool_not_in_profile) and check calls
// the session excluded; a group within it is switched on and its tool runs.
func TestCheckAgreesOnGroupsBeyondTheCeiling(t *testing.T) {
	opts := groupCeilingOptions(t)
	g := newGateway(t, opts)
	cat := everythingCatalog()
	snap := &policy.Snapshot{Resolved: opts.Profiles, Tools: map[string]*mcp.Tool{}, Ceiling: opts.MaxProfile}
	for _, tl := range cat.Tools {
		snap.Tools[tl.Name] = tl
	}
	for _, tc := range []struct {
		group, tool string
		// Of the enable_tools call ("" switched on) and the tool's: the
		// recorded catalog answers every call it is forwarded with
		// upstream_unavailable.
		codes [2]string
	}{
		{"media", "test_image_content", [2]string{CodeGroupNotAllowed, CodeToolNotInProfile}},
		{"errors", "test_error_handling", [2]string{"", CodeUpstreamUnavailable}},
	} {
		t.Run(tc.group, func(t *testing.T) {
			cs := connect(t, g, "grouped")
			args := map[string]any{"group": tc.group}
			if code := callEnvelope(t, cs, profiles.EnableToolsName, args).Code; code != tc.codes[0] {
				t.Fatalf("enable_tools %v: code %q, want %q", args, code, tc.codes[0])
			}
			if code := callEnvelope(t, cs, tc.tool, nil).Code; code != tc.codes[1] {
				t.Fatalf("%s: code %q, want %q", tc.tool, code, tc.codes[1])
			}
			raw, _ := json.Marshal(args)
			v := policy.CheckSession(snap, "s", []policy.Call{{Tool: profiles.EnableToolsName, Arguments: raw}, {Tool: tc.tool}}, "grouped")
			if forwarded := tc.codes[1] == CodeUpstreamUnavailable; (v.Status == policy.VerdictCovered) != forwarded {
				t.Errorf("check says %s (%s); the gateway forwarded %s: %v", v.Status, v.Detail(), tc.tool, forwarded)
			}
		})
	}
}
