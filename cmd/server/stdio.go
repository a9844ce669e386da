package main

import "os"

// The stdio server's process. Its work on a call is a chain of hand-offs
// between goroutines: the reader of stdin takes the request, the call
// waits for the upstream's answer, the reader of the upstream's stdout
// wakes it. On several Ps each hand-off wakes a thread, which spins
// looking for work, and those threads take the CPUs the client and the
// upstreams run on; on one P a hand-off is a push onto its run queue. One
// client's calls need no more than one P, so the server serving its own
// stdin runs on one, unless the environment's GOMAXPROCS names a number.
// A read that waits for the client must then not hold that P in a
// blocking system call: stdin is read through the runtime's poller
// (pollable).

// stdioProcs is the GOMAXPROCS the server serving its own stdin sets; 0
// leaves it as it is.
func stdioProcs(getenv func(string) string) int {
	if getenv("GOMAXPROCS") != "" {
		return 0
	}
	return 1
}

// ownStdin reports whether stdin is the process's own: only then are the
// runtime's settings the server's to change (a test serves a pipe).
func ownStdin(stdin any) bool {
	f, ok := stdin.(*os.File)
	return ok && f == os.Stdin
}
