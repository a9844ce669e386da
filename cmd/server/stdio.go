package main

import "os"

// The stdio server's process. A call is a chain of goroutine hand-offs
// (the stdin reader, the call, the upstream's reader); on several Ps each
// wakes a thread that spins on the CPUs the client and the upstreams
// need, on one P it is a push onto the run queue. So the server serving
// its own stdin runs on one P unless GOMAXPROCS is set, and reads stdin
// through the poller (pollable). The price: work that holds the P (a
// 16 MiB message decoded, a collection) delays the session's other calls.

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
