package gateway

import (
	"fmt"
	"sync/atomic"
)

// Default bounds on the tools/call in flight (Options.MaxSessionCalls,
// Options.MaxCalls).
const (
	DefaultMaxSessionCalls = 32
	DefaultMaxCalls        = 1024
)

// admission counts the calls in flight across sessions, and those answered
// busy.
type admission struct {
	calls atomic.Int64
	busy  atomic.Uint64
}

// admit takes a place for one call of s, or reports that its session or
// the gateway is at its bound. release gives the place back.
//
// A call over a bound is answered at once rather than queued: a client
// flooding the gateway (a batch of thousands of calls) would otherwise
// hold goroutines and memory for each, and slow every other session.
func (g *Gateway) admit(s *session) (release func(), ok bool) {
	if s.calls.Add(1) > int64(g.opts.MaxSessionCalls) {
		s.calls.Add(-1)
		g.admission.busy.Add(1)
		return nil, false
	}
	if g.admission.calls.Add(1) > int64(g.opts.MaxCalls) {
		g.admission.calls.Add(-1)
		s.calls.Add(-1)
		g.admission.busy.Add(1)
		return nil, false
	}
	return func() {
		g.admission.calls.Add(-1)
		s.calls.Add(-1)
	}, true
}

// busy is the envelope of a call over a bound.
func (g *Gateway) busy(s *session, tool string) Envelope {
	msg := fmt.Sprintf("tool %q not run: the gateway is busy (%d calls of all sessions in flight, the limit is %d, --max-calls)", tool, g.admission.calls.Load(), g.opts.MaxCalls)
	if n := s.calls.Load(); n >= int64(g.opts.MaxSessionCalls) {
		msg = fmt.Sprintf("tool %q not run: this session has %d calls in flight, the limit (--max-session-calls)", tool, n)
	}
	return Envelope{
		Code:             CodeBusy,
		Message:          msg,
		Retryable:        true,
		Category:         CategoryCapacity,
		SuggestedActions: []string{"retry the call once an earlier call of this session has been answered", "send fewer calls at once"},
	}
}
