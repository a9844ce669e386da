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

// Every path refuses a rebound Host (the SDK checks /mcp only) and a
// foreign Origin; loopback origins, listed ones and requests without an
// Origin are served.
func TestHTTPHostAndOrigin(t *testing.T) {
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools),
		HTTP: HTTPOptions{AllowedOrigins: []string{"https://app.example.com", "http://tool.example:8080"}}})
	srv := httptest.NewServer(g.HTTPHandler()) // on 127.0.0.1
	defer srv.Close()

	cases := []struct {
		name, path, host string
		origin           []string
		status           int
	}{
		{"health", "/healthz", "", nil, 200},
		{"health, rebound Host", "/healthz", "evil.example", nil, 403},
		{"health, rebound Host with port", "/healthz", "evil.example:80", nil, 403},
		{"unknown profile, rebound Host", "/mcp/nope", "evil.example", nil, 403},
		{"no profile name, rebound Host", "/mcp/", "evil.example", nil, 403},
		{"mcp, rebound Host", "/mcp", "evil.example", nil, 403},
		{"health, localhost Host", "/healthz", "localhost", nil, 200},
		{"foreign origin", "/healthz", "", []string{"http://evil.example"}, 403},
		{"foreign origin on mcp", "/mcp", "", []string{"http://evil.example"}, 403},
		{"foreign origin, unknown profile", "/mcp/nope", "", []string{"http://evil.example"}, 403},
		{"opaque origin", "/healthz", "", []string{"null"}, 403},
		{"listed host, other scheme", "/healthz", "", []string{"http://app.example.com"}, 403},
		{"listed host as a prefix", "/healthz", "", []string{"https://app.example.com.evil"}, 403},
		{"listed host, other port", "/healthz", "", []string{"http://tool.example:8081"}, 403},
		{"two origins", "/healthz", "", []string{"http://localhost", "http://evil.example"}, 403},
		{"origin with a path", "/healthz", "", []string{"http://localhost/x"}, 403},
		{"localhost origin", "/healthz", "", []string{"http://localhost:3000"}, 200},
		{"loopback IPv4 origin", "/healthz", "", []string{"http://127.0.0.1:9"}, 200},
		{"loopback IPv6 origin", "/healthz", "", []string{"http://[::1]:5"}, 200},
		{"listed origin", "/healthz", "", []string{"https://app.example.com"}, 200},
		{"listed origin, default port and upper case", "/healthz", "", []string{"HTTPS://App.Example.com:443"}, 200},
		{"listed origin with port", "/healthz", "", []string{"http://tool.example:8080"}, 200},
		{"listed origin on mcp", "/mcp", "", []string{"https://app.example.com"}, 200},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+c.path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if c.host != "" {
			req.Host = c.host
		}
		for _, o := range c.origin {
			req.Header.Add("Origin", o)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != c.status {
			t.Errorf("%s: %d %q, want %d", c.name, resp.StatusCode, body, c.status)
		}
		if resp.StatusCode == 403 && strings.Contains(string(body), `"open_sessions"`) {
			t.Errorf("%s: the refusal holds the health report: %q", c.name, body)
		}
	}
}

func TestValidOrigin(t *testing.T) {
	for _, c := range []struct {
		origin string
		ok     bool
	}{
		{"https://app.example.com", true},
		{"http://localhost:3000", true},
		{"vscode-webview://abc", true},
		{"app.example.com", false},
		{"null", false},
		{"https://app.example.com/path", false},
		{"https://user@app.example.com", false},
		{"", false},
	} {
		if err := ValidOrigin(c.origin); (err == nil) != c.ok {
			t.Errorf("ValidOrigin(%q) = %v, want ok %v", c.origin, err, c.ok)
		}
	}
}

// HTTPOptions.MaxBodyBytes is the limit, also above the SDK's default.
func TestHTTPMaxBodyBytes(t *testing.T) {
	cat := everythingCatalog()
	// An initialize padded past the SDK's default limit.
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0","pad":"` +
		strings.Repeat("x", 5_000_000) + `"}}}`
	for _, c := range []struct {
		name  string
		limit int64
		want  int
	}{
		{"default", 0, http.StatusRequestEntityTooLarge},
		{"raised", 8_000_000, http.StatusOK},
	} {
		g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), HTTP: HTTPOptions{MaxBodyBytes: c.limit}})
		srv := httptest.NewServer(g.HTTPHandler())
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/mcp", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		msg, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		srv.Close()
		if resp.StatusCode != c.want {
			t.Errorf("%s limit: %d %.200q, want %d", c.name, resp.StatusCode, msg, c.want)
		}
	}
}
