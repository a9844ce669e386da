package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/replay"
	"github.com/toolprof/toolprof/telemetry"
)

// replayProfiles serves core = {test_simple_text, test_error_handling,
// json_schema_2020_12_tool} by default; full holds every tool.
const replayProfiles = `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["json_schema_2020_12_tool", "test_error_handling", "test_simple_text"]
`

// replayTrace has one call of each outcome under core. The schema tool is
// called twice: with arguments its schema accepts (ok, which shows the
// trace's arguments travel) and with none (the upstream refuses them:
// tool_error).
const replayTrace = `{"session": "s1", "client": {"name": "replay-test-client", "version": "9.8.7"}, "started": "2026-11-01T10:00:00Z", "calls": [{"tool": "test_simple_text"}, {"tool": "json_schema_2020_12_tool", "arguments": {"name": "Ada", "contactMethod": "email", "email": "ada@example.com"}}, {"tool": "json_schema_2020_12_tool"}]}
{"session": "s2", "client": {"name": "replay-test-client", "version": "9.8.7"}, "calls": [{"tool": "test_error_handling"}, {"tool": "test_image_content"}, {"tool": "no_such_tool"}]}
{"session": "s3", "client": {"name": "other-client", "version": "1.0"}, "calls": [{"tool": "test_simple_text", "arguments": {}}]}
`

// replayUnderCore are the outcomes of replayTrace under core.
var replayUnderCore = map[string]int{replay.OK: 3, replay.ToolError: 2, replay.Denied: 1, replay.UnknownTool: 1, replay.Error: 0}

// replayUnderFull: test_image_content is allowed under full.
var replayUnderFull = map[string]int{replay.OK: 4, replay.ToolError: 2, replay.Denied: 0, replay.UnknownTool: 1, replay.Error: 0}

// replayFixture builds the gateway and the everything-server and writes the
// profiles file and the trace.
type replayFixture struct {
	server, upstream, profiles, trace string
}

func newReplayFixture(t *testing.T) replayFixture {
	t.Helper()
	dir := t.TempDir()
	f := replayFixture{
		server:   filepath.Join(dir, "server"),
		upstream: testupstream.EverythingServer(t),
		profiles: filepath.Join(dir, "profiles.generated.toml"),
		trace:    filepath.Join(dir, "trace.jsonl"),
	}
	if err := testupstream.Build("github.com/toolprof/toolprof/cmd/server", f.server); err != nil {
		t.Fatal(err)
	}
	for path, content := range map[string]string{f.profiles: replayProfiles, f.trace: replayTrace} {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return f
}

// startHTTPGateway runs the built gateway on a free loopback port and
// returns its /mcp endpoint; the gateway is stopped with SIGTERM at cleanup.
func startHTTPGateway(t *testing.T, f replayFixture, telemetryDir string) string {
	t.Helper()
	cmd := exec.Command(f.server, "--http", "127.0.0.1:0", "--profiles", f.profiles, "--telemetry", telemetryDir, "--", f.upstream)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan error, 1)
	t.Cleanup(func() {
		cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
			t.Error("gateway did not stop within 10 s of SIGINT")
		}
	})
	found := make(chan string, 1)
	go func() {
		addr := regexp.MustCompile(`on (http://127\.0\.0\.1:\d+/mcp)$`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := addr.FindStringSubmatch(sc.Text()); m != nil {
				found <- m[1]
			}
		}
		exited <- cmd.Wait()
	}()
	select {
	case ep := <-found:
		return ep
	case <-time.After(30 * time.Second):
		t.Fatal("gateway printed no address within 30 s")
		return ""
	}
}

func decodeReplayReport(t *testing.T, out string) replay.Report {
	t.Helper()
	var r replay.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("replay --format json output does not decode: %v\n%s", err, out)
	}
	return r
}

func assertOutcomes(t *testing.T, r replay.Report, want map[string]int) {
	t.Helper()
	for o, n := range want {
		if r.Outcomes[o] != n {
			t.Errorf("outcome %s = %d, want %d (all: %v; errors: %v)", o, r.Outcomes[o], n, r.Outcomes, r.Errors)
		}
	}
	if r.Sessions != 3 || r.SessionsRun != 3 || r.SessionErrors != 0 || r.Calls != 7 {
		t.Errorf("sessions %d run %d errors %d calls %d, want 3 3 0 7", r.Sessions, r.SessionsRun, r.SessionErrors, r.Calls)
	}
}

// recordedClients reads a telemetry directory back as a trace and returns
// each session's client and call count.
func recordedClients(t *testing.T, dir string) map[string]int {
	t.Helper()
	out, stderr, code := runProfiler(t, "export", "--telemetry", dir)
	if code != 0 {
		t.Fatalf("export: exit %d: %s", code, stderr)
	}
	sessions, _, err := telemetry.DecodeTrace(strings.NewReader(out), "export", false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, s := range sessions {
		got[s.Client.Name+" "+s.Client.Version] += len(s.Calls)
	}
	return got
}

// TestReplayAgainstGateway replays the trace through the real gateway in
// front of the real everything-server over each way of reaching it, and
// counts each outcome.
func TestReplayAgainstGateway(t *testing.T) {
	f := newReplayFixture(t)
	wantClients := map[string]int{"replay-test-client 9.8.7": 6, "other-client 1.0": 1}

	t.Run("stdio command per session", func(t *testing.T) {
		tel := t.TempDir()
		out, stderr, code := runProfiler(t, "replay", "--trace", f.trace, "--format", "json", "--concurrency", "2",
			"--", f.server, "--profiles", f.profiles, "--telemetry", tel, "--", f.upstream)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		r := decodeReplayReport(t, out)
		assertOutcomes(t, r, replayUnderCore)
		if r.DeniedCodes[gateway.CodeToolNotInProfile] != 1 {
			t.Errorf("denied codes %v, want tool_not_in_profile 1", r.DeniedCodes)
		}
		// The gateway recorded every session under the trace's client names.
		if got := recordedClients(t, tel); !mapsEqual(got, wantClients) {
			t.Errorf("recorded clients %v, want %v", got, wantClients)
		}
	})

	t.Run("stdio with --profile full", func(t *testing.T) {
		out, stderr, code := runProfiler(t, "replay", "--trace", f.trace, "--format", "json", "--profile", "full",
			"--", f.server, "--profiles", f.profiles, "--telemetry", t.TempDir(), "--", f.upstream)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		assertOutcomes(t, decodeReplayReport(t, out), replayUnderFull)
	})

	t.Run("streamable HTTP URL", func(t *testing.T) {
		tel := t.TempDir()
		endpoint := startHTTPGateway(t, f, tel)
		out, stderr, code := runProfiler(t, "replay", "--trace", f.trace, "--format", "json", "--concurrency", "3", "--url", endpoint)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		r := decodeReplayReport(t, out)
		assertOutcomes(t, r, replayUnderCore)
		if r.Target != endpoint {
			t.Errorf("target %q, want %q", r.Target, endpoint)
		}
		// --profile asks for /mcp/full.
		out, stderr, code = runProfiler(t, "replay", "--trace", f.trace, "--format", "json", "--url", endpoint, "--profile", "full")
		if code != 0 {
			t.Fatalf("--profile full: exit %d: %s", code, stderr)
		}
		r = decodeReplayReport(t, out)
		assertOutcomes(t, r, replayUnderFull)
		if r.Target != endpoint+"/full" {
			t.Errorf("target %q, want %q", r.Target, endpoint+"/full")
		}
		// The table: a row per tool and the totals.
		out, stderr, code = runProfiler(t, "replay", "--trace", f.trace, "--url", endpoint)
		if code != 0 {
			t.Fatalf("table: exit %d: %s", code, stderr)
		}
		for _, want := range []*regexp.Regexp{
			regexp.MustCompile(`(?m)^TOOL\s+CALLS\s+OK\s+TOOL_ERROR\s+DENIED\s+UNKNOWN_TOOL\s+ERROR`),
			regexp.MustCompile(`(?m)^json_schema_2020_12_tool\s+2\s+1\s+1\s+0\s+0\s+0`),
			regexp.MustCompile(`(?m)^test_image_content\s+1\s+0\s+0\s+1\s+0\s+0`),
			regexp.MustCompile(`(?m)^no_such_tool\s+1\s+0\s+0\s+0\s+1\s+0`),
			regexp.MustCompile(`(?m)^total\s+7\s+3\s+2\s+1\s+1\s+0`),
			regexp.MustCompile(`denied by code: tool_not_in_profile 1`),
			regexp.MustCompile(`3 sessions of .* replayed against ` + regexp.QuoteMeta(endpoint)),
		} {
			if !want.MatchString(out) {
				t.Errorf("table lacks %v:\n%s", want, out)
			}
		}
		// stderr is no terminal here: no progress bar is drawn into it.
		if stderr != "" {
			t.Errorf("stderr = %q, want nothing (no progress bar off a terminal)", stderr)
		}
	})

	t.Run("each session asks for the profile its trace line names", func(t *testing.T) {
		perSession := writeTemp(t, "profiles.jsonl", `{"session": "named", "profile": "full", "calls": [{"tool": "test_image_content"}]}`+"\n"+
			`{"session": "unnamed", "calls": [{"tool": "test_image_content"}]}`+"\n")
		endpoint := startHTTPGateway(t, f, t.TempDir())
		for _, c := range []struct {
			name string
			args []string
			ok   int
		}{
			{"http", []string{"--url", endpoint}, 1},
			{"http --profile core overrides", []string{"--url", endpoint, "--profile", "core"}, 0},
			{"command", []string{"--", f.server, "--profiles", f.profiles, "--telemetry", t.TempDir(), "--", f.upstream}, 1},
			{"command --profile core overrides", []string{"--profile", "core", "--", f.server, "--profiles", f.profiles, "--telemetry", t.TempDir(), "--", f.upstream}, 0},
		} {
			out, stderr, code := runProfiler(t, append([]string{"replay", "--trace", perSession, "--format", "json"}, c.args...)...)
			if code != 0 {
				t.Fatalf("%s: exit %d: %s", c.name, code, stderr)
			}
			r := decodeReplayReport(t, out)
			if r.Outcomes[replay.OK] != c.ok || r.Outcomes[replay.Denied] != 2-c.ok {
				t.Errorf("%s: outcomes %v, want %d ok and %d denied", c.name, r.Outcomes, c.ok, 2-c.ok)
			}
		}
		unknown := writeTemp(t, "unknown.jsonl", `{"session": "odd", "profile": "nosuch", "calls": [{"tool": "test_simple_text"}]}`+"\n")
		_, stderr, code := runProfiler(t, "replay", "--trace", unknown, "--url", endpoint)
		if code != 1 || !strings.Contains(stderr, "odd") || !strings.Contains(stderr, "nosuch") {
			t.Errorf("session naming an unknown profile: exit %d, stderr %q; want 1 naming the session and the profile", code, stderr)
		}
	})

	t.Run("launch document served here", func(t *testing.T) {
		pack := filepath.Join(t.TempDir(), ".mcp.json")
		doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": f.upstream}}})
		if err := os.WriteFile(pack, doc, 0o644); err != nil {
			t.Fatal(err)
		}
		before := goleak.IgnoreCurrent()
		out, stderr, code := runProfiler(t, "replay", "--trace", f.trace, "--format", "json", "--launch", pack, "--profiles", f.profiles)
		if code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		assertOutcomes(t, decodeReplayReport(t, out), replayUnderCore)
		// The gateway, its upstream and the client connections are gone.
		goleak.VerifyNone(t, before)
		_, stderr, code = runProfiler(t, "replay", "--trace", f.trace, "--launch", pack, "--profiles", f.profiles, "--profile", "nope")
		if code != 2 || !strings.Contains(stderr, `"nope"`) || !strings.Contains(stderr, "core, full") {
			t.Errorf("unknown --profile: exit %d, stderr %q; want 2 listing core, full", code, stderr)
		}
	})

	t.Run("strict", func(t *testing.T) {
		endpoint := startHTTPGateway(t, f, t.TempDir())
		_, stderr, code := runProfiler(t, "replay", "--trace", f.trace, "--url", endpoint, "--strict")
		if code != 1 || !strings.Contains(stderr, "4 of 7 calls were not ok") {
			t.Errorf("--strict with failing calls: exit %d, stderr %q; want 1 and 4 of 7", code, stderr)
		}
		okTrace := writeTemp(t, "ok.jsonl", `{"session": "a", "client": {"name": "c", "version": "1"}, "calls": [{"tool": "test_simple_text"}]}`+"\n")
		_, stderr, code = runProfiler(t, "replay", "--trace", okTrace, "--url", endpoint, "--strict")
		if code != 0 {
			t.Errorf("--strict with every call ok: exit %d: %s", code, stderr)
		}
	})

	t.Run("unreachable server", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close() // nothing listens there now
		out, stderr, code := runProfiler(t, "replay", "--trace", f.trace, "--format", "json", "--url", "http://"+addr+"/mcp")
		if code != 1 || !strings.Contains(stderr, "3 of 3 sessions could not be opened") {
			t.Fatalf("exit %d, stderr %q; want 1 and 3 of 3 sessions not opened", code, stderr)
		}
		r := decodeReplayReport(t, out)
		if r.SessionErrors != 3 || r.Outcomes[replay.Error] != 7 || len(r.Errors) != 3 {
			t.Errorf("session errors %d, error calls %d, listed %d; want 3, 7 and each session listed once", r.SessionErrors, r.Outcomes[replay.Error], len(r.Errors))
		}
		// A command that is not an MCP server: its stderr is in the error.
		_, stderr, code = runProfiler(t, "replay", "--trace", f.trace, "--", "sh", "-c", "echo not a server >&2; exit 3")
		if code != 1 || !strings.Contains(stderr, "not a server") {
			t.Errorf("broken command: exit %d, stderr %q; want 1 with the command's stderr", code, stderr)
		}
	})
}

func mapsEqual(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func TestReplayUsageErrors(t *testing.T) {
	trace := writeTemp(t, "t.jsonl", `{"session": "a", "calls": []}`+"\n")
	badTrace := writeTemp(t, "bad.jsonl", `{"session": "a", "calls": []}`+"\nnot json\n")
	arrayArgs := writeTemp(t, "args.jsonl", `{"session": "a", "calls": [{"tool": "t1", "arguments": {}}, {"tool": "t2", "arguments": [1,2]}]}`+"\n")
	for _, c := range []struct {
		name    string
		args    []string
		code    int
		message string
	}{
		{"no trace", []string{"--url", "http://127.0.0.1:1/mcp"}, 2, "--trace FILE.jsonl is required"},
		{"no server", []string{"--trace", trace}, 2, "no server: give --url URL, --launch FILE or -- CMD ARGS"},
		{"two servers", []string{"--trace", trace, "--url", "http://127.0.0.1:1/mcp", "--", "server"}, 2, "more than one server"},
		{"profiles without launch", []string{"--trace", trace, "--profiles", "p.toml", "--url", "http://127.0.0.1:1/mcp"}, 2, "--profiles applies to --launch only"},
		{"persona without launch", []string{"--trace", trace, "--persona", "dev", "--url", "http://127.0.0.1:1/mcp"}, 2, "--persona needs --launch"},
		{"zero concurrency", []string{"--trace", trace, "--concurrency", "0", "--url", "http://127.0.0.1:1/mcp"}, 2, "--concurrency 0: want at least 1"},
		{"zero timeout", []string{"--trace", trace, "--timeout", "0s", "--url", "http://127.0.0.1:1/mcp"}, 2, "--timeout 0s: want a positive duration"},
		{"bad format", []string{"--trace", trace, "--format", "xml", "--url", "http://127.0.0.1:1/mcp"}, 2, `--format "xml": want table or json`},
		{"bad url", []string{"--trace", trace, "--url", "127.0.0.1:8080"}, 2, `--url "127.0.0.1:8080": want an http(s) URL`},
		{"bad profile", []string{"--trace", trace, "--profile", "a/b", "--url", "http://127.0.0.1:1/mcp"}, 2, `--profile "a/b": want a profile name`},
		{"unknown flag", []string{"--trace", trace, "--nope"}, 2, "flag provided but not defined: -nope"},
		{"missing trace file", []string{"--trace", filepath.Join(t.TempDir(), "none.jsonl"), "--url", "http://127.0.0.1:1/mcp"}, 1, "none.jsonl: no such file"},
		{"malformed line", []string{"--trace", badTrace, "--url", "http://127.0.0.1:1/mcp"}, 1, "bad.jsonl:2: not a session object"},
		{"arguments not an object", []string{"--trace", arrayArgs, "--url", "http://127.0.0.1:1/mcp"}, 1, `args.jsonl: session "a" calls[1] (t2): "arguments" is [1,2]; want a JSON object`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, stderr, code := runProfiler(t, append([]string{"replay"}, c.args...)...)
			if code != c.code || !strings.Contains(stderr, c.message) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, c.code, c.message)
			}
		})
	}
}

// TestReplayInterrupted: a cancelled context stops feeding sessions and
// says how far it got.
func TestReplayInterrupted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	trace := writeTemp(t, "t.jsonl", `{"session": "a", "calls": [{"tool": "x"}]}`+"\n"+`{"session": "b", "calls": [{"tool": "x"}]}`+"\n")
	err := run(ctx, []string{"replay", "--trace", trace, "--url", "http://127.0.0.1:1/mcp"}, io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "interrupted after") {
		t.Errorf("err = %v, want interrupted", err)
	}
}

func TestIsTerminal(t *testing.T) {
	file, err := os.Create(filepath.Join(t.TempDir(), "log"))
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	for _, c := range []struct {
		name string
		w    io.Writer
	}{
		{"buffer", &strings.Builder{}},
		{"regular file", file},
		{"serialised regular file", &serialWriter{W: file}},
	} {
		if isTerminal(c.w) {
			t.Errorf("%s: isTerminal = true, want false", c.name)
		}
	}
}
