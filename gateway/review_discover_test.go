package gateway

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
)

// A 2026-07-28 session may send server/discover at any time. When a
// profile reload has removed the profile the session is served, the answer
// must still come (with no profile instructions) rather than the gateway
// panicking on the missing profile, which took the whole process down.
func TestDiscoverAfterProfileRemoved(t *testing.T) {
	cat := everythingCatalog()
	// The reload drops profile "grouped" (core becomes the default).
	after := strings.Replace(strings.Replace(groupedGenerated, `default = "grouped"`, `default = "core"`, 1),
		`[[profile]]
name = "grouped"
tools = ["test_simple_text"]
groups = ["media", "errors"]
`, "", 1)
	next := writeProfiles(t, cat.Tools, after, "version = 1\n")
	if _, ok := next.Profiles["grouped"]; ok {
		t.Fatal("the reloaded profiles still hold grouped")
	}
	g := newGateway(t, Options{
		Upstream: NewCatalogUpstream(cat),
		Profiles: writeProfiles(t, cat.Tools, groupedGenerated, "version = 1\n"),
		Resolve:  func([]*mcp.Tool) (*profiles.Resolved, error) { return next, nil },
	})
	s, err := g.Server("grouped")
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	conn, err := ct.Connect(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	meta := `"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientInfo":{"name":"raw","version":"0"},"io.modelcontextprotocol/clientCapabilities":{}}`
	ask := func(id int, method string) *jsonrpc.Response {
		t.Helper()
		msg, err := jsonrpc.DecodeMessage([]byte(`{"jsonrpc":"2.0","id":` + string(rune('0'+id)) + `,"method":"` + method + `","params":{` + meta + `}}`))
		if err != nil {
			t.Fatal(err)
		}
		if err := conn.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
		for {
			in, err := conn.Read(ctx)
			if err != nil {
				t.Fatalf("%s: %v", method, err)
			}
			if r, ok := in.(*jsonrpc.Response); ok {
				return r
			}
		}
	}
	if r := ask(1, "server/discover"); r.Error != nil {
		t.Fatalf("discover before the reload: %v", r.Error)
	}
	g.ToolsChanged(ctx, "test")
	r := ask(2, "server/discover")
	if r.Error != nil {
		t.Fatalf("discover after the reload: %v", r.Error)
	}
	if !strings.Contains(string(r.Result), `"supportedVersions"`) {
		t.Errorf("discover after the reload: %s, want a discover result", r.Result)
	}
	// The removed profile's tools are no longer callable.
	if r := ask(3, "tools/list"); r.Error != nil || strings.Contains(string(r.Result), "test_simple_text") {
		t.Errorf("tools/list after the reload: %s %v, want no tools of the removed profile", r.Result, r.Error)
	}
}
