package telemetry

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
)

// Replicas behind one load balancer each serve some of a trace's requests,
// and each records its own usage session for the trace. Readers merge the
// records of one trace and profile into one usage session, so that a
// derivation sees the tools the trace used together, whichever replica
// served each call: the earliest-started record keeps its ID, start and
// identity; counts, tools and switches are summed or joined, the end is the
// latest (open while any part is), and its calls are numbered again in
// start order. Sessions attributed otherwise are never merged: a
// connection is served by one replica, and a caller's idle-gap sessions on
// two replicas need not be one.

// TraceKey is what a session record keeps of a trace id: a hash, which
// is enough to match the records of one trace and says nothing else.
func TraceKey(traceID string) string {
	h := sha256.Sum256([]byte("toolprof trace\x00" + traceID))
	return hex.EncodeToString(h[:16])
}

// mergeTraces merges the accumulated sessions of one trace and profile
// into the earliest one, removing the others from accs, and returns the
// merged IDs mapped to the one each joined.
func mergeTraces(accs map[string]*sessionAcc) map[string]string {
	var traced []*sessionAcc
	for _, a := range accs {
		if a.record && a.s.Attribution == AttributionTrace && a.s.Trace != "" {
			traced = append(traced, a)
		}
	}
	if len(traced) < 2 {
		return nil
	}
	sort.Slice(traced, func(i, j int) bool { return sessionLess(&traced[i].s, &traced[j].s) })
	type key struct{ trace, profile string }
	first := map[key]*sessionAcc{}
	alias := map[string]string{}
	for _, a := range traced {
		k := key{a.s.Trace, a.s.Profile}
		p, ok := first[k]
		if !ok {
			first[k] = a
			continue
		}
		p.join(a)
		alias[a.s.ID] = p.s.ID
		delete(accs, a.s.ID)
	}
	return alias
}

// join adds the later-started session a to s.
func (s *sessionAcc) join(a *sessionAcc) {
	switch {
	case s.s.End.IsZero():
	case a.s.End.IsZero():
		s.s.End = a.s.End
	case a.s.End.After(s.s.End):
		s.s.End = a.s.End
	}
	s.s.Exploration = s.s.Exploration || a.s.Exploration
	// A part served read-only did not see every tool: nor did the whole.
	s.s.ReadOnly = s.s.ReadOnly || a.s.ReadOnly
	s.s.ToolsListCalls += a.s.ToolsListCalls
	s.s.ToolsListPages += a.s.ToolsListPages
	s.switches = append(append(s.switches, a.s.Switches...), a.switches...)
	if !a.firstCall.IsZero() && (s.firstCall.IsZero() || a.firstCall.Before(s.firstCall)) {
		s.firstCall = a.firstCall
	}
	s.tools = append(s.tools, a.tools...)
	s.unsorted = true
	s.calls += a.calls
	s.denied += a.denied
	s.unknown += a.unknown
}

// repoint moves the calls of merged sessions to the session each joined.
func repoint(calls []Call, alias map[string]string) {
	if len(alias) == 0 {
		return
	}
	for i := range calls {
		if to, ok := alias[calls[i].Session]; ok {
			calls[i].Session = to
		}
	}
}

// renumber numbers again, in start order, the calls of sessions others
// joined (calls is sorted by start).
func renumber(calls []Call, alias map[string]string) {
	if len(alias) == 0 {
		return
	}
	merged := map[string]uint64{}
	for _, to := range alias {
		merged[to] = 0
	}
	for i := range calls {
		if n, ok := merged[calls[i].Session]; ok {
			merged[calls[i].Session] = n + 1
			calls[i].Seq = n + 1
		}
	}
}
