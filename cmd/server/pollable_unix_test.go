//go:build linux

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
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

// blockingSockets is a connected pair of sockets in blocking mode.
func blockingSockets(t *testing.T) (a, b *os.File) {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, b = os.NewFile(uintptr(fds[0]), "a"), os.NewFile(uintptr(fds[1]), "b")
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
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
	d, err := unix.FcntlInt(f.Fd(), unix.F_DUPFD_CLOEXEC, 0) // not for the server to inherit
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(d) })
	return d
}

// readsWithDeadline checks that in is read through the poller: only such
// a file takes a deadline, and a read of nothing then times out.
func readsWithDeadline(t *testing.T, in io.Reader) {
	t.Helper()
	d, ok := in.(interface{ SetReadDeadline(time.Time) error })
	if !ok {
		t.Fatalf("%T has no SetReadDeadline", in)
	}
	if err := d.SetReadDeadline(time.Now().Add(time.Millisecond)); err != nil {
		t.Fatalf("SetReadDeadline: %v, want nil (a file the poller reads)", err)
	}
	if _, err := in.Read(make([]byte, 1)); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("Read of nothing past its deadline: %v, want os.ErrDeadlineExceeded", err)
	}
	d.SetReadDeadline(time.Time{})
}

func TestPollable(t *testing.T) {
	t.Run("blocking pipe: opened anew", func(t *testing.T) {
		r, w := blockingPipe(t)
		shared := dupFD(t, r)
		in := pollable(r)
		if p, ok := in.(*pollableFile); !ok || p.shared {
			t.Fatalf("pollable(blocking pipe) = %#v, want a *pollableFile of its own open file", in)
		}
		if nonBlocking(t, shared) {
			t.Error("the pipe's open file, shared with whoever holds it, was put in non-blocking mode")
		}
		readsWithDeadline(t, in)
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
		if _, err := r.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("after Close, the original file: %v, want it closed", err)
		}
		if err := in.Close(); err != nil {
			t.Errorf("second Close: %v, want the first's result", err)
		}
	})
	t.Run("blocking socket: mode set and put back", func(t *testing.T) {
		s, peer := blockingSockets(t)
		shared := dupFD(t, s)
		in := pollable(s)
		if p, ok := in.(*pollableFile); !ok || !p.shared {
			t.Fatalf("pollable(blocking socket) = %#v, want a *pollableFile sharing the open file", in)
		}
		if !nonBlocking(t, shared) {
			t.Error("the socket is still in blocking mode")
		}
		readsWithDeadline(t, in)
		peer.Write([]byte("x"))
		if n, err := in.Read(make([]byte, 4)); n != 1 || err != nil {
			t.Errorf("Read = %d, %v, want 1 byte", n, err)
		}
		if err := in.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if nonBlocking(t, shared) {
			t.Error("after Close the socket is left in non-blocking mode for whoever shares it")
		}
		if _, err := s.Stat(); !errors.Is(err, os.ErrClosed) {
			t.Errorf("after Close, the original file: %v, want it closed", err)
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

// pollingFD reports whether process pid holds a non-blocking descriptor
// of the file f is (/proc/PID/fd and fdinfo).
func pollingFD(t *testing.T, pid int, f *os.File) bool {
	t.Helper()
	want, err := os.Readlink(fmt.Sprintf("/proc/self/fd/%d", f.Fd()))
	if err != nil {
		t.Fatal(err)
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		if link, err := os.Readlink(filepath.Join(dir, e.Name())); err != nil || link != want {
			continue
		}
		info, err := os.ReadFile(fmt.Sprintf("/proc/%d/fdinfo/%s", pid, e.Name()))
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(info), "\n") {
			if v, ok := strings.CutPrefix(line, "flags:"); ok {
				flags, err := strconv.ParseInt(strings.TrimSpace(v), 8, 64)
				if err == nil && flags&unix.O_NONBLOCK != 0 {
					return true
				}
			}
		}
	}
	return false
}

// TestStdioStdinPolled runs the built server with its stdin in blocking
// mode, as a client starts it, and checks how it reads it while it
// serves and what it leaves once it has ended.
func TestStdioStdinPolled(t *testing.T) {
	for _, tc := range []struct {
		name string
		// stdio is the server's stdin and stdout and the client's ends.
		stdio func(t *testing.T) (stdin, stdout, toServer, fromServer *os.File)
		end   func(cmd *exec.Cmd, cs *mcp.ClientSession, toServer *os.File)
		// polled: the server reads stdin through a non-blocking descriptor
		// of its own; sharedNonBlocking: the open file it shares is so
		// while it serves.
		polled, sharedNonBlocking bool
	}{
		{name: "pipe, input ends", stdio: pipeStdio, end: closeClient, polled: true},
		{name: "pipe, SIGTERM", stdio: pipeStdio, end: terminate, polled: true},
		{name: "socket", stdio: socketStdio, end: closeClient, polled: true, sharedNonBlocking: true},
		{name: "socket, SIGTERM", stdio: socketStdio, end: terminate, polled: true, sharedNonBlocking: true},
		// One socket as stdin and stdout: stdout's writes would fail with
		// EAGAIN in non-blocking mode, so it is read as it is.
		{name: "one socket for both", stdio: oneSocketStdio, end: closeClient},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stdin, stdout, toServer, fromServer := tc.stdio(t)
			cmd := exec.Command(bins.server, "--telemetry", filepath.Join(t.TempDir(), "telemetry"), "--profiles", profilesFile, "--", bins.everything)
			cmd.Stdin, cmd.Stdout = stdin, stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			shared := dupFD(t, stdin) // the open file the server reads
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
				Connect(ctx, &mcp.IOTransport{Reader: fromServer, Writer: toServer}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// A listing of every page and a call: answers on stdout while
			// stdin is read.
			if _, err := cs.ListTools(ctx, nil); err != nil {
				t.Fatalf("tools/list: %v", err)
			}
			if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil || res.IsError {
				t.Fatalf("test_simple_text: %v, %+v", err, res)
			}
			if got := pollingFD(t, cmd.Process.Pid, stdin); got != tc.polled {
				t.Errorf("while serving, the server holds a non-blocking descriptor of its stdin: %v, want %v", got, tc.polled)
			}
			if got := nonBlocking(t, shared); got != tc.sharedNonBlocking {
				t.Errorf("while serving, the shared open file of the server's stdin is non-blocking: %v, want %v", got, tc.sharedNonBlocking)
			}
			tc.end(cmd, cs, toServer)
			if err := cmd.Wait(); err != nil {
				t.Fatalf("server: %v", err)
			}
			if nonBlocking(t, shared) {
				t.Error("the server left its stdin's open file in non-blocking mode")
			}
		})
	}
}

// closeClient ends the server's input. With one socket for both, the
// client's reader holds its descriptor until a read returns, so the
// socket is shut down for writing first (a pipe refuses that: ignored).
func closeClient(_ *exec.Cmd, cs *mcp.ClientSession, toServer *os.File) {
	if sc, err := toServer.SyscallConn(); err == nil {
		sc.Control(func(fd uintptr) { unix.Shutdown(int(fd), unix.SHUT_WR) })
	}
	cs.Close()
}

func terminate(cmd *exec.Cmd, _ *mcp.ClientSession, _ *os.File) {
	cmd.Process.Signal(syscall.SIGTERM)
}

func pipeStdio(t *testing.T) (stdin, stdout, toServer, fromServer *os.File) {
	stdin, toServer = blockingPipe(t)
	fromServer, stdout = blockingPipe(t)
	return stdin, stdout, toServer, fromServer
}

func socketStdio(t *testing.T) (stdin, stdout, toServer, fromServer *os.File) {
	stdin, toServer = blockingSockets(t)
	fromServer, stdout = blockingPipe(t)
	return stdin, stdout, toServer, fromServer
}

func oneSocketStdio(t *testing.T) (stdin, stdout, toServer, fromServer *os.File) {
	server, client := blockingSockets(t)
	client2, err := unix.FcntlInt(client.Fd(), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	fromServer = os.NewFile(uintptr(client2), "client")
	t.Cleanup(func() { fromServer.Close() })
	return server, server, client, fromServer
}
