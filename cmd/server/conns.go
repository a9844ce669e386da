package main

import (
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
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

// admission caps what HTTP clients hold for long beyond a connection:
// sessions (--max-sessions) and GET event streams. A stream occupies its
// connection for as long as it is open, so streams alone may fill
// --max-connections, and then connTracker has no idle connection to close
// and closes every newcomer: streams get at most half the connections
// (maxStreams), the other half stays for requests. Both refusals are 503:
// the SDK's client goes on without a refused standalone stream, as the
// spec allows a server that offers none.
type admission struct {
	maxSessions int        // 0: no cap
	open        func() int // the sessions the gateway holds
	maxStreams  int        // 0: no cap

	mu      sync.Mutex
	opening int // initialize requests being served: sessions open does not count yet
	streams int // GET requests being served
}

// codeOverloaded is the JSON-RPC error of a refused initialize, in the
// range JSON-RPC 2.0 leaves to the server (-32000 to -32099).
const codeOverloaded = -32000

// newAdmission is the admission of the flags; open counts the gateway's
// sessions.
func newAdmission(maxSessions, maxConnections int, open func() int) *admission {
	a := &admission{maxSessions: maxSessions, open: open}
	if maxConnections > 0 {
		a.maxStreams = max(1, maxConnections/2)
	}
	return a
}

// admit answers r, whose body readBody read as pb, with 503 and returns
// false when serving it would pass a cap; otherwise the caller serves r,
// then calls done.
func (a *admission) admit(w http.ResponseWriter, r *http.Request, pb *jsonrpcwire.Body) (done func(), ok bool) {
	switch {
	case r.Method == http.MethodGet && strings.HasPrefix(r.URL.Path, "/mcp") && a.maxStreams > 0:
		a.mu.Lock()
		defer a.mu.Unlock()
		if a.streams >= a.maxStreams {
			http.Error(w, fmt.Sprintf("Service Unavailable: %d event streams open, the most this server holds (half of server --max-connections); "+
				"requests are still served", a.streams), http.StatusServiceUnavailable)
			return nil, false
		}
		a.streams++
		return func() { a.mu.Lock(); a.streams--; a.mu.Unlock() }, true
	case r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" && a.maxSessions > 0 && a.open != nil:
		id, batch, ok := initializeID(pb)
		if !ok {
			return func() {}, true
		}
		a.mu.Lock()
		defer a.mu.Unlock()
		if n := a.open() + a.opening; n >= a.maxSessions {
			var refusal any = map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": codeOverloaded,
				"message": fmt.Sprintf("server busy: %d sessions open, the most this server holds (server --max-sessions %d); retry later", n, a.maxSessions)}}
			if batch {
				refusal = []any{refusal}
			}
			b, _ := json.Marshal(refusal)
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusServiceUnavailable)
			w.Write(b)
			return nil, false
		}
		a.opening++
		return func() { a.mu.Lock(); a.opening--; a.mu.Unlock() }, true
	}
	return func() {}, true
}

// initializeID reports whether pb may open a session: an initialize
// request, a batch holding one (the SDK serves batches to clients of
// protocol 2025-03-26, which it assumes when the header is absent), or a
// body that decodes as neither a request nor a batch. The last fails
// closed: the SDK refuses what it cannot decode, but nothing should open a
// session uncounted because this decoder and the SDK's disagree. id is the
// initialize's id (null when there is none); batch says to answer a
// refusal as a batch.
func initializeID(pb *jsonrpcwire.Body) (id json.RawMessage, batch, ok bool) {
	if pb == nil {
		return nil, false, true
	}
	var found *jsonrpcwire.BodyMessage
	for i, m := range pb.Msgs {
		method, isString := m.MethodName()
		if !isString {
			return nil, pb.Batch, true
		}
		if method == "initialize" && found == nil {
			found = &pb.Msgs[i]
		}
	}
	switch {
	case pb.Odd:
		return nil, true, true
	case found == nil:
		return nil, pb.Batch, false
	}
	return found.ID, pb.Batch, true
}
