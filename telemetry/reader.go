package telemetry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/maphash"
	"math/bits"
	"os"
	"slices"
	"sort"
	"time"

	bolt "go.etcd.io/bbolt"
)

// Window selects sessions by start time: Since <= start < Until. A zero
// bound is open-ended.
type Window struct{ Since, Until time.Time }

// Contains reports whether t falls in the window.
func (w Window) Contains(t time.Time) bool {
	return (w.Since.IsZero() || !t.Before(w.Since)) && (w.Until.IsZero() || t.Before(w.Until))
}

// Usage is what one session did with its tools.
type Usage struct {
	Session Session
	Tools   []string // distinct tools called, sorted; denied calls included
	Calls   int
	Denied  int
	Unknown int // calls to a tool no upstream offers
}

// SkippedSegment is a segment a reader left out because a live writer holds
// it; its events are read once the writer rotates or closes it.
type SkippedSegment struct {
	Path string
	Err  error
}

// Snapshot is everything read from a set of telemetry directories.
type Snapshot struct {
	Sessions []Session // sorted by start, then ID
	Calls    []Call    // calls of those sessions, sorted by start, session, seq
	Usage    []Usage   // per session, same order as Sessions
	Dropped  uint64    // events the recorders dropped or lost, summed over segments read
	Segments []SegmentFile
	Skipped  []SkippedSegment
	// ToolCalls counts the calls read per tool name: with a window, the
	// calls recorded from its start on.
	ToolCalls map[string]int

	// What the read touched, so tests can show a window is not a full
	// scan: segments whose calls were not read because the segment closed
	// before the window, and call records visited.
	segmentsBeforeWindow int
	callsVisited         int

	// With ScanStats: per Usage, what Summarize needs of its calls, and
	// the names of the tool and outcome ids they use.
	tallies      []sessionTally
	toolNames    []string
	outcomeNames []Outcome
}

// sessionTally is what stats needs of one session: of its record, and
// the counts of its calls.
type sessionTally struct {
	session                   bool // false for calls of a session not in the snapshot
	start, end                time.Time
	clientName, clientVersion string
	attribution               Attribution
	tools                     []idCount // calls per tool id
	outcomes                  []idCount // calls per outcome id
	lastEnd                   time.Time // latest call end; zero without calls
}

type idCount struct{ id, n int32 }

// add counts one call of id in counts; sessions call few distinct tools,
// so a scan beats a map.
func addCount(counts []idCount, id int32, n int32) []idCount {
	for i := range counts {
		if counts[i].id == id {
			counts[i].n += n
			return counts
		}
	}
	return append(counts, idCount{id, n})
}

// scanMode is what a scan reads of the calls.
type scanMode uint8

const (
	scanUsage scanMode = iota // tool sets and counts
	scanFull                  // and every call record
)

// ReadUsage returns per-session tool usage for sessions started in w,
// sorted by session start then ID. It decodes only what usage needs, which
// is the fast path for profile derivation.
func ReadUsage(ctx context.Context, dirs []string, w Window) ([]Usage, error) {
	snap, err := scan(ctx, dirs, w, scanUsage)
	if err != nil {
		return nil, err
	}
	return snap.Usage, nil
}

// ScanUsage reads what ReadUsage does, plus the counts of a Snapshot
// (Usage, Dropped, Segments, Skipped, ToolCalls); Sessions and Calls stay
// empty.
func ScanUsage(ctx context.Context, dirs []string, w Window) (*Snapshot, error) {
	return scan(ctx, dirs, w, scanUsage)
}

// ScanStats reads the counts of a Snapshot (Dropped, Segments, Skipped,
// ToolCalls) and per session what Summarize and SummarizeEffects need: of
// its record, and the counts of its calls by tool and outcome, so stats
// never holds the call records or a Usage; Sessions, Calls and Usage stay
// empty (statsscan.go).
func ScanStats(ctx context.Context, dirs []string, w Window) (*Snapshot, error) {
	return scanForStats(ctx, dirs, w)
}

// ReadAll returns the sessions started in w and all their calls.
func ReadAll(ctx context.Context, dirs []string, w Window) ([]Session, []Call, error) {
	snap, err := scan(ctx, dirs, w, scanFull)
	if err != nil {
		return nil, nil, err
	}
	return snap.Sessions, snap.Calls, nil
}

// Scan reads everything ReadAll and ReadUsage do, plus the drop count and
// which segments were read or skipped.
func Scan(ctx context.Context, dirs []string, w Window) (*Snapshot, error) {
	return scan(ctx, dirs, w, scanFull)
}

// accExtra is what merging one session's records across segments needs
// beside its Usage.
type accExtra struct {
	record    bool // a session record was seen (else the session is synthesised from calls)
	merged    bool // joined to the earliest record of its trace (mergeTraces)
	unsorted  bool // Usage.Tools holds a second segment's set appended
	firstCall time.Time
	switches  []Switch
}

// perSegment accumulates one segment's calls by session number; its tool
// set is the session number's words of the segment's sets.
type perSegment struct {
	calls, denied, unknown int
	first                  uint64 // first call start, Unix ns
}

// scanState is what a scan keeps across segments.
type scanState struct {
	// The sessions merged so far, in the order first seen: their Usage is
	// built in place, then sorted in place, so a scan holds one Usage per
	// session and never a second copy.
	index map[string]int32 // session id -> index in usage and extra
	usage []Usage
	extra []accExtra
}

// errNamesRepeat is readSegment's answer, with distinct set, when the
// segment names some session twice: it is read again without distinct.
var errNamesRepeat = errors.New("a session id under two numbers")

// distinctNames reports whether names are pairwise different, judged by
// 64-bit hashes: a collision of two different names reports false, which
// only costs the caller the slower, general read.
func distinctNames(names []string) bool {
	seed := maphash.MakeSeed()
	hs := make([]uint64, len(names))
	for i, n := range names {
		hs[i] = maphash.String(seed, n)
	}
	slices.Sort(hs)
	for i := 1; i < len(hs); i++ {
		if hs[i] == hs[i-1] {
			return false
		}
	}
	return true
}

func scan(ctx context.Context, dirs []string, w Window, mode scanMode) (*Snapshot, error) {
	full := mode == scanFull
	if len(dirs) == 0 {
		return nil, errors.New("read telemetry: no directory given")
	}
	segs, err := ListSegments(dirs)
	if err != nil {
		return nil, err
	}
	snap := &Snapshot{ToolCalls: map[string]int{}}
	st := &scanState{}
	var calls []Call
	err = readSegments(ctx, segs, snap, func(tx *bolt.Tx, path string) error {
		// The first segment's session ids are most often distinct (a
		// recorder numbers each once): then its sessions need no index by
		// id, which at a million sessions is most of the session records'
		// pass.
		if len(st.usage) == 0 && len(calls) == 0 {
			err := readSegment(ctx, tx, path, w, mode, st, &calls, snap, true)
			if !errors.Is(err, errNamesRepeat) {
				return err
			}
			*st, calls = scanState{}, calls[:0]
		}
		return readSegment(ctx, tx, path, w, mode, st, &calls, snap, false)
	})
	if err != nil {
		return nil, err
	}

	alias := mergeTraces(st)
	// Sort indices, not records: a Usage is hundreds of bytes and there
	// may be millions of sessions.
	kept := make([]int32, 0, len(st.usage))
	for i := range st.usage {
		u, x := &st.usage[i], &st.extra[i]
		if x.merged {
			continue // joined to another record of its trace (mergeTraces)
		}
		if !x.record {
			u.Session = Session{ID: u.Session.ID, Start: x.firstCall}
		}
		if !w.Contains(u.Session.Start) {
			continue
		}
		kept = append(kept, int32(i))
		if len(x.switches) > 0 {
			u.Session.Switches = mergeSwitches(u.Session.Switches, x.switches)
		}
		if x.unsorted {
			slices.Sort(u.Tools)
			u.Tools = slices.Compact(u.Tools)
		}
	}
	st.index = nil
	sort.Slice(kept, func(i, j int) bool { return sessionLess(&st.usage[kept[i]].Session, &st.usage[kept[j]].Session) })
	st.extra = nil
	snap.Usage = gather(st.usage, kept)
	st.usage = nil
	var keep map[string]bool
	if full {
		keep = make(map[string]bool, len(snap.Usage))
		snap.Sessions = make([]Session, len(snap.Usage))
		for k := range snap.Usage {
			keep[snap.Usage[k].Session.ID] = true
			snap.Sessions[k] = snap.Usage[k].Session
		}
		repoint(calls, alias)
		calls = slices.DeleteFunc(calls, func(c Call) bool { return !keep[c.Session] })
		sort.Slice(calls, func(i, j int) bool {
			a, b := &calls[i], &calls[j]
			if !a.Start.Equal(b.Start) {
				return a.Start.Before(b.Start)
			}
			if a.Session != b.Session {
				return a.Session < b.Session
			}
			return a.Seq < b.Seq
		})
		renumber(calls, alias)
		snap.Calls = calls
	}
	return snap, nil
}

// gather returns us reordered in place so that element k is the one at
// kept[k], cut to len(kept): the permutation is applied cycle by cycle,
// with one Usage of scratch space.
func gather(us []Usage, kept []int32) []Usage {
	// perm: kept first, then the rest, so it is a permutation of us.
	perm := make([]int32, 0, len(us))
	in := make([]bool, len(us))
	for _, i := range kept {
		perm = append(perm, i)
		in[i] = true
	}
	for i := range us {
		if !in[i] {
			perm = append(perm, int32(i))
		}
	}
	done := make([]bool, len(us))
	for start := range us {
		if done[start] {
			continue
		}
		tmp := us[start]
		k := start
		for {
			done[k] = true
			next := int(perm[k])
			if next == start {
				us[k] = tmp
				break
			}
			us[k] = us[next]
			k = next
		}
	}
	clear(us[len(kept):]) // the sessions outside the window
	return us[:len(kept):len(kept)]
}

func sessionLess(a, b *Session) bool {
	if !a.Start.Equal(b.Start) {
		return a.Start.Before(b.Start)
	}
	return a.ID < b.ID
}

func mergeSwitches(a, b []Switch) []Switch {
	all := append(append([]Switch(nil), a...), b...)
	sort.SliceStable(all, func(i, j int) bool { return all[i].Time.Before(all[j].Time) })
	return slices.CompactFunc(all, func(x, y Switch) bool { return x.Time.Equal(y.Time) && x.Group == y.Group })
}

// readSegment adds the segment's sessions to st. With distinct (st
// empty), it assumes the segment's session ids are distinct and adds them
// without index; it answers errNamesRepeat, having changed nothing of
// snap, if they are not.
func readSegment(ctx context.Context, tx *bolt.Tx, path string, w Window, mode scanMode, st *scanState, calls *[]Call, snap *Snapshot, distinct bool) (err error) {
	full := mode == scanFull
	meta := readMeta(tx)
	// A segment closed before the window holds only sessions started before
	// it: its calls, switches and drops are not read. Its session records
	// still are (they are few): a session that started there and went on
	// into a later segment must keep its real start, or its later calls
	// would make it look like a session of the window.
	beforeWindow := !w.Since.IsZero() && !meta.Closed.IsZero() && meta.Closed.Before(w.Since)
	bad := func(bucket string, k []byte, err error) error {
		return fmt.Errorf("read telemetry segment %s: bucket %s key %x: %w", path, bucket, k, err)
	}
	names, err := numberedNames(tx.Bucket([]byte(bucketSessionNames)), path, bucketSessionNames) // session number -> id
	if err != nil {
		return err
	}
	tools, err := numberedNames(tx.Bucket([]byte(bucketTools)), path, bucketTools) // tool number -> name
	if err != nil {
		return err
	}
	// Tool sets are bitsets over the tools' rank by name, so reading a set
	// yields its names already sorted.
	byName := make([]uint32, len(tools))
	for i := range byName {
		byName[i] = uint32(i)
	}
	sort.Slice(byName, func(i, j int) bool { return tools[byName[i]] < tools[byName[j]] })
	rank := make([]uint32, len(tools))
	for r, tn := range byName {
		rank[tn] = uint32(r)
	}
	var repeat chan bool // with distinct: answers whether names repeat
	if distinct {
		repeat = make(chan bool, 1)
		go func() { repeat <- !distinctNames(names) }()
	}
	if st.usage == nil {
		// Sized from the first segment: most directories hold one or a
		// few, and regrowing million-entry tables costs more than the guess.
		st.usage = make([]Usage, 0, len(names))
		st.extra = make([]accExtra, 0, len(names))
	}
	if !distinct && st.index == nil {
		st.index = make(map[string]int32, max(len(names), len(st.usage)))
		for i := range st.usage {
			st.index[st.usage[i].Session.ID] = int32(i)
		}
	}
	// accIndex returns the session's index in st.usage and st.extra.
	accIndex := func(id string) int32 {
		i, ok := int32(0), false
		if !distinct {
			i, ok = st.index[id]
		}
		if !ok {
			i = int32(len(st.usage))
			if !distinct {
				st.index[id] = i
			}
			st.usage = append(st.usage, Usage{Session: Session{ID: id}})
			st.extra = append(st.extra, accExtra{})
		}
		return i
	}
	// acc returns session number sn's accumulators, valid until the next
	// call. slot keeps each number's index once looked up (plus one; zero
	// before), so its calls find it without a second lookup by id.
	slot := make([]int32, len(names))
	acc := func(sn uint32) (*Usage, *accExtra) {
		i := slot[sn] - 1
		if i < 0 {
			i = accIndex(names[sn])
			slot[sn] = i + 1
		}
		return &st.usage[i], &st.extra[i]
	}
	// The calls are read on the other core, in a second read-only
	// transaction, while the session records are: they meet only in the
	// per-session totals after both. A segment before the window has no
	// calls to read.
	var per []perSegment
	if !beforeWindow {
		per = make([]perSegment, len(names))
	}
	toolCalls := make([]int, len(tools))
	visited := 0 // call records
	// The counts go to snap once the segment is read, after the calls
	// (the deferred wait below runs first).
	defer func() {
		if err == nil && repeat != nil && <-repeat {
			err = errNamesRepeat
		}
		if err != nil {
			return
		}
		if beforeWindow {
			snap.segmentsBeforeWindow++
		} else {
			snap.Dropped += meta.Dropped
		}
		snap.callsVisited += visited
		for tn, n := range toolCalls {
			if n > 0 {
				snap.ToolCalls[tools[tn]] += n
			}
		}
	}()
	words := (len(tools) + 63) / 64
	var sets []uint64 // per session number, words each
	if !beforeWindow {
		sets = make([]uint64, len(names)*words)
	}
	readCalls := func(tx *bolt.Tx) error {
		c := tx.Bucket([]byte(bucketCalls)).Cursor()
		k, v := firstCallIn(c, w)
		n := 0
		defer func() { visited = n }()
		for ; k != nil; k, v = c.Next() {
			if n++; n&0xffff == 0 {
				if err := ctx.Err(); err != nil {
					return err
				}
			}
			var sn, tn uint32
			var denied, unknown bool
			if full {
				call, s, t, err := decodeCall(k, v)
				if err != nil || int(s) >= len(names) || int(t) >= len(tools) {
					return bad("calls", k, cmpErr(err, "unknown session or tool number"))
				}
				call.Session, call.Tool = names[s], tools[t]
				*calls = append(*calls, call)
				sn, tn = s, t
				denied, unknown = call.Outcome == OutcomeDenied, call.Outcome == OutcomeUnknownTool
			} else {
				var err error
				sn, tn, denied, unknown, err = decodeCallUsage(v)
				if err != nil || int(sn) >= len(names) || int(tn) >= len(tools) {
					return bad("calls", k, cmpErr(err, "unknown session or tool number"))
				}
			}
			p := &per[sn]
			if p.calls == 0 {
				p.first = binary.BigEndian.Uint64(k)
			}
			p.calls++
			toolCalls[tn]++
			r := rank[tn]
			sets[int(sn)*words+int(r/64)] |= 1 << (r % 64)
			if denied {
				p.denied++
			}
			if unknown {
				p.unknown++
			}
		}
		return nil
	}
	callsRead := make(chan error, 1)
	if beforeWindow {
		callsRead <- nil
	} else {
		go func() {
			rtx, err := tx.DB().Begin(false)
			if err != nil {
				callsRead <- fmt.Errorf("read telemetry segment %s: %w", path, err)
				return
			}
			err = readCalls(rtx)
			// Ended before the answer is sent: once readSegment has it,
			// the caller may close the database.
			rtx.Rollback()
			callsRead <- err
		}()
	}
	// Wait for the calls on every return, so that nothing writes to the
	// accumulators after readSegment returns.
	waited := false
	wait := func() error {
		if waited {
			return nil
		}
		waited = true
		return <-callsRead
	}
	defer wait()
	intern := map[string]string{}
	if err := tx.Bucket([]byte(bucketSessions)).ForEach(func(k, v []byte) error {
		s, sn, err := decodeSession(k, v, intern)
		if err != nil || int(sn) >= len(names) {
			return bad("sessions", k, cmpErr(err, "unknown session number"))
		}
		s.ID = names[sn]
		u, x := acc(sn)
		// A later segment's record replaces an earlier one unless only the
		// earlier one saw the session end.
		if !x.record || !s.End.IsZero() || u.Session.End.IsZero() {
			u.Session = s
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
		sw, sn, err := decodeSwitch(k, v)
		if err != nil || int(sn) >= len(names) {
			return bad("switches", k, cmpErr(err, "unknown session number"))
		}
		_, x := acc(sn)
		x.switches = append(x.switches, sw)
		return nil
	}); err != nil {
		return err
	}

	if err := wait(); err != nil {
		return err
	}
	// The tool sets new to st share one allocation: a million sessions'
	// sets are then one object for the allocator and the collector, not a
	// million. Each is cut to its length, so an append copies it out.
	total := 0
	for _, word := range sets {
		total += bits.OnesCount64(word)
	}
	arena := make([]string, 0, total)
	for sn, p := range per {
		if p.calls == 0 {
			continue
		}
		u, x := acc(uint32(sn))
		first := time.Unix(0, int64(p.first)).UTC()
		if x.firstCall.IsZero() || first.Before(x.firstCall) {
			x.firstCall = first
		}
		u.Calls += p.calls
		u.Denied += p.denied
		u.Unknown += p.unknown
		x.unsorted = len(u.Tools) > 0 // a second segment's set is appended
		n := 0
		set := sets[sn*words : (sn+1)*words]
		for _, word := range set {
			n += bits.OnesCount64(word)
		}
		if len(u.Tools) == 0 {
			u.Tools, arena = arena[len(arena):len(arena):len(arena)+n], arena[:len(arena)+n]
		} else {
			u.Tools = slices.Grow(u.Tools, n) // one exact allocation, not doublings
		}
		for wi, word := range set {
			for word != 0 {
				b := bits.TrailingZeros64(word)
				word &^= 1 << b
				u.Tools = append(u.Tools, tools[byName[wi*64+b]])
			}
		}
	}
	return nil
}

// numberedNames reads a bucket of 4-byte numbers to names into a slice
// indexed by number, sized once from the last key (numberedLen).
func numberedNames(b *bolt.Bucket, path, bucket string) ([]string, error) {
	n, err := numberedLen(b, path, bucket)
	if err != nil || n == 0 {
		return nil, err
	}
	names := make([]string, n)
	err = b.ForEach(func(k, v []byte) error {
		if len(k) != 4 {
			return numberedKeyError(path, bucket, k)
		}
		names[binary.BigEndian.Uint32(k)] = string(v)
		return nil
	})
	return names, err
}

// numberedLen is the length of a table indexed by the 4-byte numbers a
// bucket maps, from its last key (the largest). Writers number from 0 or
// 1 without gaps, so the last number is at most the count of keys: a
// larger one (a damaged key) is an error, not a table of its size.
func numberedLen(b *bolt.Bucket, path, bucket string) (int, error) {
	k, _ := b.Cursor().Last()
	if k == nil {
		return 0, nil
	}
	if len(k) != 4 {
		return 0, numberedKeyError(path, bucket, k)
	}
	last := binary.BigEndian.Uint32(k)
	if keys := b.Stats().KeyN; int64(last) > int64(keys) {
		return 0, fmt.Errorf("read telemetry segment %s: bucket %s key %x: number %d is past the bucket's %d keys: want numbers 0 to %d, each once (the file is damaged)", path, bucket, k, last, keys, keys)
	}
	return int(last) + 1, nil
}

func numberedKeyError(path, bucket string, k []byte) error {
	return fmt.Errorf("read telemetry segment %s: bucket %s key %x: want a 4-byte number", path, bucket, k)
}

func cmpErr(err error, otherwise string) error {
	if err != nil {
		return err
	}
	return errors.New(otherwise)
}

// Compact removes the closed segments in dir whose last event is before
// before, and returns their paths. The segment a live recorder writes is
// never removed; one whose recorder died (unlocked and untouched for a
// minute) is closed first and then treated like any other.
func Compact(ctx context.Context, dir string, before time.Time) ([]string, error) {
	segs, err := ListSegments([]string{dir})
	if err != nil {
		return nil, err
	}
	var removed []string
	for _, seg := range segs {
		if err := ctx.Err(); err != nil {
			return removed, err
		}
		if !seg.Start.Before(before) {
			continue
		}
		if seg.Open {
			if !staleFile(seg.Path) {
				continue
			}
			if err := closeStale(seg); err != nil {
				if errors.Is(err, ErrSegmentLocked) {
					continue // a live recorder's
				}
				return removed, fmt.Errorf("compact telemetry: %w", err)
			}
			seg.Path, seg.Open = closedPath(seg.Path), false
		}
		db, err := openSegment(seg.Path)
		if err != nil {
			return removed, err
		}
		var end time.Time
		_ = db.View(func(tx *bolt.Tx) error {
			end = readMeta(tx).Closed
			if last := lastActivity(tx); last.After(end) {
				end = last
			}
			return nil
		})
		db.Close()
		if !end.Before(before) {
			continue
		}
		if err := os.Remove(seg.Path); err != nil {
			return removed, fmt.Errorf("compact telemetry: %w", err)
		}
		removed = append(removed, seg.Path)
	}
	return removed, nil
}

// readSegments reads each of segs in a read-only transaction, in order,
// and lists it in snap.Segments. A segment a recorder is creating this
// instant (empty) is passed over, and an open one another process holds
// locked is listed in snap.Skipped: both are the live segment, whose
// records the next read sees.
func readSegments(ctx context.Context, segs []SegmentFile, snap *Snapshot, read func(tx *bolt.Tx, path string) error) error {
	for _, seg := range segs {
		if err := ctx.Err(); err != nil {
			return err
		}
		if fi, err := os.Stat(seg.Path); err == nil && fi.Size() == 0 && seg.Open {
			continue // a recorder is creating it this instant: nothing in it yet
		}
		db, err := openSegment(seg.Path)
		if err != nil {
			if seg.Open && errors.Is(err, ErrSegmentLocked) {
				snap.Skipped = append(snap.Skipped, SkippedSegment{Path: seg.Path, Err: err})
				continue
			}
			return err
		}
		err = db.View(func(tx *bolt.Tx) error { return read(tx, seg.Path) })
		db.Close()
		if err != nil {
			return err
		}
		snap.Segments = append(snap.Segments, seg)
	}
	return nil
}

// firstCallIn positions c, over the calls bucket, at the first call of w:
// the keys start with the call's start time.
func firstCallIn(c *bolt.Cursor, w Window) (k, v []byte) {
	if w.Since.IsZero() {
		return c.First()
	}
	return c.Seek(timeKey(w.Since, 0)[:8])
}
