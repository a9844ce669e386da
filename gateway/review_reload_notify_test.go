package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
)

// A profile reload that changes what a session lists while the upstream's
// tools stay the same sends the session notifications/tools/list_changed,
// as a change of the upstream's tools does; a re-resolution that changes
// nothing served sends none.
func TestProfileReloadNotifiesSessions(t *testing.T) {
	cat := everythingCatalog()
	before := writeProfiles(t, cat.Tools, groupedGenerated, "version = 1\n")
	after := writeProfiles(t, cat.Tools, strings.Replace(groupedGenerated, `name = "grouped"
tools = ["test_simple_text"]`, `name = "grouped"
tools = ["test_audio_content", "test_simple_text"]`, 1), "version = 1\n")
	next := before
	g := newGateway(t, Options{
		Upstream: NewCatalogUpstream(cat),
		Profiles: before,
		Resolve:  func([]*mcp.Tool) (*profiles.Resolved, error) { return next, nil },
	})
	ch := newChanges()
	cs := connectProtocol(t, g, "grouped", "2025-11-25", ch.options())
	listedNames(t, cs)
	// Same tools, same profiles: nothing to announce.
	g.ToolsChanged(context.Background(), "test")
	if got := listedNames(t, cs); slices.Contains(got, "test_audio_content") {
		t.Fatalf("before the reload: %v", got)
	}
	if n := ch.count(); n != 0 {
		t.Errorf("an unchanged re-resolution sent %d list_changed, want 0", n)
	}
	next = after
	g.ToolsChanged(context.Background(), "test")
	ch.wait(t)
	if got := listedNames(t, cs); !slices.Contains(got, "test_audio_content") {
		t.Errorf("after the reload: %v, want test_audio_content listed", got)
	}
}
