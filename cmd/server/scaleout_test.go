package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/telemetry"
)

// replica is one gateway process of a scale-out test.
type replica struct {
	base      string // http://127.0.0.1:PORT
	telemetry string
	stop      func() error
}

// startReplicas runs n built servers over HTTP on loopback ports, each with
// its own telemetry directory and replica name and the tests' shared
// cursor key, serving the test profiles with flags.
func startReplicas(tb testing.TB, n int, flags ...string) []replica {
	tb.Helper()
	reps := make([]replica, n)
	for i := range reps {
		dir := tb.TempDir()
		reps[i].telemetry = filepath.Join(dir, "telemetry")
		args := append([]string{"--telemetry", reps[i].telemetry, "--replica", fmt.Sprintf("r%d", i+1),
			"--profiles", profilesFile, "--http", "127.0.0.1:0"}, flags...)
		cmd := exec.Command(bins.server, append(args, upstreamArgs(filepath.Join(dir, "upstream.log"))...)...)
		cmd.Env = append(os.Environ(), "TOOLPROF_CURSOR_KEY="+cursorKeyHex)
		reps[i].base, reps[i].stop = startHTTP(tb, cmd, &syncbuf.Buffer{})
	}
	return reps
}

// nginxPath is the nginx binary, "" when none is installed.
func nginxPath() string {
	if p, err := exec.LookPath("nginx"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/nginx"); err == nil {
		return "/usr/sbin/nginx"
	}
	return ""
}

// skipWithoutNginx skips tb when nginx is not installed.
func skipWithoutNginx(tb testing.TB) string {
	tb.Helper()
	p := nginxPath()
	if p == "" {
		tb.Skip("nginx is not installed (apt-get install -y nginx; .ci/run installs it): the scale-out test runs the replicas behind it")
	}
	return p
}

// nginxConf is the load balancer of the scale-out tests, the shape
// docs/operating.md recommends: round-robin over the replicas, no
// stickiness, HTTP/1.1 with kept-alive upstream connections, and no
// buffering, so that SSE responses stream. One worker keeps the
// round-robin order exact.
const nginxConf = `worker_processes 1;
error_log error.log warn;
pid nginx.pid;
events { worker_connections 256; }
http {
	access_log off;
	client_body_temp_path tmp/body;
	proxy_temp_path tmp/proxy;
	fastcgi_temp_path tmp/fastcgi;
	uwsgi_temp_path tmp/uwsgi;
	scgi_temp_path tmp/scgi;
	upstream toolprof {
%s		keepalive 16;
	}
	server {
		listen %s;
		location / {
			proxy_pass http://toolprof;
			proxy_http_version 1.1;
			proxy_set_header Connection "";
			proxy_set_header Host $http_host;
			proxy_buffering off;
			proxy_request_buffering off;
			proxy_cache off;
			proxy_read_timeout 1h;
		}
	}
}
`

// startNginx runs nginx (not as a daemon, a child of the test) in front of
// reps, and returns its base URL.
func startNginx(tb testing.TB, nginx string, reps []replica) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "tmp"), 0o755); err != nil {
		tb.Fatal(err)
	}
	var servers strings.Builder
	for _, r := range reps {
		u, err := url.Parse(r.base)
		if err != nil {
			tb.Fatal(err)
		}
		fmt.Fprintf(&servers, "\t\tserver %s;\n", u.Host)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close() // nginx binds it next
	if err := os.WriteFile(filepath.Join(dir, "nginx.conf"), fmt.Appendf(nil, nginxConf, servers.String(), addr), 0o644); err != nil {
		tb.Fatal(err)
	}
	var out syncbuf.Buffer
	cmd := exec.Command(nginx, "-p", dir, "-c", "nginx.conf", "-e", "error.log", "-g", "daemon off;")
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tb.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGQUIT) // graceful: workers finish their requests
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-exited
		}
	})
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		select {
		case err := <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "error.log"))
			tb.Fatalf("nginx exited: %v\n%s%s", err, &out, log)
		default:
		}
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return "http://" + addr
		}
	}
	tb.Fatalf("nginx did not listen on %s:\n%s", addr, &out)
	return ""
}

// traceparent is a W3C traceparent of trace id trace.
func traceparent(trace string) mcp.Meta {
	return mcp.Meta{"traceparent": "00-" + trace + "-00f067aa0ba902b7-01"}
}

// connectHTTP connects a go-sdk client named name to endpoint at protocol.
func connectHTTP(tb testing.TB, endpoint, name, protocol string) *mcp.ClientSession {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: name, Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: endpoint, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		tb.Fatalf("connect %s: %v", endpoint, err)
	}
	tb.Cleanup(func() { cs.Close() })
	return cs
}

// TestScaleOutBehindNginx: three replicas behind nginx (round-robin, no
// stickiness) serve 2026-07-28 clients as one server would. Each client
// pages tools/list two tools at a time, so consecutive pages (and the
// cursor) cross replicas, and calls 100 times, a quarter of them a tool
// outside its profile; every call is answered as the profile says.
// profiler stats over the three replicas' directories counts exactly the
// calls made, and each client's calls (recorded by all three replicas) in
// one usage session, by its traceparent.
func TestScaleOutBehindNginx(t *testing.T) {
	nginx := skipWithoutNginx(t)
	reps := startReplicas(t, 3, "--page-size", "2")
	front := startNginx(t, nginx, reps)
	standard := []string{"json_schema_2020_12_tool", "test_audio_content", "test_embedded_resource", "test_error_handling",
		"test_image_content", "test_multiple_content_types", "test_simple_text", "test_tool_with_progress"}
	const callsEach = 100
	clients := []struct{ name, trace string }{
		{"agent-a", strings.Repeat("a1", 16)},
		{"agent-b", strings.Repeat("b2", 16)},
		{"agent-c", strings.Repeat("c3", 16)},
	}
	ctx := context.Background()
	sessions := make([]*mcp.ClientSession, len(clients))
	for i, c := range clients {
		cs := connectHTTP(t, front+"/mcp/standard", c.name, "2026-07-28")
		if got := cs.InitializeResult().ProtocolVersion; got != "2026-07-28" {
			t.Fatalf("%s negotiated %s, want 2026-07-28", c.name, got)
		}
		sessions[i] = cs
		// Listed one client at a time: its consecutive pages go to
		// consecutive replicas.
		var names []string
		pages := 0
		for cursor := gateway.StartCursor; cursor != ""; pages++ {
			res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor, Meta: traceparent(c.trace)})
			if err != nil {
				t.Fatalf("%s page %d: %v", c.name, pages+1, err)
			}
			for _, tl := range res.Tools {
				names = append(names, tl.Name)
			}
			cursor = res.NextCursor
		}
		if !slices.Equal(names, standard) || pages != 4 {
			t.Fatalf("%s listed %v in %d pages, want standard's 8 tools in 4", c.name, names, pages)
		}
	}

	var wg sync.WaitGroup
	for i, c := range clients {
		wg.Go(func() {
			for n := range callsEach {
				tool := "test_simple_text"
				if n%4 == 3 {
					tool = "test_elicitation" // in full only: refused by standard
				}
				res, err := sessions[i].CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{}, Meta: traceparent(c.trace)})
				if err != nil {
					t.Errorf("%s call %d (%s): %v", c.name, n, tool, err)
					return
				}
				if tool == "test_simple_text" {
					if res.IsError || len(res.Content) == 0 {
						t.Errorf("%s call %d: %+v, want the upstream's answer", c.name, n, res)
					}
					continue
				}
				var env gateway.Envelope
				b, _ := json.Marshal(res.StructuredContent)
				if err := json.Unmarshal(b, &env); err != nil || !res.IsError || env.Code != gateway.CodeToolNotInProfile {
					t.Errorf("%s call %d: %+v, want tool_not_in_profile", c.name, n, res)
				}
			}
		})
	}
	wg.Wait()
	for _, cs := range sessions {
		cs.Close()
	}
	var dirs []string
	for i, r := range reps {
		if err := r.stop(); err != nil {
			t.Fatalf("replica r%d: %v", i+1, err)
		}
		dirs = append(dirs, r.telemetry)
		// Each replica served some pages and calls of every client.
		got, calls, err := telemetry.ReadAll(ctx, []string{r.telemetry}, telemetry.Window{})
		if err != nil {
			t.Fatal(err)
		}
		pages := 0
		for _, s := range got {
			pages += s.ToolsListPages
		}
		if len(got) != len(clients) || pages == 0 || len(calls) == 0 {
			t.Errorf("replica r%d recorded %d sessions, %d pages, %d calls: want a share of every client's", i+1, len(got), pages, len(calls))
		}
	}
	if t.Failed() {
		t.FailNow()
	}

	profiler := filepath.Join(t.TempDir(), "profiler")
	if err := testupstream.Build("github.com/toolprof/toolprof/cmd/profiler", profiler); err != nil {
		t.Fatal(err)
	}
	args := []string{"stats", "--format", "json"}
	for _, d := range dirs {
		args = append(args, "--telemetry", d)
	}
	out, err := exec.Command(profiler, args...).Output()
	if err != nil {
		t.Fatalf("profiler %s: %v", strings.Join(args, " "), err)
	}
	var st telemetry.Stats
	if err := json.Unmarshal(out, &st); err != nil {
		t.Fatalf("%v in %s", err, out)
	}
	total := len(clients) * callsEach
	if st.Calls != total || st.Sessions != len(clients) {
		t.Errorf("stats: %d calls in %d sessions, want %d in %d", st.Calls, st.Sessions, total, len(clients))
	}
	if got, want := fmt.Sprint(st.Attribution), fmt.Sprintf("[{trace %d %d}]", total, len(clients)); got != want {
		t.Errorf("attribution %s, want %s", got, want)
	}
	var clientRows []string
	for _, r := range st.Clients {
		clientRows = append(clientRows, fmt.Sprintf("%s:%d/%d", r.Name, r.Calls, r.Sessions))
	}
	sort.Strings(clientRows)
	if got := strings.Join(clientRows, " "); got != "agent-a 1:100/1 agent-b 1:100/1 agent-c 1:100/1" {
		t.Errorf("clients %s: want each client's 100 calls in one session", got)
	}

	merged, calls, err := telemetry.ReadAll(ctx, dirs, telemetry.Window{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range merged {
		var seqs []uint64
		for _, c := range calls {
			if c.Session == s.ID {
				seqs = append(seqs, c.Seq)
			}
		}
		if len(seqs) != callsEach || seqs[0] != 1 || seqs[callsEach-1] != callsEach || s.ToolsListPages != 4 {
			t.Errorf("usage session %s of %s: %d calls numbered %v..., %d pages; want %d numbered 1..%d and 4 pages",
				s.ID, s.ClientName, len(seqs), seqs[:min(len(seqs), 3)], s.ToolsListPages, callsEach, callsEach)
		}
	}
}

// BenchmarkScaleOutCall measures a cheap tools/call (test_simple_text,
// 2026-07-28) through nginx and three replicas against the same call to
// one replica directly, alternating the two so that both see the same
// machine, and reports the ratio of their medians (p50-ratio).
func BenchmarkScaleOutCall(b *testing.B) {
	nginx := skipWithoutNginx(b)
	reps := startReplicas(b, 3)
	front := startNginx(b, nginx, reps)
	direct := connectHTTP(b, reps[0].base+"/mcp/core", "bench-direct", "2026-07-28")
	through := connectHTTP(b, front+"/mcp/core", "bench-through", "2026-07-28")
	ctx := context.Background()
	call := func(cs *mcp.ClientSession) time.Duration {
		start := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			b.Fatalf("call: %v %+v", err, res)
		}
		return time.Since(start)
	}
	for range 20 { // warm the connections on both paths
		call(direct)
		call(through)
	}
	var d, n []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		d = append(d, call(direct))
		n = append(n, call(through))
	}
	b.StopTimer()
	p50 := func(ds []time.Duration) time.Duration {
		slices.Sort(ds)
		return ds[len(ds)/2]
	}
	pd, pn := p50(d), p50(n)
	b.ReportMetric(float64(pd.Nanoseconds()), "direct-p50-ns")
	b.ReportMetric(float64(pn.Nanoseconds()), "nginx-p50-ns")
	b.ReportMetric(float64(pn)/float64(pd), "p50-ratio")
}
