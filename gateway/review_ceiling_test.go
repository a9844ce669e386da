package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
)

// A profile reload that puts a tool outside the ceiling (--max-profile)
// into a profile an open session is served must not let that session list
// or call it: the ceiling holds for sessions opened before the reload too.
// A call that reaches the recorded catalog upstream answers
// upstream_unavailable, so that code here means the call was forwarded.
func TestCeilingHoldsAfterReload(t *testing.T) {
	cat := everythingCatalog()
	// grouped gains test_audio_content, which core (the ceiling) lacks.
	after := strings.Replace(groupedGenerated, `name = "grouped"
tools = ["test_simple_text"]`, `name = "grouped"
tools = ["test_audio_content", "test_simple_text"]`, 1)
	next := writeProfiles(t, cat.Tools, after, "version = 1\n")
	g := newGateway(t, Options{
		Upstream:   NewCatalogUpstream(cat),
		Profiles:   writeProfiles(t, cat.Tools, groupedGenerated, "version = 1\n"),
		MaxProfile: "core",
		Resolve:    func([]*mcp.Tool) (*profiles.Resolved, error) { return next, nil },
	})
	cs := connect(t, g, "grouped")
	if env := callEnvelope(t, cs, "test_audio_content", nil); env.Code != CodeToolNotInProfile {
		t.Fatalf("before the reload: %+v, want tool_not_in_profile", env)
	}
	g.ToolsChanged(context.Background(), "test")
	if env := callEnvelope(t, cs, "test_audio_content", nil); env.Code != CodeToolNotInProfile {
		t.Errorf("after the reload: %+v, want tool_not_in_profile (the tool lies beyond the ceiling core)", env)
	}
	if env := callEnvelope(t, cs, "test_simple_text", nil); env.Code != CodeUpstreamUnavailable {
		t.Errorf("test_simple_text after the reload: %+v, want it forwarded (upstream_unavailable from the recorded catalog)", env)
	}
	if got := listedNames(t, cs); slices.Contains(got, "test_audio_content") {
		t.Errorf("after the reload the session lists %v, want no tool beyond the ceiling", got)
	}
}
