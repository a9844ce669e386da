package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/fakeoauth"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
)

// protected is a real streamable HTTP MCP server (tool "echo") behind the
// fake authorization server, requiring scopes.
type protected struct {
	as     *fakeoauth.Server
	url    string
	store  *oauthstore.Store
	srv    launch.ResolvedServer
	secret string
	// mcp is the server's MCP endpoint without the protection; handler
	// is what the test server serves (the protected endpoint).
	mcp, handler http.Handler
}

func newProtected(t *testing.T, scopes ...string) *protected {
	t.Helper()
	as := fakeoauth.New()
	t.Cleanup(as.Close)
	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(_ context.Context, _ *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil, nil
	})
	p := &protected{as: as, store: oauthstore.Open(filepath.Join(t.TempDir(), "tokens.json")), secret: "pre-registered-secret"}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.handler.ServeHTTP(w, r) }))
	t.Cleanup(ts.Close)
	p.url = ts.URL + "/mcp"
	p.mcp = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	p.handler = as.Protect(p.mcp, p.url, scopes...)
	as.Register("toolprof", p.secret)
	doc := launch.Document{Servers: []launch.Server{{Name: "remote", Transport: launch.StreamableHTTP, URL: p.url, Source: "pack.mcp.json:3",
		OAuth: &launch.OAuth{ClientID: "toolprof", ClientSecret: "${SECRET}"}}}}
	r, err := doc.Resolve(func(string) (string, bool) { return p.secret, true })
	if err != nil {
		t.Fatal(err)
	}
	p.srv = r.Servers[0]
	return p
}

// login stores tokens as a completed login would.
func (p *protected) login(t *testing.T, scopes []string, lifetime time.Duration) oauthstore.Entry {
	t.Helper()
	access, refresh, expiry := p.as.Mint("toolprof", scopes, lifetime)
	e := oauthstore.Entry{Key: ResourceKey(&p.srv), TokenURL: p.as.URL + "/token", ClientID: "toolprof",
		AccessToken: access, RefreshToken: refresh, Expiry: expiry, Scopes: scopes}
	if err := p.store.Put(e); err != nil {
		t.Fatal(err)
	}
	return e
}

func (p *protected) client(t *testing.T, opts Options) *Client {
	t.Helper()
	opts.Tokens = p.store
	opts.Backoff = Backoff{Initial: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	c := NewClient(p.srv, opts)
	t.Cleanup(func() { c.Close() })
	return c
}

func callEcho(c *Client) error {
	_, err := c.CallTool(context.Background(), &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)})
	return err
}

func TestOAuthUsesAndRefreshesTokens(t *testing.T) {
	for _, tt := range []struct {
		name          string
		lifetime      time.Duration
		midSession    func(p *protected)
		wantRefreshes int
	}{
		{"valid token", time.Hour, nil, 0},
		{"expired token refreshed before use", -time.Minute, nil, 1},
		{"token near expiry refreshed before use", oauthstore.RefreshBefore / 2, nil, 1},
		{"token refused mid-session refreshed on the 401", time.Hour, func(p *protected) { p.as.ExpireAccess() }, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProtected(t, "read")
			p.login(t, []string{"read"}, tt.lifetime)
			c := p.client(t, Options{})
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if tt.midSession != nil {
				tt.midSession(p)
			}
			if err := callEcho(c); err != nil {
				t.Fatal(err)
			}
			if n := p.as.Refreshes(); n != tt.wantRefreshes {
				t.Errorf("%d refreshes, want %d", n, tt.wantRefreshes)
			}
			if h := c.Health(); h.State != StateReady {
				t.Errorf("state %s, want ready", h.State)
			}
		})
	}
}

// Without a usable token the server is needs_login, its calls fail with
// an UnauthorizedError naming the login command, nothing is started
// interactively, and no token shows in logs, health or errors. A login
// stored meanwhile is picked up by the next attempt.
func TestOAuthNeedsLogin(t *testing.T) {
	for _, tt := range []struct {
		name   string
		setup  func(t *testing.T, p *protected) []string // the secrets that must not show
		reason string
	}{
		{"no tokens", func(*testing.T, *protected) []string { return nil }, "no tokens stored"},
		{"refresh token revoked", func(t *testing.T, p *protected) []string {
			e := p.login(t, []string{"read"}, -time.Minute)
			p.as.RevokeAll()
			return []string{e.AccessToken, e.RefreshToken}
		}, "rejected the refresh token"},
		{"more scopes asked for", func(t *testing.T, p *protected) []string {
			e := p.login(t, []string{"read"}, time.Hour)
			return []string{e.AccessToken, e.RefreshToken}
		}, "the server asked for more scopes: read write"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProtected(t, "read", "write")
			secrets := append(tt.setup(t, p), p.secret)
			var logs syncbuf.Buffer
			c := p.client(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil)),
				LoginCommand: func(s string) string { return "profiler login --launch pack.mcp.json --server " + s }})
			startErr := c.Start(context.Background())
			var ue *UnauthorizedError
			if !errors.As(startErr, &ue) || !errors.Is(startErr, ErrUnavailable) {
				t.Fatalf("Start: %v, want an UnauthorizedError wrapping ErrUnavailable", startErr)
			}
			h := c.Health()
			if h.State != StateNeedsLogin || !strings.Contains(h.LastError, tt.reason) {
				t.Errorf("health %+v, want needs_login because %q", h, tt.reason)
			}
			callErr := callEcho(c)
			if !errors.As(callErr, &ue) || ue.Login != "profiler login --launch pack.mcp.json --server remote" || !strings.Contains(ue.Reason, tt.reason) {
				t.Errorf("call: %v, want an UnauthorizedError with the login command", callErr)
			}
			if n := p.as.Authorizations(); n != 0 {
				t.Errorf("%d authorization requests: the gateway must not start a login", n)
			}
			if tt.reason == "the server asked for more scopes: read write" {
				e, _, _ := p.store.Get(ResourceKey(&p.srv))
				if !slices.Equal(e.StepUp, []string{"write"}) {
					t.Errorf("stored step-up %v, want [write]", e.StepUp)
				}
			}
			hj, _ := json.Marshal(h)
			out := logs.String() + string(hj) + startErr.Error() + callErr.Error()
			for _, s := range secrets {
				if strings.Contains(out, s) {
					t.Errorf("output holds a secret %q:\n%s", s, out)
				}
			}
			// The user logs in: the next attempt connects.
			p.login(t, []string{"read", "write"}, time.Hour)
			waitFor(t, "ready after login", func() bool { return c.Health().State == StateReady })
			if err := callEcho(c); err != nil {
				t.Errorf("call after login: %v", err)
			}
		})
	}
}

// The refresh token is revoked while the session is open: the next call
// fails with the UnauthorizedError and health says needs_login.
func TestOAuthRevokedMidSession(t *testing.T) {
	p := newProtected(t, "read")
	p.login(t, []string{"read"}, time.Hour)
	c := p.client(t, Options{})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	p.as.RevokeAll()
	var ue *UnauthorizedError
	if err := callEcho(c); !errors.As(err, &ue) {
		t.Fatalf("call: %v, want an UnauthorizedError", err)
	}
	if h := c.Health(); h.State != StateNeedsLogin {
		t.Errorf("state %s, want needs_login", h.State)
	}
}

// With a LoginFlow (profiler login) the Client runs the authorization
// code flow itself and stores the tokens, which a Client without one (the
// gateway) then uses.
func TestOAuthLoginFlow(t *testing.T) {
	for _, tt := range []struct {
		name  string
		oauth *launch.OAuth
	}{
		{"pre-registered client", nil},
		{"dynamic registration", &launch.OAuth{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProtected(t, "read")
			if tt.oauth != nil {
				p.srv.OAuth = &launch.ResolvedOAuth{}
			}
			login := p.client(t, Options{Login: &LoginFlow{RedirectURL: "http://127.0.0.1:1/callback", Fetch: fakeoauth.Approve}})
			if err := login.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			login.Close()
			e, ok, err := p.store.Get(ResourceKey(&p.srv))
			if err != nil || !ok || e.AccessToken == "" || e.RefreshToken == "" {
				t.Fatalf("stored entry %v (ok %v, err %v): want tokens", e, ok, err)
			}
			if (e.ClientSecret != "") != (tt.oauth != nil) {
				t.Errorf("stored client secret %v, want one only for a registered client", e.ClientSecret != "")
			}
			gw := p.client(t, Options{})
			if err := gw.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			if err := callEcho(gw); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A server that answers initialize without a token and refuses tools/list
// without one, as servers do that authorize per method: Login lists the
// tools to be refused, runs the flow and stores tokens, rather than
// returning at the connection with none stored.
func TestLoginWhenInitializeNeedsNoToken(t *testing.T) {
	p := newProtected(t, "read")
	protected := p.handler
	p.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/mcp" {
			protected.ServeHTTP(w, r) // its metadata
			return
		}
		if r.Method != http.MethodPost {
			p.mcp.ServeHTTP(w, r) // the stream a GET opens, a DELETE
			return
		}
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		var m struct{ Method string }
		if json.Unmarshal(body, &m) == nil && (m.Method == "initialize" || strings.HasPrefix(m.Method, "notifications/")) {
			p.mcp.ServeHTTP(w, r)
			return
		}
		protected.ServeHTTP(w, r)
	})
	// The options profiler login passes, no protocol version among them:
	// offered the gateway's all the same, since a 2026-07-28 client opens
	// with server/discover, which such a server refuses.
	opts := Options{Tokens: p.store, ConnectTimeout: 10 * time.Second}
	if err := Login(context.Background(), p.srv, opts, LoginFlow{RedirectURL: "http://127.0.0.1:1/callback", Fetch: fakeoauth.Approve}); err != nil {
		t.Fatal(err)
	}
	e, ok, err := p.store.Get(ResourceKey(&p.srv))
	if err != nil || !ok || !e.Usable(time.Now()) {
		t.Fatalf("stored entry %v (ok %v, err %v): want a usable token", e, ok, err)
	}
	if n := p.as.Authorizations(); n != 1 {
		t.Errorf("%d authorization requests, want 1", n)
	}
	gw := p.client(t, Options{})
	if err := gw.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := callEcho(gw); err != nil {
		t.Errorf("the gateway's call with the stored token: %v", err)
	}
}

// A server that asks for no authorization at all: Login says no tokens
// were stored instead of reporting a login.
func TestLoginServerWithoutAuthorization(t *testing.T) {
	p := newProtected(t, "read")
	p.handler = p.mcp
	opts := Options{Tokens: p.store, ConnectTimeout: 10 * time.Second}
	err := Login(context.Background(), p.srv, opts, LoginFlow{RedirectURL: "http://127.0.0.1:1/callback", Fetch: fakeoauth.Approve})
	if err == nil || !strings.Contains(err.Error(), "no tokens stored") {
		t.Fatalf("Login: %v, want saying no tokens were stored", err)
	}
}

func TestOAuthWithoutStore(t *testing.T) {
	p := newProtected(t, "read")
	c := NewClient(p.srv, Options{})
	defer c.Close()
	if err := c.Start(context.Background()); err == nil || !strings.Contains(err.Error(), "no token store configured") {
		t.Fatalf("Start: %v, want naming the missing token store", err)
	}
}

// TestLoginOffersTheGatewaysVersion: profiler login, whose options name no
// protocol version, offers the server the version the gateway's Clients
// offer (ProtocolVersion), on every request it makes, and so does a Client
// with zero Options; a version set in Options is offered instead.
func TestLoginOffersTheGatewaysVersion(t *testing.T) {
	cases := []struct {
		name    string
		connect func(t *testing.T, p *protected) error
		want    string
	}{
		{"profiler login's options", func(t *testing.T, p *protected) error {
			opts := Options{Tokens: p.store, ConnectTimeout: 10 * time.Second}
			return Login(context.Background(), p.srv, opts, LoginFlow{RedirectURL: "http://127.0.0.1:1/callback", Fetch: fakeoauth.Approve})
		}, ProtocolVersion},
		{"zero Options", func(t *testing.T, p *protected) error {
			p.login(t, []string{"read"}, time.Hour)
			c := p.client(t, Options{})
			if err := c.Start(context.Background()); err != nil {
				return err
			}
			return callEcho(c)
		}, ProtocolVersion},
		{"a version set", func(t *testing.T, p *protected) error {
			p.login(t, []string{"read"}, time.Hour)
			c := p.client(t, Options{ProtocolVersion: "2025-06-18"})
			if err := c.Start(context.Background()); err != nil {
				return err
			}
			return callEcho(c)
		}, "2025-06-18"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			p := newProtected(t, "read")
			protected := p.handler
			var (
				mu   sync.Mutex
				seen = map[string]bool{} // versions offered: initialize's, and MCP-Protocol-Version headers
			)
			p.handler = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				if r.URL.Path == "/mcp" && r.Method == http.MethodPost {
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					var m struct {
						Method string
						Params struct {
							ProtocolVersion string         `json:"protocolVersion"`
							Meta            map[string]any `json:"_meta"`
						}
					}
					mu.Lock()
					if json.Unmarshal(body, &m) == nil && m.Method == "initialize" {
						seen[m.Params.ProtocolVersion] = true
					}
					if v, ok := m.Params.Meta[mcp.MetaKeyProtocolVersion].(string); ok {
						seen[v] = true
					}
					if v := r.Header.Get("MCP-Protocol-Version"); v != "" {
						seen[v] = true
					}
					mu.Unlock()
				}
				protected.ServeHTTP(w, r)
			})
			if err := c.connect(t, p); err != nil {
				t.Fatal(err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(seen) != 1 || !seen[c.want] {
				t.Errorf("versions offered %v, want %q alone", seen, c.want)
			}
		})
	}
}
