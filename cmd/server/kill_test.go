package main

import (
	"bufio"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/telemetry"
)

// loadedServer is a server subprocess on HTTP with sessions calling it in a
// loop until stopped, each noting when every answer arrived.
type loadedServer struct {
	cmd       *exec.Cmd
	telemetry string
	stderr    *syncbuf.Buffer
	exited    chan struct{}
	waitErr   error

	stopLoad context.CancelFunc
	wg       sync.WaitGroup
	mu       sync.Mutex
	acked    [][]time.Time // per session (its client version), answer times
	sent     []int         // per session, calls sent
}

// startLoaded starts the server and n sessions calling test_simple_text.
func startLoaded(t *testing.T, n int) *loadedServer {
	t.Helper()
	dir := t.TempDir()
	ls := &loadedServer{telemetry: filepath.Join(dir, "telemetry"), stderr: &syncbuf.Buffer{}, exited: make(chan struct{}),
		acked: make([][]time.Time, n), sent: make([]int, n)}
	ls.cmd = exec.Command(bins.server, "--profiles", profilesFile, "--telemetry", ls.telemetry, "--http", "127.0.0.1:0", "--", bins.everything)
	pipe, err := ls.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := ls.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		re := regexp.MustCompile(`on (http://\S+/mcp)`)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			ls.stderr.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
	}()
	go func() {
		<-copied
		ls.waitErr = ls.cmd.Wait()
		close(ls.exited)
	}()
	t.Cleanup(func() {
		ls.cmd.Process.Kill()
		<-ls.exited
	})
	var url string
	select {
	case url = <-addr:
	case <-ls.exited:
		t.Fatalf("server exited:\n%s", ls.stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not listen:\n%s", ls.stderr)
	}
	ctx, cancel := context.WithCancel(context.Background())
	ls.stopLoad = cancel
	for s := range n {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "kill", Version: strconv.Itoa(s)}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		ls.wg.Go(func() {
			defer cs.Close()
			for ctx.Err() == nil {
				ls.mu.Lock()
				ls.sent[s]++
				ls.mu.Unlock()
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
					return // the server is gone
				}
				ls.mu.Lock()
				ls.acked[s] = append(ls.acked[s], time.Now())
				ls.mu.Unlock()
			}
		})
	}
	return ls
}

// waitAcked waits until the sessions have had n answers in all.
func (ls *loadedServer) waitAcked(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		ls.mu.Lock()
		total := 0
		for _, a := range ls.acked {
			total += len(a)
		}
		ls.mu.Unlock()
		if total >= n {
			return
		}
		time.Sleep(5 * time.Millisecond)
	}
	t.Fatalf("fewer than %d calls answered in 30 s", n)
}

// recordedPerSession reads the telemetry back: calls recorded per session,
// by the session's client version (its index).
func (ls *loadedServer) recordedPerSession(t *testing.T) (map[int]int, []telemetry.Session) {
	t.Helper()
	sessions, calls, err := telemetry.ReadAll(context.Background(), []string{ls.telemetry}, telemetry.Window{})
	if err != nil {
		t.Fatalf("read telemetry after the server died: %v", err)
	}
	index := map[string]int{}
	for _, s := range sessions {
		i, err := strconv.Atoi(s.ClientVersion)
		if err != nil {
			t.Fatalf("session %+v: not one of the test's", s)
		}
		index[s.ID] = i
	}
	per := map[int]int{}
	for _, c := range calls {
		i, ok := index[c.Session]
		if !ok {
			t.Errorf("call %+v of no recorded session", c)
		}
		per[i]++
	}
	return per, sessions
}

// SIGKILL under load: every segment opens and passes the consistency check,
// and what is lost is at most the calls answered within two flush
// intervals before the kill. The recorder starts a commit every
// FlushInterval, so a call waits up to one interval for its commit to
// start, and the commit's fsync takes time of its own: with one interval
// as the bound, a call answered just over it before the kill is lost
// whenever that fsync outlasts the margin, as it does on a loaded disk.
func TestSIGKILLUnderLoad(t *testing.T) {
	const sessions = 8
	ls := startLoaded(t, sessions)
	ls.waitAcked(t, 600) // several flush intervals of calls
	ls.cmd.Process.Signal(syscall.SIGKILL)
	killed := time.Now()
	<-ls.exited
	ls.stopLoad()
	ls.wg.Wait()

	segs, err := telemetry.ListSegments([]string{ls.telemetry})
	if err != nil || len(segs) == 0 {
		t.Fatalf("segments: %v %v", segs, err)
	}
	for _, s := range segs {
		if err := telemetry.OpenSegmentCheck(s.Path); err != nil {
			t.Errorf("segment %s after SIGKILL: %v", s.Path, err)
		}
	}
	per, _ := ls.recordedPerSession(t)
	settled := killed.Add(-2 * telemetry.DefaultFlushInterval)
	lost, settledTotal := 0, 0
	for s := range sessions {
		ls.mu.Lock()
		acked, sent := ls.acked[s], ls.sent[s]
		ls.mu.Unlock()
		before := 0
		for _, at := range acked {
			if at.Before(settled) {
				before++
			}
		}
		if per[s] < before || per[s] > sent {
			t.Errorf("session %d: %d calls recorded; %d answered more than two flush intervals before the kill, %d sent", s, per[s], before, sent)
		}
		lost += len(acked) - min(per[s], len(acked))
		settledTotal += before
	}
	if settledTotal == 0 {
		t.Fatal("no call was answered more than two flush intervals before the kill: the test checked nothing")
	}
	t.Logf("SIGKILL: %d answered calls not recorded (all within %v of the kill)", lost, 2*telemetry.DefaultFlushInterval)
}

// SIGTERM under load: the server exits 0, and every answered call and every
// session (ended) is in the telemetry.
func TestSIGTERMUnderLoad(t *testing.T) {
	const sessions = 8
	ls := startLoaded(t, sessions)
	ls.waitAcked(t, 200)
	ls.cmd.Process.Signal(syscall.SIGTERM)
	<-ls.exited
	ls.stopLoad()
	ls.wg.Wait()
	var ee *exec.ExitError
	if ls.waitErr != nil {
		if errors.As(ls.waitErr, &ee) {
			t.Fatalf("exit after SIGTERM: %v (want 0)\n%s", ls.waitErr, ls.stderr)
		}
		t.Fatal(ls.waitErr)
	}
	per, recSessions := ls.recordedPerSession(t)
	for s := range sessions {
		ls.mu.Lock()
		acked, sent := len(ls.acked[s]), ls.sent[s]
		ls.mu.Unlock()
		if per[s] < acked || per[s] > sent {
			t.Errorf("session %d: %d calls recorded, %d answered, %d sent", s, per[s], acked, sent)
		}
	}
	if len(recSessions) != sessions {
		t.Errorf("%d sessions recorded, want %d", len(recSessions), sessions)
	}
	for _, s := range recSessions {
		if s.End.IsZero() {
			t.Errorf("session %s not ended", s.ID)
		}
	}
	if _, err := os.Stat(ls.telemetry); err != nil {
		t.Fatal(err)
	}
}
