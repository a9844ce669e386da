package main

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/upstream"
)

// launched is a server started with --launch over HTTP.
type launched struct {
	base      string // http://127.0.0.1:PORT
	stderr    *syncbuf.Buffer
	telemetry string
	stop      func() error
}

// writeLaunch writes servers as an .mcp.json in a fresh directory.
func writeLaunch(t *testing.T, servers map[string]any) string {
	t.Helper()
	b, err := json.MarshalIndent(map[string]any{"mcpServers": servers}, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// launchArgs are the flags every launched server gets: no profiles file
// named (the default one is absent from this directory, so every tool is
// served as "full") and a telemetry directory of the test's.
func launchArgs(t *testing.T, telemetry string) []string {
	return []string{"--telemetry", telemetry}
}

// startLaunch runs the server over HTTP with --launch FILE and flags, env
// added to its environment.
func startLaunch(t *testing.T, file string, env []string, flags ...string) *launched {
	t.Helper()
	l := &launched{stderr: &syncbuf.Buffer{}, telemetry: filepath.Join(t.TempDir(), "telemetry")}
	args := append(launchArgs(t, l.telemetry), "--http", "127.0.0.1:0", "--launch", file)
	cmd := exec.Command(bins.server, append(args, flags...)...)
	cmd.Env = append(os.Environ(), env...)
	l.base, l.stop = startHTTP(t, cmd, l.stderr)
	return l
}

// connect opens a client session on /mcp with opts.
func (l *launched) connect(t *testing.T, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.base + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, l.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// health reads /healthz.
func (l *launched) health(t *testing.T) (gateway.Health, string) {
	t.Helper()
	raw := httpGet(t, l.base+"/healthz")
	var h gateway.Health
	if err := json.Unmarshal([]byte(raw), &h); err != nil {
		t.Fatalf("healthz %q: %v", raw, err)
	}
	return h, raw
}

// waitServing waits until every upstream is ready: they connect in the
// background, after the gateway listens, and a client that initializes
// before one is ready is served without its instructions and tools.
func (l *launched) waitServing(t *testing.T) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		h, raw := l.health(t)
		if h.Upstream.State == "serving" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstreams not serving within 30 s: %s", raw)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func upstreamHealth(h gateway.Health, name string) (upstream.Health, bool) {
	i := slices.IndexFunc(h.Upstreams, func(u upstream.Health) bool { return u.Name == name })
	if i < 0 {
		return upstream.Health{}, false
	}
	return h.Upstreams[i], true
}

// runServer runs the server to completion with args and env added and
// returns its exit code and output.
func runServer(t *testing.T, env []string, args ...string) (int, string, string) {
	t.Helper()
	cmd := exec.Command(bins.server, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr syncbuf.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.Stdin = strings.NewReader("") // stdio mode ends at once
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0, stdout.String(), stderr.String()
	case errors.As(err, &ee):
		return ee.ExitCode(), stdout.String(), stderr.String()
	}
	t.Fatalf("run server: %v", err)
	return 0, "", ""
}

func callText(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	return res
}

func resultText(r *mcp.CallToolResult) string {
	var parts []string
	for _, c := range r.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// listedNames is the whole tools/list of cs, without a cursor.
func listedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	names, _ := listNames(t, cs, "")
	return names
}

// TestLaunchStartupErrors: a launch document that cannot be served stops
// start-up with exit 1 and an error naming what to fix; command-line misuse
// of the launch flags exits 2.
func TestLaunchStartupErrors(t *testing.T) {
	unresolved := writeLaunch(t, map[string]any{
		"ok":   map[string]any{"command": bins.everything},
		"repo": map[string]any{"command": bins.everything, "env": map[string]string{"GITHUB_TOKEN": "${TOOLPROF_TEST_UNSET_TOKEN}"}},
	})
	sse := writeLaunch(t, map[string]any{"old": map[string]any{"type": "sse", "url": "http://127.0.0.1:1/sse"}})
	missing := writeLaunch(t, map[string]any{
		"a":       map[string]any{"command": bins.everything},
		"missing": map[string]any{"command": "/nonexistent/toolprof-missing-server"},
	})
	cases := []struct {
		name    string
		args    []string
		code    int
		wants   []string
		started bool // the document is valid: its servers were started
	}{
		{"unresolved variable", []string{"--launch", unresolved}, 1, []string{`server "repo"`, "TOOLPROF_TEST_UNSET_TOKEN", "env GITHUB_TOKEN"}, false},
		{"sse refused", []string{"--launch", sse}, 1, []string{`"old"`, "SSE is unsupported, migrate to streamable_http"}, false},
		{"missing upstream with --require-all", []string{"--launch", missing, "--require-all"}, 1, []string{`upstream "missing"`, "all required"}, true},
		{"launch and a command", []string{"--launch", missing, "--", bins.everything}, 2, []string{"give one of them"}, false},
		{"persona without launch", []string{"--persona", "dev", "--", bins.everything}, 2, []string{"--persona dev needs --launch"}, false},
		{"unknown persona", []string{"--launch", missing, "--persona", "nobody"}, 1, []string{`unknown persona "nobody"`}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, stderr := runServer(t, nil, append(launchArgs(t, filepath.Join(t.TempDir(), "tel")), c.args...)...)
			if code != c.code {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, c.code, stderr)
			}
			for _, w := range c.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			// A launch document that cannot be used is reported alone,
			// before anything about the profiles.
			if c.code == 1 && !c.started && strings.Contains(stderr, "profiles") {
				t.Errorf("stderr speaks of the profiles before the launch document's error:\n%s", stderr)
			}
		})
	}
}

// TestLaunchMissingUpstreamServesTheOthers: without --require-all an
// upstream that cannot start leaves the others serving, and the health
// output shows it down with its error; nothing is written into the
// upstream's working directory.
func TestLaunchMissingUpstreamServesTheOthers(t *testing.T) {
	cwd := t.TempDir()
	file := writeLaunch(t, map[string]any{
		"a":       map[string]any{"command": bins.everything, "cwd": cwd},
		"missing": map[string]any{"command": "/nonexistent/toolprof-missing-server"},
	})
	l := startLaunch(t, file, nil)
	// Nothing is written into an upstream's working directory, nor beside
	// the launch document, over the server's whole life.
	defer func() {
		if err := l.stop(); err != nil {
			t.Errorf("stop: %v", err)
		}
		for dir, want := range map[string][]string{cwd: nil, filepath.Dir(file): {".mcp.json"}} {
			entries, err := os.ReadDir(dir)
			var names []string
			for _, e := range entries {
				names = append(names, e.Name())
			}
			if err != nil || !slices.Equal(names, want) {
				t.Errorf("%s holds %q (err %v), want %q", dir, names, err, want)
			}
		}
	}()
	if !strings.Contains(l.stderr.String(), `upstream "missing" did not start`) {
		t.Errorf("stderr does not report the missing upstream:\n%s", l.stderr)
	}
	cs := l.connect(t, nil)
	names := listedNames(t, cs)
	var want []string
	for _, n := range sortedEverything() {
		want = append(want, "a__"+n)
	}
	if !slices.Equal(names, want) {
		t.Errorf("tools = %q, want a's tools namespaced: %q", names, want)
	}
	if res := callText(t, cs, "a__test_simple_text", nil); res.IsError {
		t.Errorf("a__test_simple_text: %s", resultText(res))
	}
	// A tool of the server that never started is unavailable, naming it;
	// a name no ready server lists is still an unknown tool.
	res := callText(t, cs, "missing__read", nil)
	if env, _ := res.StructuredContent.(map[string]any); !res.IsError || env["code"] != gateway.CodeUpstreamUnavailable || !strings.Contains(resultText(res), `upstream "missing"`) {
		t.Errorf("missing__read: %s, want upstream_unavailable naming the server", resultText(res))
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__no_such_tool"}); wireCode(err) != -32602 {
		t.Errorf("a__no_such_tool: %v, want -32602", err)
	}
	h, _ := l.health(t)
	a, okA := upstreamHealth(h, "a")
	m, okM := upstreamHealth(h, "missing")
	if !okA || a.State != upstream.StateReady || a.Tools != len(testupstream.EverythingTools) {
		t.Errorf("health of a = %+v", a)
	}
	if !okM || m.State != upstream.StateDown || !strings.Contains(m.LastError, "toolprof-missing-server") {
		t.Errorf("health of missing = %+v (want down, naming the command)", m)
	}
	if h.Upstream.State != "degraded" {
		t.Errorf("upstream state %q, want degraded (one of two ready)", h.Upstream.State)
	}
}

// TestLaunchCollidingToolNames: two upstreams offering the same tool names
// are both served, each name prefixed with its server, and a call reaches
// only its own server.
func TestLaunchCollidingToolNames(t *testing.T) {
	dir := t.TempDir()
	logA, logB := filepath.Join(dir, "a.log"), filepath.Join(dir, "b.log")
	tee := func(log string) map[string]any {
		return map[string]any{"command": "sh", "args": []string{"-c", `tee "$0" | "$1"`, log, bins.everything}}
	}
	l := startLaunch(t, writeLaunch(t, map[string]any{"a": tee(logA), "b": tee(logB)}), nil)
	cs := l.connect(t, nil)
	names := listedNames(t, cs)
	if len(names) != 2*len(testupstream.EverythingTools) || !slices.Contains(names, "a__test_simple_text") || !slices.Contains(names, "b__test_simple_text") {
		t.Fatalf("tools = %q: want both servers' tools, prefixed", names)
	}
	calls := func(log string) []string {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return toolCalls(string(b))
	}
	for _, c := range []struct{ tool, log, other string }{{"a__test_simple_text", logA, logB}, {"b__test_error_handling", logB, logA}} {
		before := len(calls(c.other))
		callText(t, cs, c.tool, nil)
		upstreamName := strings.SplitN(c.tool, "__", 2)[1]
		deadline := time.Now().Add(10 * time.Second)
		for !slices.Contains(calls(c.log), upstreamName) && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if !slices.Contains(calls(c.log), upstreamName) {
			t.Errorf("%s did not reach its server as %s: %q", c.tool, upstreamName, calls(c.log))
		}
		if got := calls(c.other); len(got) != before {
			t.Errorf("%s reached the other server too: %q", c.tool, got)
		}
	}
}

// TestLaunchUpstreamKilledMidCall: an upstream that dies during a call
// fails that call with the upstream_unavailable envelope; the other
// upstream keeps serving; the dead one is restarted and serves again.
func TestLaunchUpstreamKilledMidCall(t *testing.T) {
	l := startLaunch(t, writeLaunch(t, map[string]any{
		"a": map[string]any{"command": bins.everything},
		"b": map[string]any{"command": bins.everything},
	}), nil)
	asked := make(chan struct{}, 1)
	release := make(chan struct{})
	defer close(release)
	cs := l.connect(t, &mcp.ClientOptions{ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
		asked <- struct{}{}
		select {
		case <-release:
		case <-ctx.Done():
		}
		return &mcp.ElicitResult{Action: "cancel"}, nil
	}})
	h, _ := l.health(t)
	a, _ := upstreamHealth(h, "a")
	if a.PID == 0 {
		t.Fatalf("health of a has no pid: %+v", a)
	}

	type outcome struct {
		res *mcp.CallToolResult
		err error
	}
	done := make(chan outcome, 1)
	go func() {
		// test_elicitation waits for the client's answer: the call is in
		// flight on a until a dies.
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "a__test_elicitation", Arguments: map[string]any{"message": "who are you?"}})
		done <- outcome{res, err}
	}()
	select {
	case <-asked:
	case o := <-done:
		t.Fatalf("the call ended before its upstream died: %v %s", o.err, resultText(o.res))
	case <-time.After(20 * time.Second):
		t.Fatalf("the upstream's elicitation never reached the client\nstderr:\n%s", l.stderr)
	}
	if err := syscall.Kill(a.PID, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		t.Fatal("the call did not end when its upstream died")
	}
	if o.err != nil {
		t.Fatalf("call: %v (want an envelope result)", o.err)
	}
	b, _ := json.Marshal(o.res.StructuredContent)
	var env gateway.Envelope
	json.Unmarshal(b, &env)
	if !o.res.IsError || env.Code != gateway.CodeUpstreamUnavailable || !env.Retryable || env.Category != gateway.CategoryUpstream {
		t.Errorf("result %s: want the upstream_unavailable envelope (retryable, category upstream)", b)
	}

	// b never noticed.
	if res := callText(t, cs, "b__test_simple_text", nil); res.IsError {
		t.Errorf("b__test_simple_text while a is down: %s", resultText(res))
	}
	// a comes back (restarted with backoff) and serves again.
	deadline := time.Now().Add(20 * time.Second)
	for {
		res := callText(t, cs, "a__test_simple_text", nil)
		if !res.IsError {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a never recovered: %s", resultText(res))
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Serving once a's new session has been listed (it is joining until then).
	l.waitServing(t)
	h, _ = l.health(t)
	if a, _ := upstreamHealth(h, "a"); a.Restarts < 1 || a.State != upstream.StateReady || a.PID == 0 {
		t.Errorf("health of a after recovery = %+v (want ready, restarted)", a)
	}
}

// TestLaunchSecretsNeverLogged: resolved variable values appear in no
// output of the server — stderr, telemetry, /healthz, --health — even when
// upstreams fail with messages holding them.
func TestLaunchSecretsNeverLogged(t *testing.T) {
	secret := "tp-secret-" + rand.Text()
	env := []string{"TOOLPROF_TEST_SECRET=" + secret}
	file := writeLaunch(t, map[string]any{
		"a":      map[string]any{"command": bins.everything, "env": map[string]string{"API_TOKEN": "${TOOLPROF_TEST_SECRET}"}},
		"broken": map[string]any{"command": "/nonexistent/${TOOLPROF_TEST_SECRET}/server"},
		"remote": map[string]any{"type": "http", "url": "http://127.0.0.1:1/${TOOLPROF_TEST_SECRET}", "headers": map[string]string{"Authorization": "Bearer ${TOOLPROF_TEST_SECRET}"}},
	})
	l := startLaunch(t, file, env)
	cs := l.connect(t, nil)
	callText(t, cs, "a__test_simple_text", map[string]any{})
	h, healthz := l.health(t)
	code, healthOut, healthErr := runServer(t, env, append(launchArgs(t, filepath.Join(t.TempDir(), "tel")), "--health", "--launch", file)...)
	if code != 0 {
		t.Fatalf("--health exit %d:\n%s", code, healthErr)
	}
	var printed gateway.Health
	if err := json.Unmarshal([]byte(healthOut), &printed); err != nil {
		t.Fatalf("--health output %q: %v", healthOut, err)
	}
	if len(printed.Upstreams) != 3 {
		t.Errorf("--health shows upstreams %+v, want a, broken and remote", printed.Upstreams)
	}
	cs.Close()
	if err := l.stop(); err != nil {
		t.Fatal(err)
	}
	// The failures happened and were reported, so there was something to leak.
	if b, _ := upstreamHealth(h, "broken"); b.State != upstream.StateDown || !strings.Contains(b.LastError, "<redacted>") {
		t.Errorf("health of broken = %+v: want down with the value redacted", b)
	}
	for name, out := range map[string]string{"stderr": l.stderr.String(), "/healthz": healthz, "--health": healthOut, "--health stderr": healthErr} {
		if strings.Contains(out, secret) {
			t.Errorf("%s holds the secret:\n%s", name, out)
		}
	}
	if !strings.Contains(l.stderr.String(), `upstream "broken" did not start`) {
		t.Errorf("stderr does not report broken:\n%s", l.stderr)
	}
	assertNotStored(t, l.telemetry, secret)
}

// TestToolListChangedReachesClients: the upstream's
// notifications/tools/list_changed updates the served list and reaches a
// connected client as notifications/tools/list_changed.
func TestToolListChangedReachesClients(t *testing.T) {
	const transient = "__transient_tool_for_list_changed" // what test_trigger_tool_change adds
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			changed := make(chan struct{}, 8)
			dir := t.TempDir()
			args := launchArgs(t, filepath.Join(dir, "tel"))
			var transport mcp.Transport
			stderr := &syncbuf.Buffer{}
			cmd := exec.Command(bins.server)
			if m == overHTTP {
				args = append(args, "--http", "127.0.0.1:0")
			}
			cmd.Args = append(append([]string{bins.server}, args...), "--", bins.everything)
			switch m {
			case overStdio:
				cmd.Stderr = stderr
				transport = &mcp.CommandTransport{Command: cmd}
			case overHTTP:
				base, _ := startHTTP(t, cmd, stderr)
				transport = &mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1}
			}
			client := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
				ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} },
			})
			cs, err := client.Connect(context.Background(), transport, nil)
			if err != nil {
				t.Fatalf("connect: %v\n%s", err, stderr)
			}
			defer cs.Close()
			if slices.Contains(listedNames(t, cs), transient) {
				t.Fatalf("%s listed before the change", transient)
			}
			callText(t, cs, "test_trigger_tool_change", map[string]any{})
			select {
			case <-changed:
			case <-time.After(20 * time.Second):
				t.Fatalf("no notifications/tools/list_changed reached the client\nstderr:\n%s", stderr)
			}
			if !slices.Contains(listedNames(t, cs), transient) {
				t.Errorf("%s not listed after the change", transient)
			}
			if res := callText(t, cs, transient, map[string]any{}); res.IsError {
				t.Errorf("the new tool is not callable: %s", resultText(res))
			}
		})
	}
}

// TestRealNPMServersThroughGateway: the pinned reference servers
// (@modelcontextprotocol/server-filesystem and server-memory, installed in
// e2e/node_modules by make e2e-deps, which make test runs first) behind one
// gateway, called by a client through it.
func TestRealNPMServersThroughGateway(t *testing.T) {
	bin, err := filepath.Abs(filepath.Join("..", "..", "e2e", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "mcp-server-memory")); err != nil {
		t.Skipf("e2e/node_modules is absent (run make e2e-deps to install the pinned npm servers): %v", err)
	}
	data := t.TempDir()
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	file := writeLaunch(t, map[string]any{
		"fs":     map[string]any{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{data}},
		"memory": map[string]any{"command": filepath.Join(bin, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": "${TOOLPROF_TEST_MEMORY}"}},
	})
	l := startLaunch(t, file, []string{"TOOLPROF_TEST_MEMORY=" + memory}, "--require-all")
	cs := l.connect(t, nil)
	names := listedNames(t, cs)
	for _, want := range []string{"fs__write_file", "fs__read_text_file", "memory__create_entities", "memory__open_nodes"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %q lack %s", names, want)
		}
	}
	target := filepath.Join(data, "note.txt")
	if res := callText(t, cs, "fs__write_file", map[string]any{"path": target, "content": "written through toolprof"}); res.IsError {
		t.Fatalf("fs__write_file: %s", resultText(res))
	}
	if b, err := os.ReadFile(target); err != nil || string(b) != "written through toolprof" {
		t.Errorf("file on disk = %q, %v", b, err)
	}
	if res := callText(t, cs, "memory__create_entities", map[string]any{"entities": []any{
		map[string]any{"name": "toolprof", "entityType": "project", "observations": []string{"fronts MCP servers"}},
	}}); res.IsError {
		t.Fatalf("memory__create_entities: %s", resultText(res))
	}
	res := callText(t, cs, "memory__open_nodes", map[string]any{"names": []string{"toolprof"}})
	if res.IsError || !strings.Contains(resultText(res), "fronts MCP servers") {
		t.Errorf("memory__open_nodes = %s", resultText(res))
	}
}

// TestLaunchStreamableHTTPUpstream: a "type": "http" entry (with a header
// taking a ${VAR}) is reached over streamable HTTP and served beside a stdio
// one. That the headers arrive is upstream's test.
func TestLaunchStreamableHTTPUpstream(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	remote := exec.Command(bins.everything, "-http", addr, "-stateless=false")
	remote.Stderr = &syncbuf.Buffer{}
	if err := remote.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { remote.Process.Kill(); remote.Wait() })
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("everything-server -http %s never listened", addr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	file := writeLaunch(t, map[string]any{
		"local":  map[string]any{"command": bins.everything},
		"remote": map[string]any{"type": "http", "url": "http://" + addr + "/mcp", "headers": map[string]string{"X-Toolprof-Test": "${TOOLPROF_TEST_HEADER}"}},
	})
	l := startLaunch(t, file, []string{"TOOLPROF_TEST_HEADER=from-env"}, "--require-all")
	cs := l.connect(t, nil)
	names := listedNames(t, cs)
	if !slices.Contains(names, "remote__test_simple_text") || !slices.Contains(names, "local__test_simple_text") {
		t.Fatalf("tools %q: want both servers' tools", names)
	}
	res := callText(t, cs, "remote__test_simple_text", map[string]any{})
	if res.IsError || !strings.Contains(resultText(res), "test") {
		t.Errorf("remote__test_simple_text = %s", resultText(res))
	}
	h, _ := l.health(t)
	if r, _ := upstreamHealth(h, "remote"); r.State != upstream.StateReady || r.Transport != "streamable_http" {
		t.Errorf("health of remote = %+v", r)
	}
}

// TestLaunchResultsRelayedFaithfully: through the gateway a tool result is
// what the same call straight to the upstream returns: every content type
// the everything-server has (text, image, audio, embedded resource, a mix),
// isError, structuredContent and _meta.
func TestLaunchResultsRelayedFaithfully(t *testing.T) {
	l := startLaunch(t, writeLaunch(t, map[string]any{"a": map[string]any{"command": bins.everything}}), nil)
	cs := l.connect(t, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bins.everything)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	sawError, kinds := false, map[string]bool{}
	for _, tool := range []string{"test_simple_text", "test_image_content", "test_audio_content", "test_embedded_resource", "test_multiple_content_types", "test_error_handling"} {
		want, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}})
		if err != nil {
			t.Fatalf("%s straight: %v", tool, err)
		}
		got := callText(t, cs, tool, map[string]any{})
		gb, _ := json.Marshal(got)
		wb, _ := json.Marshal(want)
		if string(gb) != string(wb) {
			t.Errorf("%s through the gateway:\n%s\nstraight:\n%s", tool, gb, wb)
		}
		sawError = sawError || got.IsError
		for _, c := range got.Content {
			kinds[fmt.Sprintf("%T", c)] = true
		}
	}
	// The comparison covered what it claims to.
	if !sawError || len(kinds) != 4 {
		t.Errorf("isError seen %v, content kinds %v: want isError and text, image, audio, embedded resource", sawError, kinds)
	}
	// Arguments reach the upstream as a direct call's do:
	// json_schema_2020_12_tool answers with the arguments it received (after
	// its SDK's validation; byte-exact forwarding is upstream.TestCallFidelity).
	for _, args := range []string{
		`{"name":"Ada","contactMethod":"email","email":"ada@example.com"}`,
		`{"email":"x@y.z","address":{"street":"Rue \u00e9","city":"P"},"name":"B\"q"}`,
	} {
		params := &mcp.CallToolParams{Name: "json_schema_2020_12_tool", Arguments: json.RawMessage(args)}
		want, err := direct.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cs.CallTool(ctx, params)
		if err != nil {
			t.Fatal(err)
		}
		if g, w := resultText(got), resultText(want); g != w || !strings.Contains(w, "called with: {") {
			t.Errorf("arguments %s: upstream saw\n%s\nthrough the gateway, straight\n%s", args, g, w)
		}
	}
}

// TestLaunchSeparator: the launch file's "separator" names the served tools
// and routes calls by them.
func TestLaunchSeparator(t *testing.T) {
	b, _ := json.Marshal(map[string]any{"separator": ".", "mcpServers": map[string]any{
		"a": map[string]any{"command": bins.everything},
		"b": map[string]any{"command": bins.everything},
	}})
	file := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(file, b, 0o644); err != nil {
		t.Fatal(err)
	}
	cs := startLaunch(t, file, nil).connect(t, nil)
	names := listedNames(t, cs)
	if !slices.Contains(names, "a.test_simple_text") || !slices.Contains(names, "b.test_simple_text") || slices.ContainsFunc(names, func(n string) bool { return strings.Contains(n, "__") }) {
		t.Errorf("tools = %q, want every name as SERVER.TOOL", names)
	}
	if res := callText(t, cs, "b.test_simple_text", nil); res.IsError {
		t.Errorf("b.test_simple_text: %s", resultText(res))
	}
}

// TestLaunchHangingUpstreamDoesNotHoldStartup: an upstream that never
// answers initialize (sleep, for longer than the test may run) holds up
// neither the listener nor the other upstream: the gateway serves the
// everything-server's tools while health shows the other connecting.
func TestLaunchHangingUpstreamDoesNotHoldStartup(t *testing.T) {
	file := writeLaunch(t, map[string]any{
		"a":    map[string]any{"command": bins.everything},
		"mute": map[string]any{"command": "sleep", "args": []string{"60"}},
	})
	l := startLaunch(t, file, nil) // fails if not listening within its deadline, far below 60 s
	cs := l.connect(t, nil)
	var want []string
	for _, n := range sortedEverything() {
		want = append(want, "a__"+n)
	}
	if names := listedNames(t, cs); !slices.Equal(names, want) {
		t.Errorf("tools = %q, want a's: %q", names, want)
	}
	h, _ := l.health(t)
	if m, ok := upstreamHealth(h, "mute"); !ok || m.State != upstream.StateConnecting {
		t.Errorf("health of mute = %+v, want connecting", m)
	}
	if a, ok := upstreamHealth(h, "a"); !ok || a.State != upstream.StateReady {
		t.Errorf("health of a = %+v, want ready", a)
	}
	if !strings.Contains(l.stderr.String(), `upstream "mute" is still connecting`) {
		t.Errorf("stderr does not say mute is connecting:\n%s", l.stderr)
	}
	res := callText(t, cs, "mute__anything", nil)
	if !res.IsError || !strings.Contains(resultText(res), `upstream "mute" is connecting`) {
		t.Errorf("mute__anything: %s, want upstream_unavailable while connecting", resultText(res))
	}
}
