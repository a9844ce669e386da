//go:build unix

package main

import (
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/sys/unix"
)

// blockingPipe is a pipe whose ends are in blocking mode, as a client
// hands a server its stdin (os.Pipe's are non-blocking).
func blockingPipe(t *testing.T) (r, w *os.File) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	r, w = os.NewFile(uintptr(p[0]), "r"), os.NewFile(uintptr(p[1]), "w")
	t.Cleanup(func() { r.Close(); w.Close() })
	return r, w
}

// nonBlocking reports the mode of the open file fd refers to.
func nonBlocking(t *testing.T, fd int) bool {
	t.Helper()
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	if err != nil {
		t.Fatal(err)
	}
	return flags&unix.O_NONBLOCK != 0
}

// dupFD is another descriptor of f's open file, closed at cleanup: it
// shares the mode and outlives f.
func dupFD(t *testing.T, f *os.File) int {
	t.Helper()
	d, err := unix.Dup(int(f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(d) })
	return d
}

func TestPollable(t *testing.T) {
	t.Run("blocking pipe", func(t *testing.T) {
		r, w := blockingPipe(t)
		shared := dupFD(t, r)
		in := pollable(r)
		p, ok := in.(*pollableFile)
		if !ok {
			t.Fatalf("pollable(blocking pipe) = %T, want a *pollableFile", in)
		}
		if !nonBlocking(t, shared) {
			t.Error("the pipe is still in blocking mode")
		}
		// Only a file the poller reads takes a deadline.
		if err := p.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
			t.Errorf("SetReadDeadline: %v, want nil (a file the poller reads)", err)
		}
		if _, err := in.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
			t.Errorf("Read of an empty pipe past its deadline: %v, want os.ErrDeadlineExceeded", err)
		}
		p.SetReadDeadline(time.Time{})
		if _, err := w.Write([]byte("line\n")); err != nil {
			t.Fatal(err)
		}
		buf := make([]byte, 16)
		if n, err := in.Read(buf); err != nil || string(buf[:n]) != "line\n" {
			t.Errorf("Read = %q, %v, want %q", buf[:n], err, "line\n")
		}
		if err := in.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if nonBlocking(t, shared) {
			t.Error("after Close the pipe is left in non-blocking mode for whoever shares it")
		}
		if _, err := r.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("after Close, the original file: %v, want it closed", err)
		}
		if err := in.Close(); err != nil {
			t.Errorf("second Close: %v, want the first's result", err)
		}
	})
	t.Run("socket", func(t *testing.T) {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		s := os.NewFile(uintptr(fds[0]), "s")
		defer unix.Close(fds[1])
		in := pollable(s)
		defer in.Close()
		if _, ok := in.(*pollableFile); !ok {
			t.Errorf("pollable(blocking socket) = %T, want a *pollableFile", in)
		}
	})
	t.Run("left as they are", func(t *testing.T) {
		nb, _, err := os.Pipe() // non-blocking already
		if err != nil {
			t.Fatal(err)
		}
		defer nb.Close()
		regular, err := os.Create(filepath.Join(t.TempDir(), "f"))
		if err != nil {
			t.Fatal(err)
		}
		defer regular.Close()
		null, err := os.Open(os.DevNull)
		if err != nil {
			t.Fatal(err)
		}
		defer null.Close()
		for _, f := range []*os.File{nb, regular, null} {
			if in := pollable(f); in != io.ReadCloser(f) {
				t.Errorf("pollable(%s) = %T, want the file itself", f.Name(), in)
			}
		}
		if nonBlocking(t, int(regular.Fd())) || nonBlocking(t, int(null.Fd())) {
			t.Error("a file or a device was put in non-blocking mode")
		}
	})
}

// TestStdioStdinPolled runs the built server with a blocking pipe as its
// stdin, as a client starts it: the server reads it in non-blocking mode
// while it serves, and leaves it in blocking mode once it has ended,
// whether its input ended or a signal stopped it.
func TestStdioStdinPolled(t *testing.T) {
	for _, tc := range []struct {
		name string
		end  func(cmd *exec.Cmd, cs *mcp.ClientSession)
	}{
		{"input ends", func(_ *exec.Cmd, cs *mcp.ClientSession) { cs.Close() }},
		{"SIGTERM", func(cmd *exec.Cmd, _ *mcp.ClientSession) { cmd.Process.Signal(syscall.SIGTERM) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdin, toServer := blockingPipe(t)
			fromServer, stdout, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			defer fromServer.Close()
			cmd := exec.Command(bins.server, "--telemetry", filepath.Join(t.TempDir(), "telemetry"), "--profiles", profilesFile, "--", bins.everything)
			cmd.Stdin, cmd.Stdout = stdin, stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			stdout.Close()
			shared := dupFD(t, stdin) // the open file the server reads
			stdin.Close()

			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
				Connect(ctx, &mcp.IOTransport{Reader: fromServer, Writer: toServer}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil || res.IsError {
				t.Fatalf("test_simple_text: %v, %+v", err, res)
			}
			if !nonBlocking(t, shared) {
				t.Error("while serving, the server's stdin is in blocking mode: its reads hold a thread")
			}
			tc.end(cmd, cs)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("server: %v", err)
			}
			if nonBlocking(t, shared) {
				t.Error("the server left its stdin's open file in non-blocking mode")
			}
		})
	}
}
