package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
)

// A profile that a re-resolution adds after the HTTP handler was built
// (profiles.toml gained it, or a changed listing) is served at /mcp/NAME,
// like the profiles there at start.
func TestHTTPServesProfileAddedLater(t *testing.T) {
	cat := everythingCatalog()
	var policy atomic.Pointer[profiles.Policy]
	resolve := func(tools []*mcp.Tool) (*profiles.Resolved, error) {
		set, err := profiles.Load("testdata/profiles.generated.toml")
		if err != nil {
			return nil, err
		}
		set.Policy = policy.Load()
		return set.Resolve(tools)
	}
	first, err := resolve(cat.Tools)
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: first, Resolve: resolve})
	srv := httptest.NewServer(g.HTTPHandler())
	defer srv.Close()

	policy.Store(&profiles.Policy{Version: 1, Profiles: []profiles.PolicyProfile{{Name: "later", Pin: []string{"test_simple_text"}}}})
	g.ToolsChanged(context.Background(), "test")
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/later", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("connect to /mcp/later: %v", err)
	}
	defer cs.Close()
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Equal(names, []string{"test_simple_text"}) {
		t.Errorf("/mcp/later lists %v, want [test_simple_text]", names)
	}

	// Removed again: its handler exists, but the profile is checked on
	// every request.
	policy.Store(nil)
	g.ToolsChanged(ctx, "test")
	resp, err := http.Post(srv.URL+"/mcp/later", "application/json", strings.NewReader(`{}`))
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusNotFound || !strings.Contains(string(body), `unknown profile "later"`) {
		t.Errorf("/mcp/later once removed: %d %q, want 404 naming it", resp.StatusCode, body)
	}
}
