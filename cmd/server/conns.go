package main

import (
	"net"
	"net/http"
	"sync"
)

// connTracker caps the HTTP server's connections (--max-connections). A
// connection past the cap closes the longest-idle one: a keep-alive
// connection waiting for its next request, or one that has not finished
// sending its first (the newcomer counts, as the newest, so it is the one
// closed when every other is busy). A connection serving a request, such as
// a long call or an SSE stream, is never closed. Without the eviction, idle
// connections that cost their client nothing hold every slot and new
// clients wait until they time out.
type connTracker struct {
	max int // 0: no cap

	mu    sync.Mutex
	conns map[net.Conn]*connState
	seq   uint64 // orders idleness: the lowest idle since is the longest idle
}

type connState struct {
	state http.ConnState
	since uint64 // seq when it became new or idle
}

func newConnTracker(max int) *connTracker {
	return &connTracker{max: max, conns: make(map[net.Conn]*connState)}
}

// track is the http.Server's ConnState hook. The server calls it with
// StateNew before it reads from c, so an eviction happens before the
// newcomer is served.
func (t *connTracker) track(c net.Conn, st http.ConnState) {
	t.mu.Lock()
	defer t.mu.Unlock()
	switch st {
	case http.StateNew, http.StateIdle:
		t.seq++
		if s, ok := t.conns[c]; ok {
			s.state, s.since = st, t.seq
		} else {
			t.conns[c] = &connState{state: st, since: t.seq}
		}
		if t.max > 0 && len(t.conns) > t.max {
			t.evictLocked()
		}
	case http.StateActive:
		if s, ok := t.conns[c]; ok {
			s.state = st
		}
	case http.StateHijacked, http.StateClosed:
		delete(t.conns, c)
	}
}

// evictLocked closes the longest-idle connection. Closing wakes the
// server's read on it, which then ends the connection quietly.
func (t *connTracker) evictLocked() {
	var victim net.Conn
	var oldest uint64
	for c, s := range t.conns {
		if s.state != http.StateActive && (victim == nil || s.since < oldest) {
			victim, oldest = c, s.since
		}
	}
	if victim != nil {
		delete(t.conns, victim)
		victim.Close()
	}
}

// closeNew closes the connections that have sent no request yet: on
// shutdown, http.Server waits 5 s before it treats them as idle.
func (t *connTracker) closeNew() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for c, s := range t.conns {
		if s.state == http.StateNew {
			c.Close()
			delete(t.conns, c)
		}
	}
}
