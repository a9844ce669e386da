package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/fakeoauth"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
	"github.com/toolprof/toolprof/upstream"
)

// unauthorizedFakeUpstream answers every call as upstream.Client does for
// an OAuth server without a usable token (the real case is
// TestUnauthorizedUpstreamEnvelope).
type unauthorizedFakeUpstream struct {
	tools []*mcp.Tool
}

func (u *unauthorizedFakeUpstream) ListTools(context.Context) ([]*mcp.Tool, error) {
	return slices.Clone(u.tools), nil
}

func (u *unauthorizedFakeUpstream) CallTool(context.Context, *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	return nil, &upstream.UnauthorizedError{Server: "fake", Reason: "no tokens stored", Login: "profiler login --launch pack.mcp.json --server fake"}
}

// A real OAuth upstream with no tokens stored: health says needs_login and
// a call gets upstream_unauthorized whose first action is the login
// command.
func TestUnauthorizedUpstreamEnvelope(t *testing.T) {
	as := fakeoauth.New()
	defer as.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer ts.Close()
	h = as.Protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil), ts.URL+"/mcp")
	// A second server without OAuth serves, so the gateway starts.
	open := mcp.NewServer(&mcp.Implementation{Name: "open", Version: "1"}, nil)
	mcp.AddTool(open, &mcp.Tool{Name: "ping"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	ots := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return open }, nil))
	defer ots.Close()
	doc := launch.Document{Servers: []launch.Server{
		{Name: "remote", Transport: launch.StreamableHTTP, URL: ts.URL + "/mcp", Source: "/packs/team.mcp.json:4", OAuth: &launch.OAuth{}},
		{Name: "open", Transport: launch.StreamableHTTP, URL: ots.URL, Source: "/packs/team.mcp.json:5"},
	}}
	r, err := doc.Resolve(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	set, err := upstream.StartSet(context.Background(), r, upstream.SetOptions{Client: upstream.Options{
		Tokens: oauthstore.Open(filepath.Join(t.TempDir(), "tokens.json"))}})
	if err != nil {
		t.Fatal(err)
	}
	defer set.Close()
	g := newGateway(t, Options{Upstream: set})
	env := callEnvelope(t, connect(t, g, FullProfile), "remote__echo", nil)
	const login = "profiler login --launch /packs/team.mcp.json --server remote"
	if env.Code != CodeUpstreamUnauthorized || !env.Retryable || len(env.SuggestedActions) == 0 || env.SuggestedActions[0] != login {
		t.Errorf("envelope %+v, want %s suggesting %q", env, CodeUpstreamUnauthorized, login)
	}
	hj, _ := json.Marshal(g.Health())
	if !strings.Contains(string(hj), `"state":"needs_login"`) {
		t.Errorf("health %s, want the upstream needs_login", hj)
	}
}
