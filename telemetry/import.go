package telemetry

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ImportReplica is the replica name of segments written by Import.
const ImportReplica = "import"

// importBatch is how many calls an Importer commits at a time: its memory
// is two batches of this many calls and their sessions (one filled while
// the other is written), whatever the size of the import.
const importBatch = 1 << 14

// importMmap is the segment's initial map size: a million sessions take a
// quarter of it.
const importMmap = 1 << 30

// ImportResult says what Import stored.
type ImportResult struct {
	Path     string // the segment written ("" when there was nothing to write)
	Sessions int
	Calls    int
	Skipped  []string // session ids already in the telemetry directory
}

// Import stores traced sessions as one new closed segment in dir, written
// to a temporary file and renamed, so a failed import leaves nothing.
// Sessions whose id is already stored in dir are skipped (re-importing a
// file does not double its calls). Sessions without "started" get now, in
// input order. Arguments are never stored.
func Import(ctx context.Context, dir string, traces []TraceSession, now time.Time) (ImportResult, error) {
	im, err := NewImporter(ctx, dir, now)
	if err != nil {
		return ImportResult{}, err
	}
	defer im.Abort()
	for i := range traces {
		if _, err := im.Add(&traces[i]); err != nil {
			return im.res, err
		}
	}
	return im.Commit()
}

// Importer is Import one session at a time: sessions are committed in
// batches to a temporary segment as they are added, so an import of any
// size holds one batch of events and the ids of the sessions it has seen.
// Commit renames the segment into place; Abort (or a failed Add) removes
// it, leaving dir as it was. An Importer is not safe for concurrent use.
type Importer struct {
	ctx     context.Context
	dir     string
	now     time.Time
	have    *idSet[struct{}] // ids stored in dir before the import
	offered int              // sessions passed to Add, for default starts

	tmp, replica string
	db           *bolt.DB
	// The batch: sessions and their calls (calls[from:to] per session),
	// and the tools first seen in it. Sessions get numbers in the order
	// added, so the writer keeps no table of session ids: their names
	// are unique, which NewImporter's and the caller's checks ensure.
	// Tools are numbered by Add at first sight.
	batch    []importSession
	calls    []importCall
	newTools []string
	tools    map[string]uint32 // tool name -> number in the segment
	nextNum  uint32            // next session number
	counter  uint32            // call key suffix
	// A batch is encoded (enc) while the one before (prev) is put by
	// one goroutine: the decoding and encoding keep one core busy, the
	// writing the other. written is that goroutine's result, nil when
	// none is being written; an encoded batch is reused once committed.
	enc, prev *encodedBatch
	written   chan error
	// The greatest call and session keys written: a batch whose keys
	// are all above them is appended.
	lastCall, lastSession [timeKeyLen]byte

	first, last time.Time
	res         ImportResult
	done        bool
}

// encodedBatch is a batch as the writer puts it: keys and values in one
// arena (bbolt keeps references to them until the commit), the calls and
// sessions by key, and the tools first seen in it.
type encodedBatch struct {
	arena                  []byte
	names, calls, sessions []importRecord // names: a 4-byte key, then the id
	tools                  []string       // numbered from firstTool
	firstTool              uint32
}

type importSession struct {
	s        Session
	from, to int // its calls in Importer.calls
}

// importCall is what a trace says of a call: the rest of its record
// follows from its place in its session.
type importCall struct {
	tool    uint32 // number in the segment
	outcome Outcome
	search  bool // reached through call_tool
}

// NewImporter starts an import into dir, reading the ids of the sessions
// dir holds already.
func NewImporter(ctx context.Context, dir string, now time.Time) (*Importer, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("import into telemetry directory: %w", err)
	}
	have, err := storedSessionIDs(ctx, dir)
	if err != nil {
		return nil, fmt.Errorf("import: read existing sessions: %w", err)
	}
	return &Importer{ctx: ctx, dir: dir, now: now.UTC(), have: have}, nil
}

// Add stores t's session and calls. It returns false, and lists the id in
// the result's Skipped, when dir held the session already. After an error
// the import is aborted.
func (im *Importer) Add(t *TraceSession) (bool, error) {
	if im.done {
		return false, errors.New("import: Add after Commit or Abort")
	}
	i := im.offered
	im.offered++
	if im.have.has(t.Session) {
		im.res.Skipped = append(im.res.Skipped, t.Session)
		return false, nil
	}
	if im.db == nil {
		if err := im.create(); err != nil {
			im.Abort()
			return false, err
		}
	}
	s := traceSession(*t, im.now.Add(time.Duration(i)*time.Microsecond))
	from := len(im.calls)
	for _, c := range t.Calls {
		tn, ok := im.tools[c.Tool]
		if !ok {
			tn = uint32(len(im.tools) + 1)
			im.tools[c.Tool] = tn
			im.newTools = append(im.newTools, c.Tool)
		}
		im.calls = append(im.calls, importCall{tool: tn, outcome: outcomeOf(c), search: c.Search})
	}
	// Calls have no times in the format: they are spaced a nanosecond
	// apart from the session start (apply), so they keep their order, and
	// the session ends after the last.
	s.End = s.Start.Add(time.Duration(len(t.Calls)))
	im.batch = append(im.batch, importSession{s: s, from: from, to: len(im.calls)})
	if im.first.IsZero() || s.Start.Before(im.first) {
		im.first = s.Start
	}
	im.last = latest(im.last, s.End)
	im.res.Sessions++
	im.res.Calls += len(t.Calls)
	if len(im.calls) >= importBatch || len(im.batch) >= importBatch {
		if err := im.flush(); err != nil {
			return false, err
		}
	}
	return true, nil
}

func (im *Importer) create() error {
	var nonce [4]byte
	_, _ = rand.Read(nonce[:])
	im.replica = ImportReplica + "_" + hex.EncodeToString(nonce[:])
	im.tmp = filepath.Join(im.dir, ".import-"+hex.EncodeToString(nonce[:])+".tmp")
	// No fsync per batch: the file is a temporary one until Commit syncs
	// it once and renames it, and a crash before that leaves only a
	// temporary file readers ignore.
	// The map is reserved large from the start: each time bbolt grows it,
	// it copies out every node the transaction holds (a tenth of an
	// import's time). Only the address space is reserved.
	db, err := createSegmentWith(im.tmp, im.replica, im.now, &bolt.Options{Timeout: LockTimeout, NoSync: true, NoGrowSync: true, InitialMmapSize: importMmap})
	if err != nil {
		os.Remove(im.tmp)
		return err
	}
	im.db = db
	im.tools = map[string]uint32{}
	im.nextNum = 1
	im.calls = make([]importCall, 0, importBatch+256)
	im.enc, im.prev = &encodedBatch{}, &encodedBatch{}
	return nil
}

// flush encodes the batch while the one before is written, then starts
// writing it once that one is committed, and empties the batch for Add.
func (im *Importer) flush() error {
	if err := im.ctx.Err(); err != nil {
		im.Abort()
		return err
	}
	enc := im.enc
	im.encode(enc)
	clear(im.batch)
	clear(im.newTools)
	im.batch, im.calls, im.newTools = im.batch[:0], im.calls[:0], im.newTools[:0]
	if err := im.wait(); err != nil {
		im.Abort()
		return err
	}
	im.written = make(chan error, 1)
	go func() {
		im.written <- im.db.Update(func(tx *bolt.Tx) error { return im.apply(tx, enc) })
	}()
	im.enc, im.prev = im.prev, enc
	return nil
}

// wait waits for the batch being written, if any.
func (im *Importer) wait() error {
	if im.written == nil {
		return nil
	}
	err := <-im.written
	im.written = nil
	if err != nil {
		return fmt.Errorf("write telemetry segment %s: %w", im.tmp, err)
	}
	return nil
}

// encode encodes the batch into e: the records the segment writer
// writes, keyed and numbered the same way.
func (im *Importer) encode(e *encodedBatch) {
	e.arena = slices.Grow(e.arena[:0], 40*len(im.calls)+64*len(im.batch))
	e.names = slices.Grow(e.names[:0], len(im.batch))
	e.calls = slices.Grow(e.calls[:0], len(im.calls))
	e.sessions = slices.Grow(e.sessions[:0], len(im.batch))
	e.tools = append(e.tools[:0], im.newTools...)
	e.firstTool = uint32(len(im.tools)-len(im.newTools)) + 1
	arena := e.arena
	for i := range im.batch {
		is := &im.batch[i]
		sn := im.nextNum
		im.nextNum++
		start := len(arena)
		arena = append(binary.BigEndian.AppendUint32(arena, sn), is.s.ID...)
		e.names = append(e.names, importRecord{start, len(arena)})
		for j := is.from; j < is.to; j++ {
			n := j - is.from
			c := Call{Seq: uint64(n + 1), Start: is.s.Start.Add(time.Duration(n)), Outcome: im.calls[j].outcome, Search: im.calls[j].search}
			start := len(arena)
			arena = appendCall(appendTimeKey(arena, c.Start, im.counter), sn, im.calls[j].tool, &c)
			im.counter++
			e.calls = append(e.calls, importRecord{start, len(arena)})
		}
		start = len(arena)
		arena = appendSession(appendTimeKey(arena, is.s.Start, sn), &is.s)
		e.sessions = append(e.sessions, importRecord{start, len(arena)})
	}
	e.arena = arena
	byKey := func(x, y importRecord) int { return bytes.Compare(x.key(arena), y.key(arena)) }
	for _, recs := range [][]importRecord{e.calls, e.sessions} {
		if !slices.IsSortedFunc(recs, byKey) {
			slices.SortFunc(recs, byKey)
		}
	}
}

// apply puts an encoded batch.
func (im *Importer) apply(tx *bolt.Tx, e *encodedBatch) error {
	names := tx.Bucket([]byte(bucketSessionNames))
	toolsB := tx.Bucket([]byte(bucketTools))
	for _, b := range []*bolt.Bucket{names, toolsB} {
		b.FillPercent = appendFill // numbered in order: always appended
	}
	for i, name := range e.tools {
		if err := toolsB.Put(num4(e.firstTool+uint32(i)), []byte(name)); err != nil {
			return err
		}
	}
	for _, r := range e.names {
		if err := names.Put(e.arena[r.start:r.start+4:r.start+4], e.arena[r.start+4:r.end:r.end]); err != nil {
			return err
		}
	}
	if err := putInOrder(tx.Bucket([]byte(bucketCalls)), e.arena, e.calls, &im.lastCall); err != nil {
		return err
	}
	return putInOrder(tx.Bucket([]byte(bucketSessions)), e.arena, e.sessions, &im.lastSession)
}

// importRecord is a record in a batch's arena: a time key, then the value.
type importRecord struct{ start, end int }

func (r importRecord) key(arena []byte) []byte {
	return arena[r.start : r.start+timeKeyLen : r.start+timeKeyLen]
}

// timeKeyLen is the length of appendTimeKey's keys.
const timeKeyLen = 12

// putInOrder puts a batch's records, sorted by key, into b. Keys above
// every key before (*last) are appended to full pages; a batch that
// reaches back (sessions not in start order) is put with bbolt's default
// fill, since
// pages filled full would each split in two at the next key that falls
// into them (a shuffled trace made a segment three times as large).
func putInOrder(b *bolt.Bucket, arena []byte, recs []importRecord, last *[timeKeyLen]byte) error {
	if len(recs) == 0 {
		return nil
	}
	b.FillPercent = bolt.DefaultFillPercent
	if bytes.Compare(recs[0].key(arena), last[:]) > 0 {
		b.FillPercent = appendFill
	}
	for _, r := range recs {
		if err := b.Put(r.key(arena), arena[r.start+timeKeyLen:r.end:r.end]); err != nil {
			return err
		}
	}
	if k := recs[len(recs)-1].key(arena); bytes.Compare(k, last[:]) > 0 {
		copy(last[:], k)
	}
	return nil
}

// Commit writes what is left, marks the segment closed and renames it into
// dir. With nothing added, it writes nothing.
func (im *Importer) Commit() (ImportResult, error) {
	if im.done {
		return im.res, errors.New("import: Commit after Commit or Abort")
	}
	if im.db == nil {
		im.done = true
		return im.res, nil
	}
	if err := im.flush(); err != nil {
		return im.res, err
	}
	if err := im.wait(); err != nil {
		im.Abort()
		return im.res, err
	}
	// The segment's created time is its earliest session's start, known
	// only now.
	if err := im.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaCreated), be64(nanos(im.first)))
	}); err != nil {
		im.Abort()
		return im.res, fmt.Errorf("import: write telemetry segment %s: %w", im.tmp, err)
	}
	// Closing commits once more, now with fsync: that one covers the
	// batches written without.
	im.db.NoSync = false
	err := (&segmentWriter{db: im.db, path: im.tmp}).close(im.last, 0, "")
	im.db = nil
	if err != nil {
		im.Abort()
		return im.res, err
	}
	final := segmentPath(im.dir, im.replica, im.first, false)
	if err := os.Rename(im.tmp, final); err != nil {
		im.Abort()
		return im.res, fmt.Errorf("import: %w", err)
	}
	im.done = true
	im.res.Path = final
	return im.res, nil
}

// Abort removes the temporary segment. It is a no-op after Commit.
func (im *Importer) Abort() {
	if im.done {
		return
	}
	im.done = true
	_ = im.wait() // the import is dropped: its error says nothing more
	if im.db != nil {
		im.db.Close()
		im.db = nil
	}
	if im.tmp != "" {
		os.Remove(im.tmp)
	}
	im.batch, im.calls, im.newTools, im.enc, im.prev = nil, nil, nil, nil, nil
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// storedSessionIDs returns the ids of the sessions in dir's segments, read
// from their name tables alone. Segments a live writer holds are left out,
// as the readers leave them out.
func storedSessionIDs(ctx context.Context, dir string) (*idSet[struct{}], error) {
	segs, err := ListSegments([]string{dir})
	if err != nil {
		return nil, err
	}
	ids := newIDSet[struct{}]()
	for _, seg := range segs {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if fi, err := os.Stat(seg.Path); err == nil && fi.Size() == 0 && seg.Open {
			continue
		}
		db, err := openSegment(seg.Path)
		if err != nil {
			if seg.Open && errors.Is(err, ErrSegmentLocked) {
				continue
			}
			return nil, err
		}
		err = db.View(func(tx *bolt.Tx) error {
			return tx.Bucket([]byte(bucketSessionNames)).ForEach(func(_, v []byte) error {
				ids.insert(string(v), struct{}{})
				return nil
			})
		})
		db.Close()
		if err != nil {
			return nil, fmt.Errorf("read telemetry segment %s: %w", seg.Path, err)
		}
	}
	return ids, nil
}
