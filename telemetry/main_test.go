package telemetry

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// childEnv selects a helper role when the test binary re-executes itself:
// a second process is the only way to hold a bbolt lock against this one,
// or to be killed with SIGKILL mid-write.
const childEnv = "TOOLPROF_TELEMETRY_CHILD"

func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(runChild(role))
	}
	os.Exit(m.Run())
}

func runChild(role string) int {
	kind, arg, _ := strings.Cut(role, ":")
	switch kind {
	case "hold", "hold-read": // hold a segment open, for writing or as a reader does, until stdin closes
		open := func(path string) (*bolt.DB, error) { return createSegment(path, "holder", time.Now()) }
		if kind == "hold-read" {
			open = openSegment
		}
		db, err := open(arg)
		if err != nil {
			fmt.Println("ERR", err)
			return 1
		}
		fmt.Println("HELD")
		io.Copy(io.Discard, os.Stdin)
		db.Close()
		return 0
	case "record-load", "record-idle":
		return recordChild(kind, arg)
	}
	fmt.Println("unknown role", role)
	return 3
}

// recordChild records calls into dir. record-load records until killed,
// reporting progress; record-idle records crashIdleCalls, waits for them to
// be committed, reports FLUSHED and waits to be killed.
func recordChild(kind, dir string) int {
	r, err := OpenRecorder(dir, RecorderOptions{Replica: "crash", FlushInterval: crashFlush, BatchSize: 256, QueueSize: 4096})
	if err != nil {
		fmt.Println("ERR", err)
		return 1
	}
	id := r.NewSessionID()
	r.Session(Session{ID: id, Start: time.Now(), Transport: TransportStdio, ClientName: "crash-test"})
	out := bufio.NewWriter(os.Stdout)
	for i := uint64(0); ; i++ {
		if kind == "record-idle" && i == crashIdleCalls {
			for h := r.Health(); h.Written < h.Enqueued; h = r.Health() {
				time.Sleep(time.Millisecond)
			}
			fmt.Fprintf(out, "FLUSHED %d\n", r.Health().Written)
			out.Flush()
			select {}
		}
		// Stay under the queue bound so nothing is dropped and the stored
		// calls must be an exact prefix of the sent ones.
		for h := r.Health(); h.Enqueued-h.Written > 2048; h = r.Health() {
			time.Sleep(100 * time.Microsecond)
		}
		r.Call(Call{Session: id, Seq: i, Tool: fmt.Sprintf("tool_%d", i%7), Start: time.Now(), Outcome: OutcomeOK})
		if i%500 == 0 {
			h := r.Health()
			fmt.Fprintf(out, "PROGRESS %d %d %d\n", h.Enqueued, h.Written, h.Dropped)
			out.Flush()
		}
	}
}

const (
	crashFlush     = 20 * time.Millisecond
	crashIdleCalls = 3001 // not a multiple of the batch size: the last batch needs the timer
)

// startChild runs the test binary in a helper role and returns it with a
// reader of its stdout.
func startChild(t *testing.T, role string) (*exec.Cmd, *bufio.Scanner, io.WriteCloser) {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+role)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	})
	return cmd, bufio.NewScanner(stdout), stdin
}
