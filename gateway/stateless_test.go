package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/tokens"
)

// bearerTransport adds an Authorization header to every request.
type bearerTransport struct{ token string }

func (b bearerTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}

// httpClient connects a go-sdk client named name to url at protocol
// (""; the SDK's latest), sending token when it is not "".
func httpClient(t *testing.T, url, name, token, protocol string) *mcp.ClientSession {
	t.Helper()
	tr := &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}
	if token != "" {
		tr.HTTPClient = &http.Client{Transport: bearerTransport{token}}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).
		Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect %s: %v", url, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// listAll pages through tools/list from StartCursor and returns the names
// in order and the last page's cache scope.
func listAll(t *testing.T, cs *mcp.ClientSession) ([]string, string) {
	t.Helper()
	var names []string
	cursor, scope := StartCursor, ""
	for cursor != "" {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		cursor, scope = res.NextCursor, res.CacheScope
	}
	return names, scope
}

// TestProtocolGenerationsOverHTTP: one endpoint serves 2026-07-28
// statelessly (usage sessions) and 2025-11-25 with a protocol session.
func TestProtocolGenerationsOverHTTP(t *testing.T) {
	for _, tt := range []struct {
		protocol    string
		attribution telemetry.Attribution
		open        int // protocol sessions open while connected
	}{
		{"2026-07-28", telemetry.AttributionCaller, 0},
		{"2025-11-25", telemetry.AttributionConnection, 1},
	} {
		t.Run(tt.protocol, func(t *testing.T) {
			cat := everythingCatalog()
			rec, read := recorder(t)
			g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), PageSize: 3, Recorder: rec})
			srv := httptest.NewServer(g.HTTPHandler())
			t.Cleanup(srv.Close)
			cs := httpClient(t, srv.URL+"/mcp/standard", "gen-client", "", tt.protocol)
			if got := cs.InitializeResult().ProtocolVersion; got != tt.protocol {
				t.Fatalf("negotiated %s, want %s", got, tt.protocol)
			}
			names, _ := listAll(t, cs)
			if len(names) != 8 || !slices.IsSorted(names) {
				t.Errorf("paged listing %v: want standard's 8 tools in name order", names)
			}
			for range 2 {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: names[0], Arguments: map[string]any{}}); err != nil {
					t.Fatal(err)
				}
			}
			if n := g.Health().OpenSessions; n != tt.open {
				t.Errorf("%d protocol sessions open, want %d", n, tt.open)
			}
			cs.Close()
			g.Close()
			sessions, calls := read()
			if len(sessions) != 1 || sessions[0].Attribution != tt.attribution || sessions[0].ClientName != "gen-client" ||
				sessions[0].ProtocolVersion != tt.protocol || sessions[0].End.IsZero() {
				t.Fatalf("sessions %+v: want one ended %q session of gen-client", sessions, tt.attribution.Name())
			}
			if len(calls) != 2 || calls[0].Session != sessions[0].ID || calls[1].Session != sessions[0].ID || calls[1].Seq != 2 {
				t.Errorf("calls %+v: want 2 in session %s", calls, sessions[0].ID)
			}
		})
	}
}

// TestSessionlessListingIsStable: under --explore a 2026-07-28 caller is
// listed the same tools on every connection (the pick hashes its client
// name and the day), while callers differ from one another.
func TestSessionlessListingIsStable(t *testing.T) {
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), Explore: 0.5})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	sizes := map[int]bool{}
	for i := range 12 {
		name := fmt.Sprintf("caller-%d", i)
		first, scope := listAll(t, httpClient(t, srv.URL+"/mcp/core", name, "", ""))
		if scope != "private" {
			t.Errorf("cacheScope %q under --explore, want private", scope)
		}
		for range 4 {
			if again, _ := listAll(t, httpClient(t, srv.URL+"/mcp/core", name, "", "")); !slices.Equal(again, first) {
				t.Fatalf("%s listed %d tools, then %d", name, len(first), len(again))
			}
		}
		sizes[len(first)] = true
	}
	if len(sizes) != 2 {
		t.Errorf("listing sizes %v across 12 callers at rate 0.5: want both core and the exploration profile", sizes)
	}
}

// TestSessionlessNoEnableTools: enable_tools would change a 2026-07-28
// caller's list as a side effect, so it is neither listed nor callable;
// a 2025-11-25 session keeps it.
func TestSessionlessNoEnableTools(t *testing.T) {
	g := groupedGateway(t, "", Options{})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	for _, tt := range []struct {
		protocol string
		offered  bool
	}{{"2026-07-28", false}, {"2025-11-25", true}} {
		cs := httpClient(t, srv.URL+"/mcp/grouped", "g", "", tt.protocol)
		names, _ := listAll(t, cs)
		if got := slices.Contains(names, profiles.EnableToolsName); got != tt.offered {
			t.Errorf("%s: enable_tools listed %v, want %v", tt.protocol, got, tt.offered)
		}
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: profiles.EnableToolsName, Arguments: map[string]any{"group": "errors"}})
		if (err == nil) != tt.offered {
			t.Errorf("%s: calling enable_tools: %v", tt.protocol, err)
		}
	}
}

// TestTraceparentAttribution: calls carrying one trace id form one usage
// session whatever connection they come on; without one they are grouped
// by caller until the idle gap.
func TestTraceparentAttribution(t *testing.T) {
	cat := everythingCatalog()
	rec, read := recorder(t)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Recorder: rec})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	call := func(cs *mcp.ClientSession, trace string) {
		t.Helper()
		p := &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}}
		if trace != "" {
			p.Meta = mcp.Meta{"traceparent": "00-" + trace + "-00f067aa0ba902b7-01"}
		}
		if _, err := cs.CallTool(context.Background(), p); err != nil {
			t.Fatal(err)
		}
	}
	traceA, traceB := strings.Repeat("a", 32), strings.Repeat("b", 32)
	for range 3 {
		call(httpClient(t, srv.URL+"/mcp", "agent", "", ""), traceA)
	}
	call(httpClient(t, srv.URL+"/mcp", "agent", "", ""), traceB)
	call(httpClient(t, srv.URL+"/mcp", "agent", "", ""), "")
	call(httpClient(t, srv.URL+"/mcp", "agent", "", ""), "")
	call(httpClient(t, srv.URL+"/mcp", "agent", "", ""), strings.Repeat("0", 32)) // invalid: by caller
	g.Close()
	sessions, calls := read()
	per := map[string]int{}
	for _, c := range calls {
		per[c.Session]++
	}
	got := map[string]int{}
	for _, s := range sessions {
		got[fmt.Sprintf("%s:%d", s.Attribution.Name(), per[s.ID])]++
	}
	want := map[string]int{"trace:3": 1, "trace:1": 1, "caller:3": 1}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("sessions by rule and calls %v, want %v", got, want)
	}
}

// TestUsageIdleGap: a caller's calls further apart than the gap are two
// usage sessions.
func TestUsageIdleGap(t *testing.T) {
	for _, tt := range []struct {
		gap  int64 // nanoseconds
		want int
	}{{1, 2}, {0, 1}} {
		cat := everythingCatalog()
		rec, read := recorder(t)
		g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Recorder: rec, UsageIdleGap: durationNS(tt.gap)})
		srv := httptest.NewServer(g.HTTPHandler())
		cs := httpClient(t, srv.URL+"/mcp", "agent", "", "")
		for range 2 {
			cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
		}
		cs.Close()
		srv.Close()
		g.Close()
		if sessions, _ := read(); len(sessions) != tt.want {
			t.Errorf("gap %dns: %d sessions, want %d", tt.gap, len(sessions), tt.want)
		}
	}
}

// rawPost posts body to url with headers and returns status and body.
func rawPost(t *testing.T, url, body string, header map[string]string) (int, string) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b)
}

// TestProtocolHeaderMismatch: a request whose header and body protocol
// versions disagree is answered -32020, as the SDK does, and counted.
func TestProtocolHeaderMismatch(t *testing.T) {
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat)})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	body := func(v string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	var refused int64
	for _, tt := range []struct {
		name, header, body string
		status             int
		want               string
	}{
		{"disagree", "2025-11-25", body("2026-07-28"), 400, `"code":-32020`},
		{"disagree newer header", "2026-07-28", body("2025-11-25"), 400, `does not match`},
		{"no header", "", body("2026-07-28"), 400, `header is required`},
		// Read as the SDK reads them: "ID" is not the id, "Params" not
		// the params.
		{"disagree, an ID member", "2025-11-25", strings.Replace(body("2026-07-28"), `"id":7`, `"id":7,"ID":9`, 1), 400, `"code":-32020`},
		{"disagree, a Params member after", "2025-11-25", strings.TrimSuffix(body("2026-07-28"), "}") + `,"Params":{}}`, 400, `"code":-32020`},
		{"agree", "2026-07-28", body("2026-07-28"), 200, `"tools"`},
	} {
		h := map[string]string{"Mcp-Method": "tools/list"}
		if tt.header != "" {
			h[protocolHeader] = tt.header
		}
		status, got := rawPost(t, srv.URL+"/mcp", tt.body, h)
		if status != tt.status || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %d %s, want %d with %s", tt.name, status, got, tt.status, tt.want)
		}
		if tt.status == 400 && !strings.Contains(got, `"id":7`) {
			t.Errorf("%s: answer %s does not carry the request id", tt.name, got)
		}
		if tt.status == 400 {
			refused++
		}
		if n := g.Health().Refused.HeaderMismatch; n != refused {
			t.Errorf("%s: %d refusals counted", tt.name, n)
		}
	}
}

// tokensFile writes a tokens file and opens it checked against g.
func tokensFile(t *testing.T, src string) *tokens.Source {
	t.Helper()
	path := filepath.Join(t.TempDir(), "tokens.toml")
	if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	s, err := tokens.Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestCredentialProfiles: one URL serves each token its bound profile,
// a token narrows a path and never widens it, and a missing or unknown
// token is 401, never the default profile.
func TestCredentialProfiles(t *testing.T) {
	cat := everythingCatalog()
	src := tokensFile(t, fmt.Sprintf(`
[[token]]
name = "core-team"
sha256 = %q
profile = "core"

[[token]]
name = "plain"
sha256 = %q

[[token]]
name = "capped"
sha256 = %q
ceiling = "core"
`, tokens.HashToken("core-token"), tokens.HashToken("plain-token"), tokens.HashToken("capped-token")))
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), HTTP: HTTPOptions{Tokens: src}})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	core := g.cat().listed["core"]
	standard := g.cat().listed["standard"]
	for _, tt := range []struct {
		name, path, token string
		want              []string
		scope             string
	}{
		{"bound profile on /mcp", "/mcp", "core-token", core, "private"},
		{"bound profile within the path", "/mcp/standard", "core-token", core, "private"},
		{"unbound token: the path's", "/mcp/standard", "plain-token", standard, "public"},
		{"unbound token: the default", "/mcp", "plain-token", g.cat().listed[g.Default()], "public"},
		{"ceiling allows", "/mcp/core", "capped-token", core, "private"},
	} {
		for _, protocol := range []string{"", "2025-11-25"} {
			names, scope := listAll(t, httpClient(t, srv.URL+tt.path, "c", tt.token, protocol))
			if !slices.Equal(names, tt.want) {
				t.Errorf("%s (%q): listed %v, want %v", tt.name, protocol, names, tt.want)
			}
			if protocol == "" && scope != tt.scope {
				t.Errorf("%s: cacheScope %q, want %q", tt.name, scope, tt.scope)
			}
		}
	}
	init := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"x","version":"1"}}}`
	for _, tt := range []struct {
		name, path, auth string
		status           int
		want             string
	}{
		{"no token", "/mcp", "", 401, "missing bearer token"},
		{"unknown token", "/mcp", "Bearer guessed", 401, "invalid bearer token"},
		{"the hash as token", "/mcp", "Bearer " + tokens.HashToken("core-token"), 401, "invalid bearer token"},
		{"health too", "/healthz", "", 401, "missing bearer token"},
		{"beyond the token's ceiling", "/mcp/standard", "Bearer capped-token", 403, `outside this token's ceiling "core"`},
		{"bound profile wider than the path", "/mcp/core", "Bearer core-token", 200, ""},
	} {
		h := map[string]string{}
		if tt.auth != "" {
			h["Authorization"] = tt.auth
		}
		status, got := rawPost(t, srv.URL+tt.path, init, h)
		if status != tt.status || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %d %q, want %d with %q", tt.name, status, got, tt.status, tt.want)
		}
	}
	if n := g.Health().Refused.UnknownToken; n != 4 {
		t.Errorf("%d unknown-token refusals counted, want 4", n)
	}
	var h Health
	req, _ := http.NewRequest(http.MethodGet, srv.URL+"/healthz", nil)
	req.Header.Set("Authorization", "Bearer plain-token")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil || h.Tokens == nil || h.Tokens.Tokens != 3 {
		t.Errorf("health tokens %+v (%v)", h.Tokens, err)
	}
}

// TestCheckCredential: entries that could never be served are refused
// when the tokens file is loaded.
func TestCheckCredential(t *testing.T) {
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), MaxProfile: "standard"})
	for _, tt := range []struct {
		e    tokens.Entry
		want string
	}{
		{tokens.Entry{Profile: "core", Ceiling: "standard"}, ""},
		{tokens.Entry{Profile: "nope"}, `profile "nope": no such profile`},
		{tokens.Entry{Ceiling: "nope"}, `ceiling "nope": no such profile`},
		{tokens.Entry{Profile: "full"}, `ceiling profile "standard"`},
		{tokens.Entry{Profile: "standard", Ceiling: "core"}, `outside its ceiling "core"`},
	} {
		err := g.CheckCredential(tt.e)
		if (tt.want == "") != (err == nil) || (err != nil && !strings.Contains(err.Error(), tt.want)) {
			t.Errorf("%+v: %v, want %q", tt.e, err, tt.want)
		}
	}
}

func durationNS(n int64) time.Duration { return time.Duration(n) }

// connectAs connects a client named name speaking protocol to g's server
// for profile over an in-memory transport (Server's path, as stdio).
func connectAs(t *testing.T, g *Gateway, profile, name, protocol string) *mcp.ClientSession {
	t.Helper()
	s, err := g.Server(profile)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	if got := cs.InitializeResult().ProtocolVersion; got != protocol {
		t.Fatalf("negotiated %s, want %s", got, protocol)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// TestStdioSessionlessRules: over stdio (Server's transports) a
// 2026-07-28 client is listed, refused enable_tools and explored as over
// HTTP, by the request's protocol; a 2025-11-25 session keeps its groups.
func TestStdioSessionlessRules(t *testing.T) {
	g := groupedGateway(t, "", Options{})
	for _, tt := range []struct {
		protocol string
		enable   bool
	}{{"2026-07-28", false}, {"2025-11-25", true}} {
		t.Run(tt.protocol, func(t *testing.T) {
			cs := connectAs(t, g, "grouped", "stdio-agent", tt.protocol)
			if got := slices.Contains(listedNames(t, cs), "enable_tools"); got != tt.enable {
				t.Errorf("enable_tools listed %v, want %v", got, tt.enable)
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "enable_tools", Arguments: map[string]any{"group": "media"}})
			switch {
			case tt.enable && (err != nil || res.IsError):
				t.Errorf("enable_tools: %v %+v, want media switched on", err, res)
			case !tt.enable && (err == nil || !strings.Contains(err.Error(), "unknown tool")):
				t.Errorf("enable_tools: %v %+v, want unknown tool", err, res)
			}
			if tt.enable {
				return
			}
			// Naming an earlier version in _meta, or none the SDK reads,
			// does not reach the session rules on a 2026-07-28 connection.
			for _, v := range []any{"2025-11-25", 0} {
				_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "enable_tools", Arguments: map[string]any{"group": "errors"},
					Meta: mcp.Meta{mcp.MetaKeyProtocolVersion: v}})
				if err == nil || !strings.Contains(err.Error(), "unknown tool") {
					t.Errorf("enable_tools with _meta version %v: %v, want unknown tool", v, err)
				}
			}
		})
	}
}

// TestStdioSessionlessListingIsStable: under --explore a 2026-07-28 stdio
// client is listed the same tools on every connection (client name and
// UTC day), and callers differ.
func TestStdioSessionlessListingIsStable(t *testing.T) {
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), Explore: 0.5})
	sizes := map[int]bool{}
	for i := range 12 {
		name := fmt.Sprintf("stdio-caller-%d", i)
		first, scope := listAll(t, connectAs(t, g, "core", name, "2026-07-28"))
		if scope != "private" {
			t.Errorf("cacheScope %q under --explore, want private", scope)
		}
		for range 4 {
			if again, _ := listAll(t, connectAs(t, g, "core", name, "2026-07-28")); !slices.Equal(again, first) {
				t.Fatalf("%s listed %d tools, then %d", name, len(first), len(again))
			}
		}
		sizes[len(first)] = true
	}
	if len(sizes) != 2 {
		t.Errorf("listing sizes %v across 12 callers at rate 0.5: want both core and the exploration profile", sizes)
	}
}

// TestStdioUsageSessions: a 2026-07-28 stdio client's calls are grouped
// into usage sessions (by traceparent, else by client name) recorded with
// transport stdio, not one per connection; 2025-11-25 connections are
// sessions of their own.
func TestStdioUsageSessions(t *testing.T) {
	for _, tt := range []struct {
		protocol string
		want     map[string]int // sessions by "rule:calls"
	}{
		{"2026-07-28", map[string]int{"trace:3": 1, "trace:1": 1, "caller:2": 1}},
		{"2025-11-25", map[string]int{"connection:1": 6}},
	} {
		t.Run(tt.protocol, func(t *testing.T) {
			cat := everythingCatalog()
			rec, read := recorder(t)
			g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Recorder: rec})
			call := func(trace string) {
				t.Helper()
				p := &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}}
				if trace != "" {
					p.Meta = mcp.Meta{"traceparent": "00-" + trace + "-00f067aa0ba902b7-01"}
				}
				cs := connectAs(t, g, "", "stdio-agent", tt.protocol)
				cs.CallTool(context.Background(), p) // a recorded catalog cannot run it: recorded all the same
				cs.Close()
			}
			for range 3 {
				call(strings.Repeat("a", 32))
			}
			call(strings.Repeat("b", 32))
			call("")
			call("")
			g.Close()
			sessions, calls := read()
			per := map[string]int{}
			for _, c := range calls {
				per[c.Session]++
			}
			got := map[string]int{}
			for _, s := range sessions {
				got[fmt.Sprintf("%s:%d", s.Attribution.Name(), per[s.ID])]++
				if s.Transport != telemetry.TransportStdio || s.ClientName != "stdio-agent" || s.ProtocolVersion != tt.protocol || s.End.IsZero() {
					t.Errorf("session %+v: want an ended stdio session of stdio-agent at %s", s, tt.protocol)
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("sessions by rule and calls %v, want %v", got, tt.want)
			}
		})
	}
}

// TestSessionlessRequestWithoutParams: a 2026-07-28 session's request
// without params (a ping: the SDK hands the middleware a nil pointer) is
// answered, not a crash of the gateway.
func TestSessionlessRequestWithoutParams(t *testing.T) {
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools)})
	cs := connectSession(t, g, "", nil, &mcp.ClientSessionOptions{ProtocolVersion: protocolSessionless})
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatalf("ping: %v", err)
	}
}
