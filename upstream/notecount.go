package upstream

// Order of a server's notifications and its answers.
//
// The SDK's client hands an answer to its caller as soon as it is read,
// while the notifications read before it wait in a queue for the SDK's
// handler goroutine. A log message or progress notification the server
// wrote just before answering could so reach OnLog/OnProgress after
// CallTool returned, when the gateway has answered its client already and
// the notification finds no call in flight. So the order is kept: what
// reads the server's messages counts the relayed notifications it reads
// (a stdio connection's read loop; for an HTTP server, the round tripper
// as it hands on each SSE event), the receiving middleware counts those
// handled, and a call, once answered, waits until every notification read
// before its answer has been handled (read before it for a relayed call;
// for one through the SDK's client, read by the time it returned, which
// is at least that). The SDK handles notifications one at a time in the order
// read, so the count is the order. The wait is bounded by the call's
// context and by notesWaitMax; one the SDK refuses before its middleware
// (malformed params) is given up for lost when nothing is in hand at the
// bound, so that later calls do not wait for it.

import (
	"bytes"
	"context"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// notesWaitMax bounds how long an answered call waits for the
// notifications read before its answer.
const notesWaitMax = time.Second

// noteCount counts one connection's relayed notifications.
type noteCount struct {
	mu       sync.Mutex
	read     uint64        // read from the server
	handled  uint64        // handled, or given up for lost
	handling int           // being handled now
	changed  chan struct{} // closed, and replaced, when handled grows
}

// notesKey is the context key of the connection's noteCount, set on the
// context the session is connected with, which the SDK's handlers' contexts
// carry.
type notesKey struct{}

// counted reports whether msg is a notification the middleware will see
// as one that trackNotes counts: the SDK refuses, before its middleware, a
// notification without params.
func counted(msg jsonrpc.Message) bool {
	req, ok := msg.(*jsonrpc.Request)
	if !ok || req.IsCall() || !relayed(req.Method) {
		return false
	}
	p := bytes.TrimSpace(req.Params)
	if req.Method == "notifications/message" || req.Method == "notifications/progress" {
		return len(p) > 0 && p[0] == '{'
	}
	return len(p) == 0 || p[0] == '{' || bytes.Equal(p, []byte("null")) // list_changed: params optional
}

// readOne notes msg as read; it returns the count read so far.
func (n *noteCount) readOne(msg jsonrpc.Message) uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	if counted(msg) {
		n.read++
	}
	return n.read
}

// readSoFar is the count of notifications read so far.
func (n *noteCount) readSoFar() uint64 {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.read
}

func (n *noteCount) begin() {
	n.mu.Lock()
	n.handling++
	n.mu.Unlock()
}

func (n *noteCount) end() {
	n.mu.Lock()
	n.handling--
	n.handled++
	if n.changed != nil {
		close(n.changed)
		n.changed = nil
	}
	n.mu.Unlock()
}

// wait returns once the first target notifications read have been
// handled, ctx has ended, or notesWaitMax has passed.
func (n *noteCount) wait(ctx context.Context, target uint64) {
	var timer *time.Timer
	for {
		n.mu.Lock()
		if n.handled >= target {
			n.mu.Unlock()
			return
		}
		if n.changed == nil {
			n.changed = make(chan struct{})
		}
		changed := n.changed
		n.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(notesWaitMax)
			defer timer.Stop()
		}
		select {
		case <-changed:
			continue
		case <-ctx.Done():
			return
		case <-timer.C:
		}
		n.mu.Lock()
		if n.handling == 0 && n.handled < target {
			// Nothing in hand at the bound: the rest were refused
			// before the middleware, even if later ones were handled
			// meanwhile (a call's own), which must not keep the
			// count behind for every later call.
			n.handled = target
		}
		n.mu.Unlock()
		return
	}
}
