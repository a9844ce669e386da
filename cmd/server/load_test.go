package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolprof/toolprof/internal/rawmcp"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/telemetry"
)

// Load size: TOOLPROF_LOAD_SESSIONS concurrent HTTP sessions of
// TOOLPROF_LOAD_CALLS calls each, and TOOLPROF_LOAD_IDLE idle connections
// in the flood. The defaults are the CI size, run by make test with the
// race detector; make load runs 200 x 50 and 5000.
const (
	loadSessionsEnv = "TOOLPROF_LOAD_SESSIONS"
	loadCallsEnv    = "TOOLPROF_LOAD_CALLS"
	loadIdleEnv     = "TOOLPROF_LOAD_IDLE"
)

func envInt(t *testing.T, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// inProcessServer runs the server's run in this process (so that the race
// detector and goleak see its goroutines) with HTTP on 127.0.0.1:0 in front
// of the real everything-server (unless flags end with -- CMD), and returns
// its /mcp URL and a stop
// function returning run's error once it has returned.
func inProcessServer(t *testing.T, flags ...string) (string, *syncbuf.Buffer, func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stderr := &syncbuf.Buffer{}
	args := append([]string{"--http", "127.0.0.1:0"}, flags...)
	if !slices.Contains(flags, "--") {
		args = append(args, "--", bins.everything)
	}
	done := make(chan error, 1)
	go func() { done <- run(ctx, args, nil, nil, stderr) }()
	re := regexp.MustCompile(`on (http://\S+/mcp)`)
	deadline := time.Now().Add(20 * time.Second)
	var url string
	for url == "" {
		if m := re.FindStringSubmatch(stderr.String()); m != nil {
			url = m[1]
			break
		}
		select {
		case err := <-done:
			cancel()
			t.Fatalf("server returned before listening: %v\n%s", err, stderr)
		case <-time.After(10 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("server did not listen:\n%s", stderr)
		}
	}
	var once sync.Once
	var runErr error
	stop := func() error {
		once.Do(func() {
			cancel()
			runErr = <-done
		})
		return runErr
	}
	t.Cleanup(func() { stop() })
	return url, stderr, stop
}

// loadCall is the sequence each session runs: mostly calls core allows,
// and one in five refused (a tool outside core), so that both paths carry
// load.
func loadCall(i int) string {
	if i%5 == 4 {
		return "test_audio_content" // not in core: tool_not_in_profile
	}
	return "test_simple_text"
}

func TestLoad(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	sessions := envInt(t, loadSessionsEnv, 20)
	calls := envInt(t, loadCallsEnv, 10)
	dir := filepath.Join(t.TempDir(), "telemetry")
	url, stderr, stop := inProcessServer(t, "--profiles", profilesFile, "--telemetry", dir, "--replica", "load")

	httpTransport := &http.Transport{MaxIdleConnsPerHost: sessions}
	defer httpTransport.CloseIdleConnections()
	client := &http.Client{Transport: httpTransport}
	latencies := make([][]time.Duration, sessions)
	errs := make(chan error, sessions)
	var wg sync.WaitGroup
	start := time.Now()
	for s := range sessions {
		wg.Go(func() {
			ctx := context.Background()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "load", Version: strconv.Itoa(s)}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
			if err != nil {
				errs <- fmt.Errorf("session %d: connect: %w", s, err)
				return
			}
			defer cs.Close()
			for i := range calls {
				t0 := time.Now()
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: loadCall(i), Arguments: map[string]any{"i": i}})
				latencies[s] = append(latencies[s], time.Since(t0))
				if err != nil {
					errs <- fmt.Errorf("session %d call %d: %w", s, i, err)
					return
				}
				if want := i%5 == 4; res.IsError != want {
					errs <- fmt.Errorf("session %d call %d (%s): isError %v, want %v", s, i, loadCall(i), res.IsError, want)
					return
				}
			}
		})
	}
	wg.Wait()
	elapsed := time.Since(start)
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	httpTransport.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("server: %v\n%s", err, stderr)
	}

	all := slices.Concat(latencies...)
	slices.Sort(all)
	made := len(all)
	if made != sessions*calls {
		t.Fatalf("%d calls made, want %d", made, sessions*calls)
	}
	pct := func(p float64) time.Duration { return all[min(len(all)-1, int(p*float64(len(all))))] }
	t.Logf("load: %d sessions x %d calls = %d calls in %v: p50 %v, p99 %v, max %v, %.0f calls/s",
		sessions, calls, made, elapsed.Round(time.Millisecond), pct(0.50), pct(0.99), all[len(all)-1], float64(made)/elapsed.Seconds())

	recSessions, recCalls, err := telemetry.ReadAll(context.Background(), []string{dir}, telemetry.Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recCalls) != made {
		t.Errorf("%d calls recorded, %d made", len(recCalls), made)
	}
	if len(recSessions) != sessions {
		t.Errorf("%d sessions recorded, want %d", len(recSessions), sessions)
	}
	perSession := map[string]int{}
	for _, c := range recCalls {
		perSession[c.Session]++
	}
	for _, s := range recSessions {
		if s.End.IsZero() || perSession[s.ID] != calls {
			t.Errorf("session %s: end %v, %d calls recorded, want ended with %d", s.ID, s.End, perSession[s.ID], calls)
		}
	}
}

// An idle-connection flood: TOOLPROF_LOAD_IDLE connections that each send
// one request and then hold their connection open, as many as the
// gateway's default --max-connections and beyond at make load's size.
// A well-behaved session calls before and while they are held; all its
// calls succeed. The ratio of its p50 latency with the flood to without,
// in the same run, is logged.
func TestLoadIdleFlood(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	idle := envInt(t, loadIdleEnv, 50)
	calls := envInt(t, loadCallsEnv, 10)
	dir := filepath.Join(t.TempDir(), "telemetry")
	mcpURL, stderr, stop := inProcessServer(t, "--profiles", profilesFile, "--telemetry", dir, "--replica", "flood")
	u, err := url.Parse(mcpURL)
	if err != nil {
		t.Fatal(err)
	}

	httpTransport := &http.Transport{}
	defer httpTransport.CloseIdleConnections()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "well-behaved"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: mcpURL, HTTPClient: &http.Client{Transport: httpTransport}, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	p50 := func(phase string) time.Duration {
		var lat []time.Duration
		for i := range calls {
			t0 := time.Now()
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{"i": i}})
			lat = append(lat, time.Since(t0))
			if err != nil || res.IsError {
				t.Fatalf("%s: call %d: %v %+v", phase, i, err, res)
			}
		}
		slices.Sort(lat)
		return lat[len(lat)/2]
	}
	p50("warm-up")
	unloaded := p50("unloaded")

	var held []net.Conn
	defer func() {
		for _, c := range held {
			c.Close()
		}
	}()
	failed := 0
	flood := time.Now()
	for range idle {
		c, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatalf("flood connection %d: %v", len(held), err)
		}
		held = append(held, c)
		c.SetDeadline(time.Now().Add(30 * time.Second))
		fmt.Fprintf(c, "GET /healthz HTTP/1.1\r\nHost: %s\r\n\r\n", u.Host)
		resp, err := http.ReadResponse(bufio.NewReader(c), nil)
		if err != nil {
			failed++
			continue
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	floodTime := time.Since(flood)
	loaded := p50("flooded")
	t.Logf("idle flood: %d idle connections opened in %v (--max-connections %d, %d unanswered); well-behaved session's p50 over %d calls: %v unloaded, %v flooded, ratio %.2f",
		idle, floodTime.Round(time.Millisecond), defaultMaxConnections, failed, calls, unloaded, loaded, float64(loaded)/float64(unloaded))
	if failed > 0 {
		t.Errorf("%d of %d flood connections got no answer to their one request", failed, idle)
	}

	cs.Close()
	httpTransport.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("server: %v\n%s", err, stderr)
	}
}

// loadFloodEnv sizes the batch flood: one 2025-03-26 HTTP session posts a
// batch of that many tools/call (make load: 30,000).
const loadFloodEnv = "TOOLPROF_LOAD_FLOOD"

// rssKB is this process's resident set (the in-process server's too).
func rssKB() int {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			n, _ := strconv.Atoi(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")))
			return n
		}
	}
	return 0
}

// p50 of ds (sorted in place).
func p50(ds []time.Duration) time.Duration {
	slices.Sort(ds)
	return ds[len(ds)/2]
}

// TestLoadBatchFlood: one session's batch of thousands of calls is answered
// (those over --max-session-calls with busy) while another session's calls
// go on. It reports the other session's p50 during the flood against its
// p50 unloaded, and the RSS, as figures; it asserts no time.
func TestLoadBatchFlood(t *testing.T) {
	flood := envInt(t, loadFloodEnv, 2000)
	url, stderr, stop := inProcessServer(t, "--profiles", profilesFile, "--telemetry", filepath.Join(t.TempDir(), "telemetry"))
	defer func() {
		if err := stop(); err != nil {
			t.Errorf("server: %v\n%s", err, stderr)
		}
	}()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "victim", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	call := func() time.Duration {
		t0 := time.Now()
		if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
			t.Fatalf("victim call: %v", err)
		}
		return time.Since(t0)
	}
	var unloaded []time.Duration
	for range 30 {
		unloaded = append(unloaded, call())
	}

	// The flooding session: raw HTTP at 2025-03-26, whose batches MCP allows.
	_, session, body := postVersioned(t, url, "", "", `{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-03-26","capabilities":{},"clientInfo":{"name":"flood","version":"1"}}}`)
	if session == "" {
		t.Fatalf("flood initialize: %s", body)
	}
	postVersioned(t, url, session, "2025-03-26", `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	var batch strings.Builder
	batch.WriteByte('[')
	for i := range flood {
		if i > 0 {
			batch.WriteByte(',')
		}
		fmt.Fprintf(&batch, `{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`, i+1)
	}
	batch.WriteByte(']')
	rssBefore := rssKB()
	done := make(chan string, 1)
	go func() {
		_, _, b := postVersioned(t, url, session, "2025-03-26", batch.String())
		done <- b
	}()
	var during []time.Duration
	var answer string
	for answer == "" {
		during = append(during, call())
		select {
		case answer = <-done:
		default:
		}
	}
	for len(during) < 5 {
		during = append(during, call()) // too few to compare: the flood was shorter than a call
	}
	rssAfter := rssKB()
	answered := strings.Count(answer, `"jsonrpc":"2.0"`)
	busy := strings.Count(answer, `"structuredContent":{"code":"busy"`)
	if answered != flood {
		t.Errorf("flood of %d calls: %d answers", flood, answered)
	}
	if flood > 32 && busy == 0 {
		t.Errorf("flood of %d calls on one session: none answered busy (--max-session-calls 32)", flood)
	}
	base, loaded := p50(unloaded), p50(during)
	t.Logf("batch flood: %d calls in one batch, %d answered busy; other session p50 %v unloaded, %v during the flood (%d calls): ratio %.2f; RSS %d MB before, %d MB after",
		flood, busy, base, loaded, len(during), float64(loaded)/float64(base), rssBefore/1024, rssAfter/1024)
}

// postVersioned is one raw streamable-HTTP POST (session and version "" leave
// their headers out); it returns the status, the session header and the
// body.
func postVersioned(t *testing.T, url, session, version, body string) (int, string, string) {
	t.Helper()
	status, id, answer, err := rawmcp.Post(context.Background(), url, session, version, body)
	if err != nil {
		t.Error(err) // called from goroutines too
		return 0, "", ""
	}
	return status, id, answer
}
