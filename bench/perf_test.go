package bench_test

// make perf: the performance figures of the built binaries, printed as a
// table. Not part of make test (it takes minutes, and the 1M-session runs
// need about a gigabyte of disk); every figure is measured in one run and
// the gateway's are ratios against a direct call made in the same rounds,
// beside the floor's (bin/relayfloor, a process relaying the bytes and
// nothing else):
//
//	make perf                                  # 100k and 1M sessions
//	make perf PERF_SESSIONS=100000             # the analyzer at 100k only
//
// TOOLPROF_PERF_BASE=DIR times DIR/server (another build) in the same
// rounds as the gateway, to compare builds; TOOLPROF_PERF_SESSIONS=0
// leaves the analyzer out.
//
// It prints; it asserts no time.

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/bench/sessiongen"
)

const (
	perfEnv         = "TOOLPROF_PERF"          // set to run TestPerf
	perfBinEnv      = "TOOLPROF_BIN"           // directory of server, profiler and everything-server
	perfSessionsEnv = "TOOLPROF_PERF_SESSIONS" // comma-separated session counts for the analyzer; 0 for none
	perfBaseEnv     = "TOOLPROF_PERF_BASE"     // directory of another build's server and profiler, timed in the same rounds
	perfOnlyEnv     = "TOOLPROF_PERF_ONLY"     // "analyzer" for the profiler rows alone; empty for every row
	perfRounds      = 30                       // interleaved rounds of calls, per transport
	perfRoundCalls  = 40                       // calls per side per round
	perfIdle        = 500                      // idle HTTP sessions held for the RSS figure
)

// perfRow is one line of the table.
type perfRow struct{ what, value, target string }

func TestPerf(t *testing.T) {
	if os.Getenv(perfEnv) == "" {
		t.Skipf("set %s=1 (make perf) to measure", perfEnv)
	}
	bin := os.Getenv(perfBinEnv)
	if bin == "" {
		t.Fatalf("%s: want the directory make build writes (bin/)", perfBinEnv)
	}
	for _, name := range []string{"server", "profiler", "everything-server", "relayfloor"} {
		if _, err := os.Stat(filepath.Join(bin, name)); err != nil {
			t.Fatalf("%s: %v (run make build)", perfBinEnv, err)
		}
	}
	base := os.Getenv(perfBaseEnv)
	if base != "" {
		if _, err := os.Stat(filepath.Join(base, "server")); err != nil {
			t.Fatalf("%s: %v (want the directory of another build's server)", perfBaseEnv, err)
		}
	}
	only := os.Getenv(perfOnlyEnv)
	if only != "" && only != "analyzer" {
		t.Fatalf("%s=%q: want analyzer, or empty for every row", perfOnlyEnv, only)
	}
	var rows []perfRow
	if only == "" {
		for _, w := range []perfWire{
			{"stdio", perfProtocolSessionless},
			{"stdio", perfProtocolSessions},
			{"http", perfProtocolSessionless},
			{"http", perfProtocolSessions},
		} {
			rows = append(rows, perfCalls(t, bin, base, w)...)
		}
		rows = append(rows, perfIdleSessions(t, bin)...)
	}
	sizes := []int{100_000, 1_000_000}
	if v := os.Getenv(perfSessionsEnv); v != "" {
		sizes = nil
		for _, f := range strings.Split(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 0 {
				t.Fatalf("%s=%q: want comma-separated positive session counts, or 0 for none", perfSessionsEnv, v)
			}
			if n > 0 {
				sizes = append(sizes, n)
			}
		}
	}
	rows = append(rows, perfAnalyzer(t, bin, sizes)...)
	if base != "" {
		if _, err := os.Stat(filepath.Join(base, "profiler")); err == nil {
			rows = append(rows, perfAnalyzerVersus(t, bin, base, sizes)...)
		}
	}

	tw := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "measure\tvalue\ttarget")
	for _, r := range rows {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", r.what, r.value, r.target)
	}
	tw.Flush()
}

// Protocol versions the call rows pin. 2026-07-28 is the go-sdk client's
// default; its HTTP has no sessions, and the SDK serves it only on a
// stateless handler, so each HTTP direct side runs the everything-server
// the way that serves the version timed: a client left to negotiate would
// speak 2026-07-28 to the gateway and 2025-11-25 to a stateful server, and
// the ratio would compare two protocols rather than a hop.
const (
	perfProtocolSessionless = "2026-07-28"
	perfProtocolSessions    = "2025-11-25"
)

// perfWire is what a call row times: a transport and the protocol
// version every side's client speaks on it.
type perfWire struct{ transport, protocol string }

func (w perfWire) String() string { return w.transport + " " + w.protocol }

// perfCalls times tools/call of the everything-server's test_simple_text
// through the gateway (bin/server in front of the everything-server on
// stdio) against the same client calling another everything-server
// directly, over w's transport and protocol; with base, through base's
// server too (another build, to compare builds in one run); and through
// bin/relayfloor, the floor: a process that relays the bytes and nothing
// else (stdio: a copy both ways; HTTP: httputil.ReverseProxy in front of
// another everything-server), what any proxy process costs here. Rounds
// rotate which side goes first, so load on a shared machine falls on
// every side.
func perfCalls(t *testing.T, bin, base string, w perfWire) []perfRow {
	ctx := context.Background()
	everything := filepath.Join(bin, "everything-server")
	type side struct {
		name string
		cs   *mcp.ClientSession
		pid  int // the process the client talks to
		ds   []time.Duration
		cpu  time.Duration // its CPU time over the timed calls
	}
	gateway := func(name, server string) *side {
		if w.transport == "stdio" {
			cmd := perfServerCmd(t, server, "--", everything)
			return &side{name: name, cs: perfConnect(t, &mcp.CommandTransport{Command: cmd}, w.protocol), pid: cmd.Process.Pid}
		}
		url, pid := perfStartHTTPServer(t, server)
		return &side{name: name, cs: perfConnect(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, w.protocol), pid: pid}
	}
	sides := []*side{gateway("gateway", bin)}
	switch w.transport {
	case "stdio":
		cmd := exec.Command(everything)
		sides = append(sides, &side{name: "direct", cs: perfConnect(t, &mcp.CommandTransport{Command: cmd}, w.protocol), pid: cmd.Process.Pid})
	case "http":
		url, pid := perfStartEverythingHTTP(t, bin, w.protocol)
		sides = append(sides, &side{name: "direct", cs: perfConnect(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, w.protocol), pid: pid})
	}
	if base != "" {
		sides = append(sides, gateway("base", base))
	}
	floorCS, floorPID := perfFloor(t, bin, w)
	floor := &side{name: "floor", cs: floorCS, pid: floorPID}
	sides = append(sides, floor)
	call := func(cs *mcp.ClientSession) time.Duration {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
		d := time.Since(t0)
		if err != nil || res.IsError {
			t.Fatalf("%s: test_simple_text: %v %v", w, err, res)
		}
		return d
	}
	for range perfRoundCalls { // warm every side up
		for _, s := range sides {
			call(s.cs)
		}
	}
	for r := range perfRounds {
		for i := range sides {
			s := sides[(r+i)%len(sides)]
			cpu := perfCPU(t, s.pid)
			for range perfRoundCalls {
				s.ds = append(s.ds, call(s.cs))
			}
			s.cpu += perfCPU(t, s.pid) - cpu
		}
	}
	d := sides[1]
	row := func(s *side, p float64, label, target string) perfRow {
		g, dd := pct(s.ds, p), pct(d.ds, p)
		return perfRow{fmt.Sprintf("tools/call %s %s: %s / direct", w, label, s.name), fmt.Sprintf("%.2fx (%v / %v)", ratio(g, dd), g.Round(time.Microsecond), dd.Round(time.Microsecond)), target}
	}
	rows := []perfRow{row(sides[0], 0.50, "p50", "<= 1.3x"), row(sides[0], 0.99, "p99", "<= 1.5x")}
	if base != "" {
		rows = append(rows, row(sides[2], 0.50, "p50", ""), row(sides[2], 0.99, "p99", ""))
	}
	const floorNote = "floor: what any proxy process costs here"
	rows = append(rows, row(floor, 0.50, "p50", floorNote), row(floor, 0.99, "p99", floorNote))
	// The CPU of the process each client talks to, its children apart
	// (the gateway's and the floor's upstream): steadier than a latency
	// on a shared machine, and what a hop costs the CPUs the client and
	// the upstream also need.
	var cpu []string
	for _, s := range sides {
		cpu = append(cpu, fmt.Sprintf("%s %d µs", s.name, (s.cpu/time.Duration(len(s.ds))).Microseconds()))
	}
	rows = append(rows, perfRow{fmt.Sprintf("tools/call %s: CPU per call of the process called", w), strings.Join(cpu, ", "), ""})
	return rows
}

// perfStartEverythingHTTP starts an everything-server on HTTP that serves
// protocol (stateless for 2026-07-28, stateful before) and returns its
// URL and pid; the process is stopped at cleanup.
func perfStartEverythingHTTP(t *testing.T, bin, protocol string) (string, int) {
	addr := perfFreeAddr(t)
	stateless := strconv.FormatBool(protocol >= perfProtocolSessionless)
	cmd := exec.Command(filepath.Join(bin, "everything-server"), "-http", addr, "-stateless="+stateless)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	perfWaitListening(t, addr)
	return "http://" + addr + "/", cmd.Process.Pid
}

// perfFloor connects to an everything-server through bin/relayfloor over
// w: on stdio the relay starts the server and copies its stdin and
// stdout; on HTTP it proxies to a server of its own.
func perfFloor(t *testing.T, bin string, w perfWire) (*mcp.ClientSession, int) {
	relay, everything := filepath.Join(bin, "relayfloor"), filepath.Join(bin, "everything-server")
	if w.transport == "stdio" {
		cmd := exec.Command(relay, "--", everything)
		return perfConnect(t, &mcp.CommandTransport{Command: cmd}, w.protocol), cmd.Process.Pid
	}
	upstream, _ := perfStartEverythingHTTP(t, bin, w.protocol)
	url, pid := perfStartListener(t, exec.Command(relay, "-http", "127.0.0.1:0", "-upstream", upstream), regexp.MustCompile(`listening on (http://\S+/)`))
	return perfConnect(t, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, w.protocol), pid
}

func pct(ds []time.Duration, p float64) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)-1, int(p*float64(len(s))))]
}

func ratio(a, b time.Duration) float64 { return float64(a) / float64(b) }

// perfServerCmd is bin/server with args, run in a temporary directory so
// its telemetry and default profiles file are its own.
func perfServerCmd(t *testing.T, bin string, args ...string) *exec.Cmd {
	cmd := exec.Command(filepath.Join(bin, "server"), args...)
	cmd.Dir = t.TempDir()
	return cmd
}

// perfConnect connects a client speaking protocol over tr, and fails
// unless the server agreed to it: a side on another version would time
// another protocol.
func perfConnect(t *testing.T, tr mcp.Transport, protocol string) *mcp.ClientSession {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "perf", Version: "1"}, nil).Connect(context.Background(), tr, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if got := cs.InitializeResult().ProtocolVersion; got != protocol {
		t.Fatalf("%T: the server speaks protocol %s, want %s", tr, got, protocol)
	}
	return cs
}

// perfStartHTTPServer starts bin/server on HTTP in front of the
// everything-server and returns its URL and pid; the process is stopped at
// cleanup.
func perfStartHTTPServer(t *testing.T, bin string) (string, int) {
	cmd := perfServerCmd(t, bin, "--http", "127.0.0.1:0", "--", filepath.Join(bin, "everything-server"))
	return perfStartListener(t, cmd, regexp.MustCompile(`on (http://\S+/mcp)`))
}

// perfStartListener starts cmd and returns the URL re finds (its first
// group) on its stderr, and its pid; the process is stopped at cleanup.
func perfStartListener(t *testing.T, cmd *exec.Cmd, re *regexp.Regexp) (string, int) {
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Signal(syscall.SIGTERM); cmd.Wait() })
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sent := false
		for sc.Scan() { // read on, so the server never blocks on a full pipe
			if m := re.FindStringSubmatch(sc.Text()); m != nil && !sent {
				found <- m[1]
				sent = true
			}
		}
		if !sent {
			close(found)
		}
	}()
	select {
	case url, ok := <-found:
		if !ok {
			t.Fatalf("%s exited before listening", filepath.Base(cmd.Path))
		}
		return url, cmd.Process.Pid
	case <-time.After(30 * time.Second):
		t.Fatalf("%s did not listen within 30s", filepath.Base(cmd.Path))
	}
	return "", 0
}

func perfFreeAddr(t *testing.T) string {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

func perfWaitListening(t *testing.T, addr string) {
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
	}
	t.Fatalf("%s: nothing listens after 30s", addr)
}

// perfIdleSessions opens perfIdle HTTP sessions to a fresh gateway, each
// initialised on protocol 2025-11-25 (2026-07-28 has no sessions to hold)
// and then idle, and reports the growth of the server's RSS per session
// (after a warm-up of ten, so one-off allocations are left out); and the
// same of an everything-server on a stateful handler, the floor: what
// the go-sdk's own server holds per session.
func perfIdleSessions(t *testing.T, bin string) []perfRow {
	url, pid := perfStartHTTPServer(t, bin)
	gateway := perfRSSPerSession(t, url, pid)
	floorURL, floorPID := perfStartEverythingHTTP(t, bin, perfProtocolSessions)
	floor := perfRSSPerSession(t, floorURL, floorPID)
	what := fmt.Sprintf("RSS per open idle HTTP %s session (%d)", perfProtocolSessions, perfIdle)
	return []perfRow{
		{what + ": gateway", fmt.Sprintf("%.1f KiB", gateway/1024), "<= 32 KiB"},
		{what + ": floor", fmt.Sprintf("%.1f KiB", floor/1024), "floor: the go-sdk's own server"},
	}
}

// perfRSSPerSession opens perfIdle sessions to the server at url, whose
// process is pid, and returns the growth of its RSS per session, in bytes.
func perfRSSPerSession(t *testing.T, url string, pid int) float64 {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * perfIdle}}
	open := func(n int) {
		for range n {
			cs := perfConnect(t, &mcp.StreamableClientTransport{Endpoint: url, HTTPClient: client, MaxRetries: -1}, perfProtocolSessions)
			if cs.ID() == "" {
				t.Fatal("an idle session without a session id: the server held none")
			}
		}
	}
	open(10)
	time.Sleep(time.Second)
	before := perfRSS(t, pid)
	open(perfIdle)
	time.Sleep(2 * time.Second) // standalone SSE streams settle
	return float64(perfRSS(t, pid)-before) / perfIdle
}

// perfCPU reads the user and system CPU time of pid, its children apart,
// from /proc/PID/stat (in clock ticks, which Linux counts at 100 a
// second for every process: USER_HZ).
func perfCPU(t *testing.T, pid int) time.Duration {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		t.Fatal(err)
	}
	// The fields after the command, which is in parentheses and may hold
	// spaces: state is the third field, utime and stime the 14th and 15th.
	_, rest, ok := strings.Cut(string(b), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		t.Fatalf("/proc/%d/stat: %q: no utime and stime", pid, b)
	}
	var ticks int64
	for _, v := range f[11:13] {
		n, err := strconv.ParseInt(v, 10, 64)
		if err != nil {
			t.Fatalf("/proc/%d/stat: %q: %v", pid, v, err)
		}
		ticks += n
	}
	return time.Duration(ticks) * (time.Second / 100)
}

// perfRSS reads VmRSS of pid, in bytes.
func perfRSS(t *testing.T, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(b), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			if err != nil {
				t.Fatalf("VmRSS %q: %v", v, err)
			}
			return kb << 10
		}
	}
	t.Fatalf("/proc/%d/status: no VmRSS", pid)
	return 0
}

// perfRun runs bin/profiler with args and returns its wall time, CPU time
// (user and system) and peak RSS (the child's ru_maxrss).
func perfRun(t *testing.T, bin string, args ...string) (time.Duration, time.Duration, int64) {
	cmd := exec.Command(filepath.Join(bin, "profiler"), args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	t0 := time.Now()
	if err := cmd.Run(); err != nil {
		t.Fatalf("profiler %v: %v\n%s", args, err, out.String())
	}
	wall := time.Since(t0)
	ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	if !ok {
		t.Fatal("no rusage for the child")
	}
	cpu := time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
	return wall, cpu, ru.Maxrss << 10 // kilobytes on Linux
}

// perfAnalyzer generates sessiongen traces of 300 tools at each size and
// times profiler import, stats and derive on them, with peak RSS, and the
// cost per session of the largest against the smallest.
func perfAnalyzer(t *testing.T, bin string, sizes []int) []perfRow {
	type run struct {
		wall, cpu time.Duration
		rss       int64
	}
	steps := []string{"import", "derive", "stats"}
	targets := map[string]string{"import": "< 12s, 512 MiB", "derive": "< 5s, 1 GiB", "stats": "< 4s, 1 GiB"}
	results := map[string][]run{}
	for _, n := range sizes {
		dir := t.TempDir()
		trace, cat := perfTrace(t, dir, n)
		tdir := filepath.Join(dir, "telemetry")
		for _, step := range steps {
			var args []string
			switch step {
			case "import":
				args = []string{"import", "--telemetry", tdir, trace}
			case "derive":
				args = []string{"derive", "--telemetry", tdir, "--catalog", cat, "--out", filepath.Join(dir, "profiles.generated.toml")}
			case "stats":
				args = []string{"stats", "--telemetry", tdir, "--catalog", cat}
			}
			wall, cpu, rss := perfRun(t, bin, args...)
			results[step] = append(results[step], run{wall, cpu, rss})
		}
		os.Remove(trace) // the 1M trace is large; the segment stays for the steps after import
	}
	var rows []perfRow
	for _, step := range steps {
		rs := results[step]
		for i, n := range sizes {
			target := ""
			if n == 1_000_000 {
				target = targets[step]
			}
			rows = append(rows, perfRow{fmt.Sprintf("profiler %s, %d sessions", step, n),
				fmt.Sprintf("%.2fs wall, %.2fs cpu, peak RSS %d MiB", rs[i].wall.Seconds(), rs[i].cpu.Seconds(), rs[i].rss>>20), target})
		}
		if len(sizes) > 1 {
			// CPU time, not wall: on a shared machine the wall time of one
			// run is mostly the others' load.
			lo, hi := 0, len(sizes)-1
			per := func(i int) float64 { return rs[i].cpu.Seconds() / float64(sizes[i]) }
			rows = append(rows, perfRow{fmt.Sprintf("profiler %s: cpu per session, %d vs %d", step, sizes[hi], sizes[lo]),
				fmt.Sprintf("%.2fx", per(hi)/per(lo)), "within 1.2x"})
		}
	}
	return rows
}

// perfAnalyzerVersus times profiler derive and stats of bin against base's
// (another build) on one sessiongen telemetry directory per size,
// alternating which goes first over three runs each, so that load on a
// shared machine falls on both; it reports each build's least wall and CPU
// time and peak RSS.
func perfAnalyzerVersus(t *testing.T, bin, base string, sizes []int) []perfRow {
	var rows []perfRow
	for _, n := range sizes {
		dir := t.TempDir()
		trace, cat := perfTrace(t, dir, n)
		tdir := filepath.Join(dir, "telemetry")
		perfRun(t, base, "import", "--telemetry", tdir, trace)
		os.Remove(trace)
		for _, step := range []string{"derive", "stats"} {
			type best struct {
				wall, cpu time.Duration
				rss       int64
			}
			bests := map[string]*best{}
			builds := []string{bin, base}
			for i := range 6 {
				b := builds[(i+i/2)%2] // bin, base, base, bin, bin, base
				args := []string{step, "--telemetry", tdir, "--catalog", cat}
				if step == "derive" {
					args = append(args, "--out", filepath.Join(dir, "profiles.generated.toml"))
				}
				wall, cpu, rss := perfRun(t, b, args...)
				if bb := bests[b]; bb == nil {
					bests[b] = &best{wall, cpu, rss}
				} else {
					bb.wall, bb.cpu, bb.rss = min(bb.wall, wall), min(bb.cpu, cpu), max(bb.rss, rss)
				}
			}
			for _, b := range builds {
				label := "this build"
				if b == base {
					label = "base " + base
				}
				bb := bests[b]
				rows = append(rows, perfRow{fmt.Sprintf("profiler %s, %d sessions, %s (least of 3)", step, n, label),
					fmt.Sprintf("%.2fs wall, %.2fs cpu, peak RSS %d MiB", bb.wall.Seconds(), bb.cpu.Seconds(), bb.rss>>20), ""})
			}
		}
	}
	return rows
}

// perfTrace writes into dir a sessiongen trace of n sessions over 300
// tools and its catalog, and returns their paths.
func perfTrace(t *testing.T, dir string, n int) (trace, cat string) {
	t.Helper()
	trace, cat = filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "catalog.json")
	names := sessiongen.ToolNames(300)
	for path, fn := range map[string]func(*os.File) error{
		trace: func(f *os.File) error {
			return sessiongen.WriteTrace(f, sessiongen.Config{Seed: 1, Sessions: n, Tools: names})
		},
		cat: func(f *os.File) error { return sessiongen.WriteCatalog(f, names, 1) },
	} {
		f, err := os.Create(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return trace, cat
}
