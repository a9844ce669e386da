//go:build unix

package main

import (
	"io"
	"os"
	"strconv"
	"sync"

	"golang.org/x/sys/unix"
)

// pollable is f read through the runtime's poller when f is a pipe or a
// socket in blocking mode, as a client's stdin is: os.Stdin reads such a
// descriptor with blocking reads, and on one P a read waiting for the
// client delays every other goroutine until the runtime hands the P off.
//
// A pipe is opened anew (/proc/self/fd, Linux) in non-blocking mode: an
// open file of its own, whose mode nothing else sees. Elsewhere, and for
// a socket, the mode is set on the open file f shares with whoever holds
// it, so only when no other of the server's standard descriptors is the
// same file (a socket passed as stdin and stdout would make stdout's
// writes fail with EAGAIN); Close puts the mode back, though a process
// killed with SIGKILL leaves it. Anything else (a terminal, a file, a
// descriptor non-blocking already) is returned as it is.
func pollable(f *os.File) io.ReadCloser {
	sc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	// f's descriptor, valid while f is open (it is until Close).
	fd := -1
	_ = sc.Control(func(u uintptr) { fd = int(u) })
	var st unix.Stat_t
	if unix.Fstat(fd, &st) != nil {
		return f
	}
	flags, err := unix.FcntlInt(uintptr(fd), unix.F_GETFL, 0)
	kind := st.Mode & unix.S_IFMT
	if err != nil || flags&unix.O_NONBLOCK != 0 || (kind != unix.S_IFIFO && kind != unix.S_IFSOCK) {
		return f
	}
	if kind == unix.S_IFIFO {
		// O_NONBLOCK: the open does not wait for a writer.
		if r, err := os.OpenFile("/proc/self/fd/"+strconv.Itoa(fd), os.O_RDONLY|unix.O_NONBLOCK, 0); err == nil {
			return &pollableFile{File: r, orig: f}
		}
	}
	for _, other := range []int{unix.Stdin, unix.Stdout, unix.Stderr} {
		var ost unix.Stat_t
		if unix.Fstat(other, &ost) == nil && ost.Dev == st.Dev && ost.Ino == st.Ino && other != fd {
			return f
		}
	}
	dup, err := unix.FcntlInt(uintptr(fd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return f
	}
	if unix.SetNonblock(dup, true) != nil {
		unix.Close(dup)
		return f
	}
	return &pollableFile{File: os.NewFile(uintptr(dup), f.Name()), orig: f, shared: true}
}

// pollableFile reads a descriptor of orig's file in non-blocking mode:
// a pipe opened anew, or a duplicate whose open file orig shares
// (shared).
type pollableFile struct {
	*os.File
	orig   *os.File
	shared bool

	once sync.Once
	err  error
}

// Close closes the file, then, when the mode was set on the open file
// orig shares, puts it back through orig (after the close, so that no
// read of the file blocks), and closes orig.
func (p *pollableFile) Close() error {
	p.once.Do(func() {
		p.err = p.File.Close()
		if sc, err := p.orig.SyscallConn(); err == nil && p.shared {
			_ = sc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
		}
		if err := p.orig.Close(); p.err == nil {
			p.err = err
		}
	})
	return p.err
}
