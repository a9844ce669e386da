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

// mergeTraces merges the sessions of st of one trace and profile into
// the earliest one, marking the others merged, and returns the merged IDs
// mapped to the one each joined.
func mergeTraces(st *scanState) map[string]string {
	var traced []int32
	for i := range st.usage {
		s := &st.usage[i].Session
		if st.extra[i].record && s.Attribution == AttributionTrace && s.Trace != "" {
			traced = append(traced, int32(i))
		}
	}
	if len(traced) < 2 {
		return nil
	}
	sort.Slice(traced, func(i, j int) bool { return sessionLess(&st.usage[traced[i]].Session, &st.usage[traced[j]].Session) })
	type key struct{ trace, profile string }
	first := map[key]int32{}
	alias := map[string]string{}
	for _, i := range traced {
		s := &st.usage[i].Session
		k := key{s.Trace, s.Profile}
		p, ok := first[k]
		if !ok {
			first[k] = i
			continue
		}
		st.join(p, i)
		alias[s.ID] = st.usage[p].Session.ID
	}
	return alias
}

// join adds the later-started session a to session p, and marks a merged.
func (st *scanState) join(p, a int32) {
	s, t := &st.usage[p], &st.usage[a]
	sx, tx := &st.extra[p], &st.extra[a]
	switch {
	case s.Session.End.IsZero():
	case t.Session.End.IsZero():
		s.Session.End = t.Session.End
	case t.Session.End.After(s.Session.End):
		s.Session.End = t.Session.End
	}
	s.Session.Exploration = s.Session.Exploration || t.Session.Exploration
	// A part served read-only did not see every tool: nor did the whole.
	s.Session.ReadOnly = s.Session.ReadOnly || t.Session.ReadOnly
	s.Session.ToolsListCalls += t.Session.ToolsListCalls
	s.Session.ToolsListPages += t.Session.ToolsListPages
	sx.switches = append(append(sx.switches, t.Session.Switches...), tx.switches...)
	if !tx.firstCall.IsZero() && (sx.firstCall.IsZero() || tx.firstCall.Before(sx.firstCall)) {
		sx.firstCall = tx.firstCall
	}
	s.Tools = append(s.Tools, t.Tools...)
	sx.unsorted = true
	s.Calls += t.Calls
	s.Denied += t.Denied
	s.Unknown += t.Unknown
	tx.merged = true
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
