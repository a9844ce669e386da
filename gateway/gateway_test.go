package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// everythingCatalog is a recorded catalog with the everything-server's tool
// names.
func everythingCatalog() *catalog.Catalog {
	c := &catalog.Catalog{}
	for _, n := range testupstream.EverythingTools {
		c.Tools = append(c.Tools, &mcp.Tool{Name: n, Description: "recorded " + n, InputSchema: map[string]any{"type": "object"}})
	}
	return c
}

// testProfiles resolves testdata/profiles.generated.toml against tools.
func testProfiles(t *testing.T, tools []*mcp.Tool) *profiles.Resolved {
	t.Helper()
	return loadResolved(t, "testdata/profiles.generated.toml", tools)
}

// loadResolved loads the profiles file at path (with the profiles.toml
// beside it) and resolves it against tools.
func loadResolved(t *testing.T, path string, tools []*mcp.Tool) *profiles.Resolved {
	t.Helper()
	set, err := profiles.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := set.Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// recorder opens a real telemetry recorder in a temporary directory; read
// returns what it recorded, after closing it.
func recorder(t *testing.T) (*telemetry.Recorder, func() ([]telemetry.Session, []telemetry.Call)) {
	t.Helper()
	dir := t.TempDir()
	r, err := telemetry.OpenRecorder(dir, telemetry.RecorderOptions{Replica: "test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { r.Close() })
	return r, func() ([]telemetry.Session, []telemetry.Call) {
		t.Helper()
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		s, c, err := telemetry.ReadAll(context.Background(), []string{dir}, telemetry.Window{})
		if err != nil {
			t.Fatal(err)
		}
		return s, c
	}
}

func newGateway(t *testing.T, opts Options) *Gateway {
	t.Helper()
	g, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// connect runs a real client session against g's server for profile over
// an in-memory transport.
func connect(t *testing.T, g *Gateway, profile string) *mcp.ClientSession {
	t.Helper()
	return connectSession(t, g, profile, nil, nil)
}

// legacyProtocol is the protocol the session tests speak unless they name
// one: the latest with protocol sessions (2026-07-28 requests are served
// by the sessionless rules, stateless_test.go).
const legacyProtocol = "2025-11-25"

// connectSession is connect with client and session options (nil: the
// SDK's defaults, at legacyProtocol when they name no protocol).
func connectSession(t testing.TB, g *Gateway, profile string, opts *mcp.ClientOptions, sopts *mcp.ClientSessionOptions) *mcp.ClientSession {
	t.Helper()
	if sopts == nil || sopts.ProtocolVersion == "" {
		o := mcp.ClientSessionOptions{}
		if sopts != nil {
			o = *sopts
		}
		o.ProtocolVersion = legacyProtocol
		sopts = &o
	}
	s, err := g.Server(profile)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "gateway-test", Version: "0"}, opts).Connect(ctx, ct, sopts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

func envelopeOf(t *testing.T, res *mcp.CallToolResult) Envelope {
	t.Helper()
	if !res.IsError {
		t.Fatalf("result %+v is not an error", res)
	}
	var env Envelope
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &env); err != nil {
		t.Fatalf("structuredContent %s: %v", b, err)
	}
	var text Envelope
	if len(res.Content) != 2 || json.Unmarshal([]byte(res.Content[1].(*mcp.TextContent).Text), &text) != nil || !reflect.DeepEqual(text, env) {
		t.Errorf("content %+v does not carry the message and the envelope as JSON", res.Content)
	}
	if res.Content[0].(*mcp.TextContent).Text != env.Message {
		t.Errorf("first text %q, want the message %q", res.Content[0].(*mcp.TextContent).Text, env.Message)
	}
	return env
}

func TestCatalogUpstreamIsUnavailable(t *testing.T) {
	rec, read := recorder(t)
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), Recorder: rec})
	cs := connect(t, g, "core")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil {
		t.Fatal(err)
	}
	env := envelopeOf(t, res)
	if env.Code != CodeUpstreamUnavailable || !env.Retryable || env.Category != CategoryUpstream || !strings.Contains(env.Message, "recorded catalog") {
		t.Errorf("envelope %+v, want retryable upstream_unavailable", env)
	}
	cs.Close()
	g.Close()
	_, calls := read()
	if len(calls) != 1 || calls[0].Outcome != telemetry.OutcomeUpstreamError {
		t.Errorf("calls %+v, want one upstream_error", calls)
	}
}

func TestKilledUpstreamIsUnavailable(t *testing.T) {
	ctx := context.Background()
	cmd := exec.Command(testupstream.EverythingServer(t))
	up, err := NewClientUpstream(ctx, &mcp.CommandTransport{Command: cmd})
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, Options{Upstream: up})
	cs := connect(t, g, "")
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil || res.IsError {
		t.Fatalf("before the kill: %v %+v", err, res)
	}
	cmd.Process.Kill()
	cmd.Process.Wait()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
	if err != nil {
		t.Fatal(err)
	}
	if env := envelopeOf(t, res); env.Code != CodeUpstreamUnavailable || !strings.Contains(env.Message, "test_simple_text") {
		t.Errorf("envelope %+v, want upstream_unavailable naming the tool", env)
	}
}

func TestNotInProfileEnvelope(t *testing.T) {
	cat := everythingCatalog()
	cases := []struct {
		name, ceiling, tool string
		message             []string
		actions             []string
	}{
		{"two profiles", "", "test_audio_content",
			[]string{`"test_audio_content"`, `active profile "core"`, "profiles that include it: full, standard"},
			[]string{`use profile "full"`, `use profile "standard"`}},
		{"ceiling hides full", "standard", "test_audio_content",
			[]string{"profiles that include it: full, standard"},
			[]string{`use profile "standard"`}},
		{"only beyond the ceiling", "standard", "test_sampling",
			[]string{"profiles that include it: full"},
			[]string{"ask the operator"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), MaxProfile: c.ceiling})
			cs := connect(t, g, "core")
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.tool})
			if err != nil {
				t.Fatal(err)
			}
			env := envelopeOf(t, res)
			if env.Code != CodeToolNotInProfile || env.Retryable || env.Category != CategoryPolicy {
				t.Errorf("envelope %+v", env)
			}
			for _, m := range c.message {
				if !strings.Contains(env.Message, m) {
					t.Errorf("message %q lacks %q", env.Message, m)
				}
			}
			if len(env.SuggestedActions) != len(c.actions) {
				t.Fatalf("actions %q, want %d", env.SuggestedActions, len(c.actions))
			}
			for i, a := range c.actions {
				if !strings.Contains(env.SuggestedActions[i], a) {
					t.Errorf("action %q lacks %q", env.SuggestedActions[i], a)
				}
			}
		})
	}
}

func TestProfileErrors(t *testing.T) {
	cat := everythingCatalog()
	up := NewCatalogUpstream(cat)
	g := newGateway(t, Options{Upstream: up, Profiles: testProfiles(t, cat.Tools), MaxProfile: "standard"})
	var pe *ProfileError
	if _, err := g.Server("nope"); !errors.As(err, &pe) || pe.Ceiling != "" || !strings.Contains(err.Error(), `unknown profile "nope"; valid profiles: core, standard`) {
		t.Errorf("Server(nope): %v", err)
	}
	if _, err := g.Server("full"); !errors.As(err, &pe) || pe.Ceiling != "standard" || !strings.Contains(err.Error(), `ceiling profile "standard"`) {
		t.Errorf("Server(full) beyond the ceiling: %v", err)
	}
	for _, p := range []string{"", "core", "standard"} {
		if _, err := g.Server(p); err != nil {
			t.Errorf("Server(%q): %v", p, err)
		}
	}
	a, _ := g.Server("core")
	b, _ := g.Server("")
	if a != b {
		t.Error(`Server("") is not the cached default profile's server`)
	}

	bad := []struct {
		name string
		opts Options
		want string
	}{
		{"no upstream", Options{}, "no upstream"},
		{"negative page size", Options{Upstream: up, PageSize: -1}, "page size -1"},
		{"explore above 1", Options{Upstream: up, Explore: 1.5}, "explore rate 1.5"},
		{"unknown ceiling", Options{Upstream: up, MaxProfile: "nope"}, `max profile "nope"`},
	}
	for _, c := range bad {
		if _, err := New(context.Background(), c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want %q", c.name, err, c.want)
		}
	}
}

func TestHTTPHandler(t *testing.T) {
	cat := everythingCatalog()
	rec, _ := recorder(t)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), MaxProfile: "standard", Recorder: rec})
	srv := httptest.NewServer(g.HTTPHandler()) // on 127.0.0.1
	defer srv.Close()

	get := func(path, host string) (int, string) {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, srv.URL+path, strings.NewReader(`{"jsonrpc":"2.0","id":1,"method":"ping"}`))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		if host != "" {
			req.Host = host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	cases := []struct {
		name, path, host string
		status           int
		body             string
	}{
		{"unknown profile", "/mcp/nope", "", 404, `unknown profile "nope"; valid profiles: core, standard`},
		{"beyond the ceiling", "/mcp/full", "", 403, `ceiling profile "standard"`},
		{"no name", "/mcp/", "", 404, "want /mcp or /mcp/PROFILE"},
		{"nested path", "/mcp/core/x", "", 404, "want /mcp or /mcp/PROFILE"},
		{"DNS rebinding", "/mcp", "evil.example:80", 403, "invalid Host header"},
	}
	for _, c := range cases {
		status, body := get(c.path, c.host)
		if status != c.status || !strings.Contains(body, c.body) {
			t.Errorf("%s: %d %q, want %d with %q", c.name, status, body, c.status, c.body)
		}
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/standard", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if res, err := cs.ListTools(context.Background(), nil); err != nil || len(res.Tools) != 8 {
		t.Fatalf("tools/list on /mcp/standard: %v", err)
	}

	resp, err := http.Get(srv.URL + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	if h.Default != "core" || h.Ceiling != "standard" || !reflect.DeepEqual(h.Profiles, []string{"core", "standard"}) ||
		h.Upstream.Tools != 28 || h.OpenSessions != 0 || h.UsageSessions != 1 || !strings.HasPrefix(h.Telemetry, "recording") {
		t.Errorf("health %+v", h)
	}
}

func TestCloseRecordsOpenSessions(t *testing.T) {
	rec, read := recorder(t)
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Recorder: rec, ServerVersion: "9"})
	cs := connect(t, g, "")
	if _, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: StartCursor}); err != nil {
		t.Fatal(err)
	}
	if err := g.Close(); err != nil { // the client is still connected
		t.Fatal(err)
	}
	sessions, _ := read()
	if len(sessions) != 1 {
		t.Fatalf("sessions %+v", sessions)
	}
	s := sessions[0]
	if s.End.IsZero() || s.Profile != "full" || s.ToolsListCalls != 1 || s.ToolsListPages != 1 || s.ServerVersion != "9" || s.ClientName != "gateway-test" {
		t.Errorf("session %+v, want it ended, profile full, one paged list", s)
	}
}

func TestExploreShare(t *testing.T) {
	cat := everythingCatalog()
	for _, rate := range []float64{0, 1} {
		rec, read := recorder(t)
		g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), Recorder: rec, Explore: rate})
		for range 5 {
			cs := connect(t, g, "core")
			cs.ListTools(context.Background(), nil)
			cs.Close()
		}
		g.Close()
		sessions, _ := read()
		for _, s := range sessions {
			explored := rate == 1
			wantProfile := map[bool]string{true: "full", false: "core"}[explored]
			if s.Exploration != explored || s.Profile != wantProfile {
				t.Errorf("rate %v: session profile %q exploration %v", rate, s.Profile, s.Exploration)
			}
		}
		if len(sessions) != 5 {
			t.Errorf("rate %v: %d sessions, want 5", rate, len(sessions))
		}
	}
}

func TestListWithoutCursorIgnoresPageSize(t *testing.T) {
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), PageSize: 1})
	cs := connect(t, g, "")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil || len(res.Tools) != 28 || res.NextCursor != "" {
		t.Fatalf("tools/list: %d tools next %q %v", len(res.Tools), res.NextCursor, err)
	}
	for i := 1; i < len(res.Tools); i++ {
		if res.Tools[i-1].Name >= res.Tools[i].Name {
			t.Errorf("tools not sorted by name at %d", i)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var paged int
	for c := StartCursor; c != ""; {
		r, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: c})
		if err != nil {
			t.Fatal(err)
		}
		paged += len(r.Tools)
		if len(r.Tools) != 1 {
			t.Errorf("page of %d tools, want 1", len(r.Tools))
		}
		c = r.NextCursor
	}
	if paged != 28 {
		t.Errorf("paged %d tools, want 28", paged)
	}
}

// destructiveProfiles lists the destructive tool drop_all in core; only a
// profiles.toml allow_destructive would keep it there.
const destructiveProfiles = `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["drop_all", "read_rows"]
`

func TestDestructiveToolOnlyUnderFull(t *testing.T) {
	dir := t.TempDir()
	path := dir + "/profiles.generated.toml"
	if err := os.WriteFile(path, []byte(destructiveProfiles), 0o644); err != nil {
		t.Fatal(err)
	}
	yes := true
	cat := &catalog.Catalog{Tools: []*mcp.Tool{
		{Name: "drop_all", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		{Name: "read_rows", InputSchema: map[string]any{"type": "object"}, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "added_later", InputSchema: map[string]any{"type": "object"}}, // in no profile file
	}}
	set, err := profiles.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := set.Resolve(cat.Tools)
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: resolved})

	core := connect(t, g, "core")
	res, err := core.CallTool(context.Background(), &mcp.CallToolParams{Name: "drop_all"})
	if err != nil {
		t.Fatal(err)
	}
	if env := envelopeOf(t, res); env.Code != CodeToolNotInProfile || !strings.Contains(env.Message, "profiles that include it: full") {
		t.Errorf("destructive call under core: %+v, want tool_not_in_profile naming full", env)
	}
	if lr, err := core.ListTools(context.Background(), nil); err != nil || len(lr.Tools) != 1 || lr.Tools[0].Name != "read_rows" {
		t.Errorf("core lists %v, %v: want only read_rows", lr, err)
	}

	full := connect(t, g, "full")
	res, err = full.CallTool(context.Background(), &mcp.CallToolParams{Name: "drop_all"})
	if err != nil {
		t.Fatal(err)
	}
	// Allowed under full: forwarded, and the recorded catalog cannot run it.
	if env := envelopeOf(t, res); env.Code != CodeUpstreamUnavailable {
		t.Errorf("destructive call under full: %+v, want it forwarded", env)
	}
	lr, err := full.ListTools(context.Background(), nil)
	if err != nil || len(lr.Tools) != 3 {
		t.Errorf("full lists %v, %v: want all three tools, added_later included", lr, err)
	}
}

func TestIdleHTTPSessionEnds(t *testing.T) {
	rec, read := recorder(t)
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Recorder: rec, IdleTimeout: 50 * time.Millisecond})
	srv := httptest.NewServer(g.HTTPHandler())
	defer srv.Close()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1, DisableStandaloneSSE: true}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// The client goes quiet without ending its session; the gateway must.
	deadline := time.Now().Add(10 * time.Second)
	for g.Health().OpenSessions != 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := g.Health().OpenSessions; n != 0 {
		t.Fatalf("%d sessions still open", n)
	}
	sessions, _ := read()
	if len(sessions) != 1 || sessions[0].End.IsZero() {
		t.Errorf("sessions %+v: want one ended", sessions)
	}
}

// TestSessionWithoutHandshake: a 2026-07-28 client may send requests with
// its identity in _meta and no server/discover; the session is still
// recorded with that identity.
func TestSessionWithoutHandshake(t *testing.T) {
	rec, read := recorder(t)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(everythingCatalog()), Recorder: rec})
	s, _ := g.Server("")
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- s.Run(context.Background(), &mcp.IOTransport{Reader: inR, Writer: outW}) }()
	req := `{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":{` +
		`"io.modelcontextprotocol/protocolVersion":"2026-07-28",` +
		`"io.modelcontextprotocol/clientInfo":{"name":"raw-client","version":"7"},` +
		`"io.modelcontextprotocol/clientCapabilities":{}}}}` + "\n"
	if _, err := inW.Write([]byte(req)); err != nil {
		t.Fatal(err)
	}
	var resp struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
		Error json.RawMessage `json:"error"`
	}
	if err := json.NewDecoder(outR).Decode(&resp); err != nil || len(resp.Result.Tools) != 28 {
		t.Fatalf("tools/list: %d tools, error %s, %v", len(resp.Result.Tools), resp.Error, err)
	}
	inW.Close()
	<-done
	g.Close()
	sessions, _ := read()
	if len(sessions) != 1 || sessions[0].ClientName != "raw-client" || sessions[0].ClientVersion != "7" || sessions[0].ProtocolVersion != "2026-07-28" {
		t.Errorf("sessions %+v, want raw-client 7 on 2026-07-28", sessions)
	}
}

// A rate between 0 and 1 is a random share: over 100 sessions at 0.5 both
// kinds occur (each missing with probability 2^-100), and each exploration
// session is full and marked. Under a ceiling below full, exploration
// serves the ceiling.
func TestExploreRandomShareAndCeiling(t *testing.T) {
	cat := everythingCatalog()
	tests := []struct {
		name, ceiling, explored string
		rate                    float64
	}{
		{"half", "", "full", 0.5},
		{"ceiling", "standard", "standard", 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec, read := recorder(t)
			g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: testProfiles(t, cat.Tools), Recorder: rec,
				Explore: tt.rate, MaxProfile: tt.ceiling})
			for range 100 {
				connect(t, g, "core").Close()
			}
			g.Close()
			sessions, _ := read()
			count := map[bool]int{}
			for _, s := range sessions {
				count[s.Exploration]++
				if want := map[bool]string{true: tt.explored, false: "core"}[s.Exploration]; s.Profile != want {
					t.Errorf("session exploration %v profile %q, want %q", s.Exploration, s.Profile, want)
				}
			}
			if len(sessions) != 100 || count[true] == 0 || (tt.rate < 1 && count[false] == 0) {
				t.Errorf("%d sessions, %d explored: want 100 with both kinds at rate %v", len(sessions), count[true], tt.rate)
			}
		})
	}
}
