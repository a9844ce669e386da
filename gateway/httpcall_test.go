package gateway

import (
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/toolprof/toolprof/profiles"
)

// A POST of an HTTP fast-path script: a body sent to path (default /mcp)
// with the headers the go-sdk client sends for it, less those hdr names
// with "" and with those it names otherwise. async posts it without
// waiting (its answer is read at the end), then pauses for it to reach the
// upstream; shutdown then closes the gateway.
type httpStep struct {
	path, body string
	hdr        map[string]string
	async      bool
	shutdown   bool
}

// httpPost is step s of a script: its line, posted.
func httpPost(s step) httpStep { return httpStep{body: s.line, async: s.settle, shutdown: s.shutdown} }

// with is s with the headers hdr changed.
func (s httpStep) with(hdr ...string) httpStep {
	s.hdr = map[string]string{}
	for i := 0; i+1 < len(hdr); i += 2 {
		s.hdr[hdr[i]] = hdr[i+1]
	}
	return s
}

// post sends s to url and returns what came back: the status, the
// headers (less Date) and the body.
func (s httpStep) post(t tb, url string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url+cmp.Or(s.path, "/mcp"), strings.NewReader(s.body))
	if err != nil {
		t.Fatalf("%v", err)
	}
	var m struct {
		Method string `json:"method"`
		Params struct {
			Name string `json:"name"`
		} `json:"params"`
	}
	json.Unmarshal([]byte(s.body), &m)
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	req.Header.Set(protocolHeader, protocolSessionless)
	req.Header.Set("Mcp-Method", m.Method)
	if m.Method == methodCallTool {
		req.Header.Set("Mcp-Name", m.Params.Name)
	}
	for k, v := range s.hdr {
		req.Header.Del(k)
		if v != "" {
			req.Header.Set(k, v)
		}
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post %s: %v", s.body, err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	resp.Header.Del("Date")
	var hdr []string
	for k, v := range resp.Header {
		hdr = append(hdr, k+": "+strings.Join(v, ", "))
	}
	slices.Sort(hdr)
	return fmt.Sprintf("%d %s\n%s", resp.StatusCode, strings.Join(hdr, "; "), b)
}

// httpCalls turns script steps of protocol 2026-07-28 into POSTs: the
// handshake's server/discover first, then each step.
func httpCalls(steps []step) []httpStep {
	var out []httpStep
	for _, s := range append(handshake(protocolSessionless), steps...) {
		out = append(out, httpPost(s))
	}
	return out
}

// runHTTPScript serves a new gateway (o, in front of up) on HTTP, the fast
// path on or off, posts the steps and returns what each got back.
func runHTTPScript(t *testing.T, o *Options, up upstreamFor, steps []httpStep, fast bool) fastRun {
	t.Helper()
	var ref atomic.Pointer[Gateway]
	u := up(t, &ref)
	opts := *o
	opts.Upstream = u
	rec, read := recorder(t)
	obs := &recordingObserver{}
	opts.Recorder, opts.Observer = rec, obs
	opts.ServerVersion = "test"
	g, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ref.Store(g)
	var fp *httpFast
	if fast {
		fp = newHTTPFast(g)
	}
	srv := httptest.NewServer(g.httpHandler(fp))
	var run fastRun
	late := make([]string, len(steps))
	var wg sync.WaitGroup
	for i, s := range steps {
		if s.async {
			wg.Go(func() { late[i] = s.post(t, srv.URL) })
			time.Sleep(50 * time.Millisecond) // for the call to reach the upstream; not a measure
		} else {
			run.lines = append(run.lines, s.post(t, srv.URL))
		}
		if s.shutdown {
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	wg.Wait()
	run.lines = append(run.lines, late...)
	srv.Close()
	if fp != nil {
		run.taken = fp.taken.Load()
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	run.served = obs.all()
	run.sessions, run.calls = read()
	for i := range run.sessions {
		s := &run.sessions[i]
		s.ID, s.Start, s.End = "", time.Time{}, time.Time{}
	}
	for i := range run.calls {
		c := &run.calls[i]
		c.Session, c.Start, c.Duration = "", time.Time{}, 0
	}
	return run
}

// goSDKMeta is the _meta the go-sdk client sends on a 2026-07-28 call
// (metaFor), and others it may not.
const (
	goSDKMeta    = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"fast-test","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	badCapsMeta  = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":5},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	noCapsMeta   = `"_meta":{"io.modelcontextprotocol/clientInfo":{"name":"fast-test","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	progressMeta = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"tok"}`
	levelMeta    = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/logLevel":"debug","io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
	badInfoMeta  = `"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":[1],"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
)

// httpOnly are the requests only HTTP carries: each header the SDK checks
// missing or wrong, and _meta the SDK refuses, each sent twice (a refused
// _meta is never learned).
func httpOnly() []httpStep {
	c := func(id int) httpStep { return httpPost(call(protocolSessionless, id, "test_simple_text", `{}`)) }
	withMeta := func(id int, meta string) httpStep {
		return httpStep{body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"test_simple_text","arguments":{}}}`, id, meta)}
	}
	return []httpStep{
		c(100),
		c(101).with("Mcp-Name", ""),
		c(102).with("Mcp-Name", "test_error_handling"),
		c(103).with("Mcp-Method", ""),
		c(104).with("Mcp-Method", "tools/list"),
		c(105).with("Accept", "application/json"),
		c(106).with("Accept", "*/*"),
		c(107).with("Content-Type", "text/plain"),
		c(108).with("Content-Type", "application/json; charset=utf-8"),
		c(109).with("Last-Event-ID", "x_1"),
		c(110).with(protocolHeader, ""),
		c(111).with(protocolHeader, "2025-11-25"),
		c(112).with(protocolHeader, "2099-01-01"),
		c(113).with("Mcp-Session-Id", "not-a-session"),
		withMeta(114, badCapsMeta), withMeta(115, badCapsMeta),
		withMeta(116, noCapsMeta), withMeta(117, noCapsMeta),
		withMeta(118, badInfoMeta), withMeta(119, badInfoMeta),
		// What the upstream sends during a call: the SDK relays it on the
		// POST's stream when _meta asks for it, which the fast path never takes.
		{path: "/mcp/full", body: `{"jsonrpc":"2.0","id":130,"method":"tools/call","params":{` + progressMeta + `,"name":"test_tool_with_progress","arguments":{}}}`},
		{path: "/mcp/full", body: `{"jsonrpc":"2.0","id":131,"method":"tools/call","params":{` + progressMeta + `,"name":"test_tool_with_progress","arguments":{}}}`},
		{path: "/mcp/full", body: `{"jsonrpc":"2.0","id":132,"method":"tools/call","params":{` + levelMeta + `,"name":"test_tool_with_logging","arguments":{}}}`},
		{path: "/mcp/full", body: `{"jsonrpc":"2.0","id":133,"method":"tools/call","params":{` + levelMeta + `,"name":"test_tool_with_logging","arguments":{}}}`},
		{path: "/mcp/full", body: `{"jsonrpc":"2.0","id":134,"method":"tools/call","params":{` + goSDKMeta + `,"name":"test_tool_with_logging","arguments":{}}}`},
		{path: "/mcp/full", body: `{"jsonrpc":"2.0","id":135,"method":"tools/call","params":{` + goSDKMeta + `,"name":"test_sampling","arguments":{"prompt":"p"}}}`},
		{path: "/mcp/full", body: `{"jsonrpc":"2.0","id":136,"method":"tools/call","params":{` + goSDKMeta + `,"name":"test_elicitation","arguments":{"message":"m"}}}`},
		{body: `[` + c(120).body + `]`},
		{body: `{"jsonrpc":"2.0","id":121,"method":"tools/call","params":{` + goSDKMeta + `,"name":"test_simple_text"}} `},
		{body: `{"jsonrpc":"2.0","method":"tools/call","params":{` + goSDKMeta + `,"name":"test_simple_text"}}`},
		c(122),
	}
}

// The HTTP fast path answers exactly as the SDK's stateless handler: for
// every gate's refusal, an unknown tool, the upstream's errors and isError
// results, a timeout, a shutdown, admission, an oversized result,
// malformed params, and each header and _meta the SDK checks, the same
// POSTs to a real HTTP server with the fast path on and off get the same
// status, headers and body back, and leave the same telemetry and
// observer records; and the fast path took calls.
func TestHTTPFastPathAnswersAsTheSDK(t *testing.T) {
	scenarios := append([]fastScenario{{name: "http headers and _meta"}}, fastScenarios...)
	for _, sc := range scenarios {
		if sc.name == "cancellation" {
			continue // a 2026-07-28 call over HTTP has no cancellation of its own: its POST is its stream
		}
		t.Run(sc.name, func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			var steps []httpStep
			if sc.steps != nil {
				steps = httpCalls(sc.steps(protocolSessionless))
			} else {
				steps = append(httpCalls(nil), httpOnly()...)
			}
			for i := range steps {
				if sc.profile != "" && steps[i].path == "" {
					steps[i].path = "/mcp/" + sc.profile
				}
			}
			runs := scenarioRuns(t, sc, func(opts *Options, up upstreamFor, fast bool) fastRun {
				return runHTTPScript(t, opts, up, steps, fast)
			})
			compareRuns(t, runs[0], runs[1])
		})
	}
}

// Tokens, Origin and the profile paths gate the fast path's calls as the
// SDK's: a token bound to a profile, one with a ceiling, a missing or
// unknown token, a foreign Origin, a profile beyond the ceiling and an
// unknown one get the same answers with the fast path on and off.
func TestHTTPFastPathCredentialsAndPaths(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	src := tokensFile(t, tokenLines("bound", `profile = "core"`)+tokenLines("capped", `ceiling = "core"`)+tokenLines("plain"))
	var steps []httpStep
	id := 0
	for _, path := range []string{"/mcp", "/mcp/core", "/mcp/standard", "/mcp/full", "/mcp/nope"} {
		for _, auth := range []string{"Bearer bound", "Bearer capped", "Bearer plain", "Bearer wrong", ""} {
			for _, origin := range []string{"", "https://evil.example"} {
				for _, tool := range []string{"test_simple_text", "test_tool_with_progress"} {
					id++
					s := httpPost(call(protocolSessionless, id, tool, `{}`))
					s.path = path
					steps = append(steps, s.with("Authorization", auth, "Origin", origin))
				}
			}
		}
	}
	var runs [2]fastRun
	for i, fast := range []bool{false, true} {
		opts := Options{MaxProfile: "standard", HTTP: HTTPOptions{Tokens: src}}
		withProfiles := func(t *testing.T, ref *atomic.Pointer[Gateway]) Upstream {
			u := everythingUp(nil)(t, ref)
			tools, err := u.ListTools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			opts.Tools = tools
			opts.Profiles = writeProfiles(t, tools, fastGenerated, "version = 1\n")
			return u
		}
		runs[i] = runHTTPScript(t, &opts, withProfiles, steps, fast)
	}
	compareRuns(t, runs[0], runs[1])
}

// The go-sdk client's own calls over HTTP are taken by the fast path
// (after its first, which teaches its _meta), and answered.
func TestHTTPFastPathTakesTheGoSDKClientsCalls(t *testing.T) {
	g := relayGateway(t)
	fp := newHTTPFast(g)
	srv := httptest.NewServer(g.httpHandler(fp))
	t.Cleanup(srv.Close)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "fast-test", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	for range 5 {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"})
		if err != nil || res.IsError || len(res.Content) != 1 {
			t.Fatalf("call: %v %+v", err, res)
		}
		if text, _ := res.Content[0].(*mcp.TextContent); text == nil || text.Text == "" {
			t.Fatalf("call answered %+v", res.Content[0])
		}
	}
	if n := fp.taken.Load(); n != 4 {
		t.Errorf("the fast path took %d of 5 calls, want 4 (all but the first)", n)
	}
}

// Over random catalogs, profiles, settings and calls, with headers and
// _meta drawn from those the SDK takes and refuses, the HTTP fast path
// forwards to the upstream exactly the calls the SDK's handler forwards,
// which are those the profile allows, and answers each POST alike.
func TestPropertyHTTPFastPathReachesNoMoreThanTheSDK(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var taken uint64
	defer func() {
		if taken == 0 {
			t.Error("the fast path took no call in any case")
		}
	}()
	metas := []string{goSDKMeta, goSDKMeta, badCapsMeta, noCapsMeta, badInfoMeta,
		`"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p"}`}
	headers := [][]string{nil, nil, nil, {"Mcp-Name", ""}, {"Mcp-Name", "tool_0"}, {"Mcp-Method", ""}, {"Accept", "text/event-stream"}, {protocolHeader, "2025-11-25"}}
	rapid.Check(t, func(t *rapid.T) {
		c := drawCase(t)
		set := &profiles.Set{File: c.file, Path: "random.toml"}
		resolved, err := set.Resolve(c.tools)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		path := rapid.SampledFrom(append(resolved.Names(), "")).Draw(t, "path profile")
		served := path
		if served == "" {
			served = resolved.Default
		}
		var steps []httpStep
		for i, name := range rapid.SliceOfN(rapid.SampledFrom(c.names), 1, 20).Draw(t, "calls") {
			args := rapid.SampledFrom([]string{"", `,"arguments":{}`, `,"arguments":{"a":1}`, `,"arguments":null`, `,"arguments":[1]`}).Draw(t, fmt.Sprintf("args %d", i))
			meta := rapid.SampledFrom(metas).Draw(t, fmt.Sprintf("meta %d", i))
			s := httpStep{path: "/mcp/" + path, body: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":%q%s}}`, i+1, meta, name, args)}
			if path == "" {
				s.path = "/mcp"
			}
			steps = append(steps, s.with(rapid.SampledFrom(headers).Draw(t, fmt.Sprintf("header %d", i))...))
		}
		var lines, forwarded [2][]string
		for i, fast := range []bool{false, true} {
			up := &recordingFakeUpstream{tools: c.tools}
			g, err := New(context.Background(), Options{Upstream: up, Profiles: resolved, ReadOnly: c.readOnly})
			if err != nil {
				t.Fatalf("new gateway: %v", err)
			}
			var fp *httpFast
			if fast {
				fp = newHTTPFast(g)
			}
			srv := httptest.NewServer(g.httpHandler(fp))
			for _, s := range steps {
				lines[i] = append(lines[i], s.post(t, srv.URL))
			}
			srv.Close()
			if fast {
				taken += fp.taken.Load()
			}
			g.Close()
			forwarded[i] = up.forwarded()
		}
		if !slices.Equal(forwarded[0], forwarded[1]) {
			t.Fatalf("profile %q (read-only %v): the SDK path forwarded %q, the fast path %q", served, c.readOnly, forwarded[0], forwarded[1])
		}
		for _, name := range forwarded[1] {
			if !c.allowedByRule(served, name) {
				t.Fatalf("profile %q (read-only %v): %q reached the upstream", served, c.readOnly, name)
			}
		}
		if !slices.Equal(lines[0], lines[1]) {
			t.Fatalf("answers differ:\nSDK:  %s\nfast: %s", strings.Join(lines[0], "\n      "), strings.Join(lines[1], "\n      "))
		}
	})
}

// Clients inventing _meta (a new clientInfo per request) cannot grow what
// the fast path learns past maxLearnedHTTPMeta; their calls are answered
// all the same, by the SDK until learned.
func TestHTTPFastPathLearnsBoundedMeta(t *testing.T) {
	g := relayGateway(t)
	fp := newHTTPFast(g)
	srv := httptest.NewServer(g.httpHandler(fp))
	t.Cleanup(srv.Close)
	for i := range maxLearnedHTTPMeta + 20 {
		meta := fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":"c%d","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, i)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"test_simple_text","arguments":{}}}`, i, meta)
		if got := (httpStep{body: body}).post(t, srv.URL); !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"result"`) {
			t.Fatalf("call %d: %s", i, got)
		}
		fp.mu.Lock()
		n := len(fp.learned)
		fp.mu.Unlock()
		if n > maxLearnedHTTPMeta {
			t.Fatalf("after %d calls of distinct _meta, %d learned; want at most %d", i+1, n, maxLearnedHTTPMeta)
		}
	}
}

// bigMeta is a _meta the SDK accepts, its clientInfo name n bytes long.
func bigMeta(n int) string {
	return fmt.Sprintf(`"_meta":{"io.modelcontextprotocol/clientCapabilities":{},"io.modelcontextprotocol/clientInfo":{"name":%q,"version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`, strings.Repeat("c", n))
}

// A _meta longer than maxLearnedMetaBytes is never learned, so that what
// the fast paths keep is bounded in bytes (a body may be megabytes, and
// maxLearnedHTTPMeta of them would be held): over HTTP and stdio, calls
// carrying one are all answered, by the SDK, while one just within the
// bound is taken from its second call on.
func TestFastPathsLearnNoLongMeta(t *testing.T) {
	cases := []struct {
		name      string
		nameBytes int
		taken     uint64
	}{
		{"within the bound", 1 << 10, 1},
		{"beyond it", 2 * maxLearnedMetaBytes, 0},
	}
	body := func(id int, meta string) string {
		return fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s,"name":"test_simple_text","arguments":{}}}`, id, meta)
	}
	for _, tc := range cases {
		meta := bigMeta(tc.nameBytes)
		t.Run("http "+tc.name, func(t *testing.T) {
			g := relayGateway(t)
			fp := newHTTPFast(g)
			srv := httptest.NewServer(g.httpHandler(fp))
			t.Cleanup(srv.Close)
			for id := range 2 {
				if got := (httpStep{body: body(id, meta)}).post(t, srv.URL); !strings.HasPrefix(got, "200 ") || !strings.Contains(got, `"result"`) {
					t.Fatalf("call %d: %s", id, got)
				}
			}
			fp.mu.Lock()
			held := 0
			for m := range fp.learned {
				held += len(m)
			}
			fp.mu.Unlock()
			if got := fp.taken.Load(); got != tc.taken || held > maxLearnedMetaBytes {
				t.Errorf("_meta of %d bytes: %d calls taken, %d bytes learned; want %d taken, at most %d bytes", len(meta), got, held, tc.taken, maxLearnedMetaBytes)
			}
		})
		t.Run("stdio "+tc.name, func(t *testing.T) {
			g := relayGateway(t)
			c := serveRaw(t, g, "", true)
			for _, s := range handshake(protocolSessionless) {
				c.send(s.line)
				c.await(s.await)
			}
			for id := range 2 {
				c.send(body(id, meta))
				if got := c.await(fmt.Sprint(id)); !strings.Contains(got[len(got)-1], `"result"`) {
					t.Fatalf("call %d: %s", id, got)
				}
			}
			c.close()
			if got := g.fastCalls.Load(); got != tc.taken {
				t.Errorf("_meta of %d bytes: %d calls taken; want %d", len(meta), got, tc.taken)
			}
		})
	}
}
