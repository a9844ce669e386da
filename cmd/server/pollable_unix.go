//go:build unix

package main

import (
	"io"
	"os"
	"sync"

	"golang.org/x/sys/unix"
)

// pollable is f read through the runtime's poller when f is a pipe or a
// socket in blocking mode, as a client's stdin is: os.Stdin reads such a
// descriptor with a blocking read, which holds a thread and the P it runs
// on. The returned reader reads a duplicate of f's descriptor, made
// non-blocking; the mode belongs to the open file, which f and whoever
// started the process may share, so Close puts it back before closing
// the duplicate and f. Anything else (a terminal, a file, a descriptor
// non-blocking already) is returned as it is.
func pollable(f *os.File) io.ReadCloser {
	sc, err := f.SyscallConn()
	if err != nil {
		return f
	}
	dup := -1
	_ = sc.Control(func(fd uintptr) {
		var st unix.Stat_t
		if unix.Fstat(int(fd), &st) != nil {
			return
		}
		if t := st.Mode & unix.S_IFMT; t != unix.S_IFIFO && t != unix.S_IFSOCK {
			return
		}
		flags, err := unix.FcntlInt(fd, unix.F_GETFL, 0)
		if err != nil || flags&unix.O_NONBLOCK != 0 {
			return
		}
		d, err := unix.FcntlInt(fd, unix.F_DUPFD_CLOEXEC, 0)
		if err != nil {
			return
		}
		if unix.SetNonblock(d, true) != nil {
			unix.Close(d)
			return
		}
		dup = d
	})
	if dup < 0 {
		return f
	}
	return &pollableFile{File: os.NewFile(uintptr(dup), f.Name()), orig: f}
}

// pollableFile is a non-blocking duplicate of orig's descriptor.
type pollableFile struct {
	*os.File
	orig *os.File

	once sync.Once
	err  error
}

// Close puts the open file back in blocking mode and closes both
// descriptors.
func (p *pollableFile) Close() error {
	p.once.Do(func() {
		if sc, err := p.File.SyscallConn(); err == nil {
			_ = sc.Control(func(fd uintptr) { _ = unix.SetNonblock(int(fd), false) })
		}
		p.err = p.File.Close()
		if err := p.orig.Close(); p.err == nil {
			p.err = err
		}
	})
	return p.err
}
