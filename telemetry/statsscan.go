package telemetry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// statsScan is what scanForStats keeps across segments: per session (by
// global index) its tally and what merging needs, and the session ids in
// a set the collector does not trace. A segment's session numbers map to
// global indices through a slice, so a call costs no lookup by id.
type statsScan struct {
	ids      *idSet[int32] // session id -> global index
	tallies  []sessionTally
	extra    []statsExtra
	toolIDs  map[string]int32  // tool name -> id in snap.toolNames
	otherIDs map[Outcome]int32 // outcome outside the coded ones -> id
	intern   map[string]string // session fields that repeat: clients, profiles
}

// statsExtra is what merging one session's records across segments needs
// beside its tally.
type statsExtra struct {
	seen      bool // a record, switch or call of the session was read
	record    bool // a session record was read (else the session is synthesised from calls)
	merged    bool // joined to the earliest record of its trace
	called    bool // a call was read: firstCall and lastEnd hold
	firstCall uint64
	lastEnd   uint64    // Unix ns
	end       time.Time // the record's end; zero while open
	trace     string
	profile   string
}

// scanForStats is ScanStats: per session, the counts of its calls by tool
// and outcome and what Summarize reads of its record, merged across
// segments and traces as scan merges them, without building a Usage or
// decoding a call's other fields.
func scanForStats(ctx context.Context, dirs []string, w Window) (*Snapshot, error) {
	if len(dirs) == 0 {
		return nil, errors.New("read telemetry: no directory given")
	}
	segs, err := ListSegments(dirs)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{ToolCalls: map[string]int{}}
	snap.outcomeNames = make([]Outcome, 0, 8)
	for code := codeNone; ; code++ {
		o, ok := outcomeOfCode(code)
		if !ok {
			break
		}
		snap.outcomeNames = append(snap.outcomeNames, o)
	}
	st := &statsScan{ids: newIDSet[int32](), toolIDs: map[string]int32{}, otherIDs: map[Outcome]int32{}, intern: map[string]string{}}
	err = readSegments(ctx, segs, snap, func(tx *bolt.Tx, path string) error {
		return st.readSegment(ctx, tx, path, w, snap)
	})
	if err != nil {
		return nil, err
	}
	st.mergeTraces()
	// Keep the sessions of the window, in place.
	kept := 0
	for i := range st.tallies {
		t, x := &st.tallies[i], &st.extra[i]
		if !x.seen || x.merged {
			continue
		}
		if x.called {
			t.lastEnd = time.Unix(0, int64(x.lastEnd)).UTC()
		}
		if !x.record {
			t.start = time.Time{}
			if x.called {
				t.start = time.Unix(0, int64(x.firstCall)).UTC()
			}
		}
		t.end = x.end
		if !w.Contains(t.start) {
			continue
		}
		t.session = true
		st.tallies[kept] = *t
		kept++
	}
	clear(st.tallies[kept:])
	snap.tallies = st.tallies[:kept:kept]
	return snap, nil
}

// index returns the global index of session id, adding it.
func (st *statsScan) index(id []byte) int32 {
	i, _ := st.ids.insertBytes(id, int32(len(st.tallies)))
	if int(i) == len(st.tallies) {
		st.tallies = append(st.tallies, sessionTally{})
		st.extra = append(st.extra, statsExtra{})
	}
	return i
}

// sessionNumbers maps the session numbers of a names bucket to global
// indices, -1 for a number the bucket skips (read as the id "" when used,
// as numberedNames reads it).
func (st *statsScan) sessionNumbers(b *bolt.Bucket, path string) ([]int32, error) {
	n, err := numberedLen(b, path, bucketSessionNames)
	if err != nil || n == 0 {
		return nil, err
	}
	idx := make([]int32, n)
	for i := range idx {
		idx[i] = -1
	}
	if st.tallies == nil {
		// Sized from the first segment: most directories hold one or a few.
		st.tallies = make([]sessionTally, 0, len(idx))
		st.extra = make([]statsExtra, 0, len(idx))
	}
	err = b.ForEach(func(k, v []byte) error {
		if len(k) != 4 {
			return numberedKeyError(path, bucketSessionNames, k)
		}
		idx[binary.BigEndian.Uint32(k)] = st.index(v)
		return nil
	})
	return idx, err
}

// at is the global index of session number sn, given the numbers'
// indices; false when sn is past them.
func (st *statsScan) at(idx []int32, sn uint32) (int32, bool) {
	if int(sn) >= len(idx) {
		return 0, false
	}
	if idx[sn] < 0 {
		idx[sn] = st.index(nil)
	}
	return idx[sn], true
}

func (st *statsScan) readSegment(ctx context.Context, tx *bolt.Tx, path string, w Window, snap *Snapshot) error {
	meta := readMeta(tx)
	// As scan: a segment closed before the window is read for its session
	// records only.
	beforeWindow := !w.Since.IsZero() && !meta.Closed.IsZero() && meta.Closed.Before(w.Since)
	if beforeWindow {
		snap.segmentsBeforeWindow++
	} else {
		snap.Dropped += meta.Dropped
	}
	bad := func(bucket string, k []byte, err error) error {
		return fmt.Errorf("read telemetry segment %s: bucket %s key %x: %w", path, bucket, k, err)
	}
	idx, err := st.sessionNumbers(tx.Bucket([]byte(bucketSessionNames)), path)
	if err != nil {
		return err
	}
	tools, err := numberedNames(tx.Bucket([]byte(bucketTools)), path, bucketTools)
	if err != nil {
		return err
	}
	toolID := make([]int32, len(tools))
	for tn, name := range tools {
		id, ok := st.toolIDs[name]
		if !ok {
			id = int32(len(snap.toolNames))
			st.toolIDs[name] = id
			snap.toolNames = append(snap.toolNames, name)
		}
		toolID[tn] = id
	}
	if err := tx.Bucket([]byte(bucketSessions)).ForEach(func(k, v []byte) error {
		s, sn, err := decodeSession(k, v, st.intern)
		i, ok := st.at(idx, sn)
		if err != nil || !ok {
			return bad("sessions", k, cmpErr(err, "unknown session number"))
		}
		t, x := &st.tallies[i], &st.extra[i]
		x.seen = true
		// A later segment's record replaces an earlier one unless only the
		// earlier one saw the session end.
		if !x.record || !s.End.IsZero() || x.end.IsZero() {
			t.start, x.end = s.Start, s.End
			t.clientName, t.clientVersion, t.attribution = s.ClientName, s.ClientVersion, s.Attribution
			x.trace, x.profile = s.Trace, s.Profile
			x.record = true
		}
		return nil
	}); err != nil {
		return err
	}
	if beforeWindow {
		return nil
	}
	if err := tx.Bucket([]byte(bucketSwitches)).ForEach(func(k, v []byte) error {
		_, sn, err := decodeSwitch(k, v)
		i, ok := st.at(idx, sn)
		if err != nil || !ok {
			return bad("switches", k, cmpErr(err, "unknown session number"))
		}
		st.extra[i].seen = true
		return nil
	}); err != nil {
		return err
	}

	toolCalls := make([]int, len(tools))
	defer func() {
		for tn, n := range toolCalls {
			if n > 0 {
				snap.ToolCalls[tools[tn]] += n
			}
		}
	}()
	c := tx.Bucket([]byte(bucketCalls)).Cursor()
	k, v := firstCallIn(c, w)
	n := 0
	defer func() { snap.callsVisited += n }()
	for ; k != nil; k, v = c.Next() {
		if n++; n&0xffff == 0 {
			if err := ctx.Err(); err != nil {
				return err
			}
		}
		// Session, skip seq, tool, duration, outcome.
		r := recordReader{b: v}
		sn := uint32(r.uvarint())
		r.uvarint()
		tn := uint32(r.uvarint())
		start := binary.BigEndian.Uint64(k)
		end := start + r.uvarint()
		outcome := r.outcome()
		i, ok := st.at(idx, sn)
		if r.err != nil || !ok || int(tn) >= len(tools) {
			return bad("calls", k, cmpErr(r.err, "unknown session or tool number"))
		}
		toolCalls[tn]++
		t, x := &st.tallies[i], &st.extra[i]
		if !x.called || start < x.firstCall {
			x.firstCall = start
		}
		x.lastEnd = max(x.lastEnd, end)
		x.seen, x.called = true, true
		t.tools = addCount(t.tools, toolID[tn], 1)
		t.outcomes = addCount(t.outcomes, st.outcomeID(outcome, snap), 1)
	}
	return nil
}

// outcomeID is the id of o in snap.outcomeNames: its stored code for the
// coded outcomes, else one given at first sight.
func (st *statsScan) outcomeID(o Outcome, snap *Snapshot) int32 {
	if code := outcomeCode(o); code != codeOther {
		return int32(code)
	}
	id, ok := st.otherIDs[o]
	if !ok {
		id = int32(len(snap.outcomeNames))
		st.otherIDs[o] = id
		snap.outcomeNames = append(snap.outcomeNames, o)
	}
	return id
}

// mergeTraces merges the sessions of one trace and profile into the
// earliest, as mergeTraces does for a scan.
func (st *statsScan) mergeTraces() {
	var traced []int32
	for i := range st.tallies {
		if x := &st.extra[i]; x.record && st.tallies[i].attribution == AttributionTrace && x.trace != "" {
			traced = append(traced, int32(i))
		}
	}
	if len(traced) < 2 {
		return
	}
	less := func(a, b int32) bool {
		ta, tb := &st.tallies[a], &st.tallies[b]
		if !ta.start.Equal(tb.start) {
			return ta.start.Before(tb.start)
		}
		return string(st.ids.at(int(a))) < string(st.ids.at(int(b)))
	}
	sort.Slice(traced, func(i, j int) bool { return less(traced[i], traced[j]) })
	type key struct{ trace, profile string }
	first := map[key]int32{}
	for _, i := range traced {
		k := key{st.extra[i].trace, st.extra[i].profile}
		p, ok := first[k]
		if !ok {
			first[k] = i
			continue
		}
		st.join(p, i)
	}
}

// join adds the later-started session a to session p, and marks a merged.
func (st *statsScan) join(p, a int32) {
	s, t := &st.tallies[p], &st.tallies[a]
	sx, tx := &st.extra[p], &st.extra[a]
	switch {
	case sx.end.IsZero():
	case tx.end.IsZero():
		sx.end = tx.end
	case tx.end.After(sx.end):
		sx.end = tx.end
	}
	for _, c := range t.tools {
		s.tools = addCount(s.tools, c.id, c.n)
	}
	for _, c := range t.outcomes {
		s.outcomes = addCount(s.outcomes, c.id, c.n)
	}
	if tx.called {
		if !sx.called || tx.firstCall < sx.firstCall {
			sx.firstCall = tx.firstCall
		}
		sx.lastEnd = max(sx.lastEnd, tx.lastEnd)
		sx.called = true
	}
	tx.merged = true
}
