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
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/telemetry"
)

// serverProc is a server subprocess on HTTP whose exit status the test
// checks itself (startHTTP requires exit 0).
type serverProc struct {
	base   string
	stderr *syncbuf.Buffer
	term   func() error // SIGTERM, then the exit
}

func startServerProc(t *testing.T, flags ...string) *serverProc {
	t.Helper()
	args := append([]string{"--profiles", profilesFile, "--http", "127.0.0.1:0"}, flags...)
	cmd := exec.Command(bins.server, append(args, "--", bins.everything)...)
	p := &serverProc{stderr: &syncbuf.Buffer{}}
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	exited := make(chan struct{})
	var waitErr error
	go func() {
		re := regexp.MustCompile(`on (http://\S+)/mcp`)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			p.stderr.Write([]byte(sc.Text() + "\n"))
			if m := re.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
			}
		}
		waitErr = cmd.Wait()
		close(exited)
	}()
	p.term = func() error {
		cmd.Process.Signal(syscall.SIGTERM)
		<-exited
		return waitErr
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-exited
	})
	select {
	case p.base = <-addr:
	case <-exited:
		t.Fatalf("server exited:\n%s", p.stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not listen:\n%s", p.stderr)
	}
	return p
}

func (p *serverProc) connect(t *testing.T) *mcp.ClientSession {
	t.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: p.base + "/mcp", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// callMany makes n calls that the profile allows and fails the test unless
// each is answered by the upstream.
func callMany(t *testing.T, cs *mcp.ClientSession, n int) {
	t.Helper()
	for i := range n {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{"pad": strings.Repeat("y", 200)}})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %v %+v, want it served", i, err, res)
		}
	}
}

// waitTelemetry polls /healthz until its telemetry line satisfies ok.
func (p *serverProc) waitTelemetry(t *testing.T, ok func(string) bool) string {
	t.Helper()
	var last string
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if last = healthOf(t, p.base).Telemetry; ok(last) {
			return last
		}
	}
	t.Fatalf("health telemetry %q", last)
	return ""
}

// The telemetry directory cannot be created (its parent is a regular file):
// the server serves every call, health says degraded, and at SIGTERM it
// exits 0 (a telemetry failure fails neither a call nor the shutdown),
// saying on stderr that every event it accepted was lost, naming the
// directory.
func TestTelemetryDirectoryUnwritable(t *testing.T) {
	file := filepath.Join(t.TempDir(), "a-file")
	if err := os.WriteFile(file, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(file, "telemetry")
	p := startServerProc(t, "--telemetry", dir)
	callMany(t, p.connect(t), 20)
	h := p.waitTelemetry(t, func(s string) bool { return strings.HasPrefix(s, "degraded:") })
	if !strings.Contains(h, dir) {
		t.Errorf("health telemetry %q does not name %s", h, dir)
	}
	if err := p.term(); err != nil {
		t.Errorf("exit after SIGTERM: %v, want 0\n%s", err, p.stderr)
	}
	// The session start and the 20 calls, at least, and all of them lost.
	lost, accepted := lostAtShutdown(t, p.stderr.String(), dir)
	if lost != accepted || lost < 1+20 {
		t.Errorf("stderr says %d of %d events lost, want every event lost and at least 21\n%s", lost, accepted, p.stderr)
	}
	if !strings.Contains(p.stderr.String(), "tool calls continue") {
		t.Errorf("stderr does not say at start that calls continue:\n%s", p.stderr)
	}
}

// The telemetry file system fills up while the server runs (a 128 KiB
// tmpfs, filled by another file): every call is still served, health
// reports degraded with each call's events counted as lost, SIGTERM exits
// 0, and the segment is closed and passes the consistency check.
func TestTelemetryDiskFull(t *testing.T) {
	mnt := t.TempDir()
	if out, err := exec.Command("mount", "-t", "tmpfs", "-o", "size=128k", "tmpfs", mnt).CombinedOutput(); err != nil {
		t.Skipf("cannot mount a small tmpfs to fill (needs root): %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("umount", mnt).Run() })
	dir := filepath.Join(mnt, "telemetry")
	p := startServerProc(t, "--telemetry", dir)
	cs := p.connect(t)
	callMany(t, cs, 5)
	p.waitTelemetry(t, func(s string) bool {
		return strings.HasPrefix(s, "recording: ") && !strings.HasPrefix(s, "recording: 0 events")
	})
	fill(t, filepath.Join(mnt, "filler"))
	const after = 100
	callMany(t, cs, after)
	// Every event is accounted for: the session start and the 105 calls
	// are written (those that fit in space the segment already had) or
	// counted as lost, and some are lost.
	counts := regexp.MustCompile(`\((\d+) events written, (\d+) dropped, (\d+) lost\)`)
	h := p.waitTelemetry(t, func(s string) bool {
		m := counts.FindStringSubmatch(s)
		if !strings.HasPrefix(s, "degraded:") || m == nil {
			return false
		}
		written, _ := strconv.Atoi(m[1])
		dropped, _ := strconv.Atoi(m[2])
		lost, _ := strconv.Atoi(m[3])
		return written+dropped+lost == 1+5+after && lost > 0
	})
	if !strings.Contains(h, "no space left on device") {
		t.Errorf("health telemetry %q does not say the device is full", h)
	}
	if err := p.term(); err != nil {
		t.Fatalf("exit after SIGTERM with the disk full: %v, want 0\n%s", err, p.stderr)
	}
	// At least what health counted as lost, and never more than accepted.
	m := counts.FindStringSubmatch(h)
	healthLost, _ := strconv.Atoi(m[3])
	if lost, accepted := lostAtShutdown(t, p.stderr.String(), dir); lost < healthLost || lost > accepted {
		t.Errorf("stderr says %d of %d events lost, want at least the %d health counted\n%s", lost, accepted, healthLost, p.stderr)
	}
	segs, err := telemetry.ListSegments([]string{dir})
	if err != nil || len(segs) != 1 || strings.HasSuffix(segs[0].Path, ".open.db") {
		t.Fatalf("segments %+v, %v: want one closed segment", segs, err)
	}
	if err := telemetry.OpenSegmentCheck(segs[0].Path); err != nil {
		t.Errorf("segment after the disk filled: %v", err)
	}
}

// lostAtShutdown reads, from the server's stderr, the line saying how many
// of the events it accepted could not be stored in dir.
func lostAtShutdown(t *testing.T, stderr, dir string) (lost, accepted int) {
	t.Helper()
	m := regexp.MustCompile(`close telemetry (\S+): (\d+) of the (\d+) events accepted could not be stored`).FindStringSubmatch(stderr)
	if m == nil || m[1] != dir {
		t.Fatalf("stderr does not say how many events could not be stored in %s:\n%s", dir, stderr)
	}
	lost, _ = strconv.Atoi(m[2])
	accepted, _ = strconv.Atoi(m[3])
	return lost, accepted
}

// fill writes path until the file system has no space left.
func fill(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	for {
		if _, err := f.Write(block); err != nil {
			if !errors.Is(err, syscall.ENOSPC) {
				t.Fatalf("fill %s: %v, want ENOSPC", path, err)
			}
			return
		}
	}
}

// The server's open segment is locked by the server while it runs: the
// profiler reading the directory then leaves that segment out, says so, and
// exits 0, and the server keeps recording; once the server has stopped the
// profiler reads every call.
func TestProfilerWhileServerWrites(t *testing.T) {
	profiler := filepath.Join(t.TempDir(), "profiler")
	if err := testupstream.Build("github.com/toolprof/toolprof/cmd/profiler", profiler); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "telemetry")
	p := startServerProc(t, "--telemetry", dir)
	cs := p.connect(t)
	callMany(t, cs, 3)
	out, err := exec.Command(profiler, "export", "--telemetry", dir).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "left out") || !strings.Contains(string(out), "a running server writes it") {
		t.Errorf("export while the server writes: %v\n%s\nwant exit 0 saying the open segment is left out", err, out)
	}
	callMany(t, cs, 2)
	cs.Close()
	if err := p.term(); err != nil {
		t.Fatal(err)
	}
	out, err = exec.Command(profiler, "export", "--telemetry", dir).CombinedOutput()
	if err != nil || strings.Count(string(out), "test_simple_text") != 5 || strings.Contains(string(out), "left out") {
		t.Errorf("export after the server stopped: %v\n%s\nwant the 5 calls", err, out)
	}
}
