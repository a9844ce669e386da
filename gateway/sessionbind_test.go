package gateway

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/tokens"
)

// callSimpleText is a raw tools/call of a tool of every test profile, on
// a protocol session; callSimpleTextSessionless is the same at 2026-07-28.
const (
	callSimpleText            = `{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`
	callSimpleTextSessionless = `{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"test_simple_text","arguments":{},"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"` + protocolSessionless + `",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw-client","version":"1"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}`
)

// sessionRequest sends method to url with the Mcp-Session-Id session (none
// when ""), the bearer token (none when "") and Mcp-Protocol-Version
// protocol, and returns the status and body. A GET answered 200 is a
// standing event stream: its body is not read.
func sessionRequest(t *testing.T, method, url, session, token, protocol, body string) (int, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Accept", "application/json, text/event-stream")
	if method == http.MethodPost {
		req.Header.Set("Content-Type", "application/json")
	}
	if method == http.MethodGet {
		req.Header.Set("Accept", "text/event-stream")
	}
	req.Header.Set("Mcp-Protocol-Version", protocol)
	if protocol >= protocolSessionless && method == http.MethodPost {
		req.Header.Set("Mcp-Method", "tools/call") // the only 2026-07-28 request sent here
		req.Header.Set("Mcp-Name", "test_simple_text")
	}
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	if method == http.MethodGet && resp.StatusCode == http.StatusOK {
		return resp.StatusCode, ""
	}
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// bindGateway serves a gateway over a recording fake upstream of the
// everything catalog, with src as its tokens file (nil: none), exploring
// every request that may be.
func bindGateway(t *testing.T, src *tokens.Source) (*httptest.Server, *recordingFakeUpstream) {
	t.Helper()
	cat := everythingCatalog()
	up := &recordingFakeUpstream{tools: cat.Tools}
	opts := Options{Upstream: up, Profiles: testProfiles(t, cat.Tools), Explore: 1}
	if src != nil {
		opts.HTTP.Tokens = src
	}
	g := newGateway(t, opts)
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close) // after the clients' Close, registered later
	return srv, up
}

// A 2025-11-25 session is bound to the token that opened it: a request on
// its Mcp-Session-Id with another token (one bound to nothing, or one
// naming the same profile the path serves, so that it reaches the same
// handler) is answered 403 as the SDK answers a session of another user,
// on POST, GET and DELETE; the call is not forwarded and the owner's
// session, explored under its token, goes on. The same token is served.
func TestSessionBoundToItsToken(t *testing.T) {
	src := tokensFile(t, tokenLines("owner")+tokenLines("other")+tokenLines("core-only", `profile = "core"`))
	srv, up := bindGateway(t, src)
	owner := httpClient(t, srv.URL+"/mcp", "owner", "owner", legacyProtocol)
	id := owner.ID()
	if id == "" {
		t.Fatal("the owner's session has no Mcp-Session-Id")
	}
	listed := len(listedNames(t, owner))
	tests := []struct {
		name, method, token, body string
		want                      int
	}{
		{"same token POST", http.MethodPost, "owner", callSimpleText, http.StatusOK},
		{"other token POST", http.MethodPost, "other", callSimpleText, http.StatusForbidden},
		{"profile-only token POST", http.MethodPost, "core-only", callSimpleText, http.StatusForbidden},
		{"other token GET", http.MethodGet, "other", "", http.StatusForbidden},
		{"profile-only token GET", http.MethodGet, "core-only", "", http.StatusForbidden},
		{"other token DELETE", http.MethodDelete, "other", "", http.StatusForbidden},
		{"profile-only token DELETE", http.MethodDelete, "core-only", "", http.StatusForbidden},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := len(up.forwarded())
			status, body := sessionRequest(t, tt.method, srv.URL+"/mcp", id, tt.token, legacyProtocol, tt.body)
			if status != tt.want {
				t.Fatalf("status %d (%q), want %d", status, body, tt.want)
			}
			wantForwarded := 0
			if tt.want == http.StatusOK {
				wantForwarded = 1
			} else if !strings.Contains(body, "session user mismatch") {
				t.Errorf("body %q, want the SDK's session user mismatch", body)
			}
			if got := len(up.forwarded()) - before; got != wantForwarded {
				t.Errorf("%d calls reached the upstream, want %d", got, wantForwarded)
			}
			if env := callEnvelope(t, owner, "test_simple_text", nil); env.Code != "" {
				t.Errorf("the owner's call after it: %+v", env)
			}
			if n := len(listedNames(t, owner)); n != listed {
				t.Errorf("the owner's session lists %d tools, want the %d it listed before", n, listed)
			}
		})
	}
}

// A session whose token the tokens file no longer holds serves no one:
// its own token is 401, as on any request, and another token still in
// the file is 403 on its session ID; neither call is forwarded.
func TestSessionOfRemovedTokenRefused(t *testing.T) {
	src := tokensFile(t, tokenLines("owner")+tokenLines("other"))
	srv, up := bindGateway(t, src)
	owner := httpClient(t, srv.URL+"/mcp", "owner", "owner", legacyProtocol)
	if env := callEnvelope(t, owner, "test_simple_text", nil); env.Code != "" {
		t.Fatalf("the owner's call: %+v", env)
	}
	if err := os.WriteFile(src.Health().File, []byte(tokenLines("other")), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := src.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, ok := src.Lookup("owner"); ok {
		t.Fatal("the owner's token is still in the tokens file")
	}
	before := len(up.forwarded())
	for _, tt := range []struct {
		token string
		want  int
	}{{"owner", http.StatusUnauthorized}, {"other", http.StatusForbidden}} {
		for _, method := range []string{http.MethodPost, http.MethodGet, http.MethodDelete} {
			if status, body := sessionRequest(t, method, srv.URL+"/mcp", owner.ID(), tt.token, legacyProtocol, callSimpleText); status != tt.want {
				t.Errorf("%s with token %s on the removed token's session: %d (%q), want %d", method, tt.token, status, body, tt.want)
			}
		}
	}
	if got := len(up.forwarded()) - before; got != 0 {
		t.Errorf("%d calls reached the upstream after the token's removal, want 0", got)
	}
}

// Without a tokens file no credential binds a session: a request on its
// ID is served whatever Authorization it carries, as before.
func TestSessionWithoutTokensUnbound(t *testing.T) {
	srv, up := bindGateway(t, nil)
	owner := httpClient(t, srv.URL+"/mcp", "owner", "", legacyProtocol)
	for _, token := range []string{"", "anything", "else"} {
		before := len(up.forwarded())
		if status, body := sessionRequest(t, http.MethodPost, srv.URL+"/mcp", owner.ID(), token, legacyProtocol, callSimpleText); status != http.StatusOK {
			t.Errorf("token %q: %d (%q), want 200", token, status, body)
		}
		if got := len(up.forwarded()) - before; got != 1 {
			t.Errorf("token %q: %d calls forwarded, want 1", token, got)
		}
	}
	if env := callEnvelope(t, owner, "test_simple_text", nil); env.Code != "" {
		t.Errorf("the owner's call: %+v", env)
	}
}

// 2026-07-28 has no sessions to bind: a request with another token than
// a 2025-11-25 session's, carrying that session's Mcp-Session-Id, is
// served statelessly under its own token.
func TestSessionlessUnbound(t *testing.T) {
	src := tokensFile(t, tokenLines("owner")+tokenLines("other"))
	srv, up := bindGateway(t, src)
	owner := httpClient(t, srv.URL+"/mcp", "owner", "owner", legacyProtocol)
	for _, session := range []string{"", owner.ID()} {
		for _, token := range []string{"owner", "other"} {
			before := len(up.forwarded())
			status, body := sessionRequest(t, http.MethodPost, srv.URL+"/mcp", session, token, protocolSessionless, callSimpleTextSessionless)
			if status != http.StatusOK || strings.Contains(body, `"error"`) {
				t.Errorf("token %s, session %q: %d (%q), want it served", token, session, status, body)
			}
			if got := len(up.forwarded()) - before; got != 1 {
				t.Errorf("token %s, session %q: %d calls forwarded, want 1", token, session, got)
			}
		}
	}
	if env := callEnvelope(t, owner, "test_simple_text", nil); env.Code != "" {
		t.Errorf("the owner's call: %+v", env)
	}
}

// The gateway reads an Authorization header as the SDK's auth middleware
// does (bindSessions): the scheme and one token. A header with more is
// refused 401 over either protocol, even when the tokens file holds the
// words it carries, and is never served.
func TestBearerTokenWithSpacesRefused(t *testing.T) {
	src := tokensFile(t, tokenLines("two words"))
	srv, up := bindGateway(t, src)
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct{ protocol, body string }{{legacyProtocol, init}, {protocolSessionless, callSimpleTextSessionless}} {
		status, body := sessionRequest(t, http.MethodPost, srv.URL+"/mcp", "", "two words", tt.protocol, tt.body)
		if status != http.StatusUnauthorized || !strings.Contains(body, "malformed Authorization header") {
			t.Errorf("%s: %d %q, want 401 malformed Authorization header", tt.protocol, status, body)
		}
	}
	if n := len(up.forwarded()); n != 0 {
		t.Errorf("%d calls forwarded, want 0", n)
	}
}
