package telemetry

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	bolt "go.etcd.io/bbolt"
)

// ImportReplica is the replica name of segments written by Import.
const ImportReplica = "import"

// importBatch is how many events an Importer commits at a time: its memory
// is this many events, whatever the size of the import.
const importBatch = 1 << 16

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
	have    map[string]bool // ids stored in dir before the import
	offered int             // sessions passed to Add, for default starts

	tmp, replica string
	seg          *segmentWriter
	batch        []event
	first, last  time.Time
	res          ImportResult
	done         bool
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
	if im.have[t.Session] {
		im.res.Skipped = append(im.res.Skipped, t.Session)
		return false, nil
	}
	if im.seg == nil {
		if err := im.create(); err != nil {
			im.Abort()
			return false, err
		}
	}
	s := traceSession(*t, im.now.Add(time.Duration(i)*time.Microsecond))
	// Calls have no times in the format: space them a nanosecond apart
	// from the session start so they keep their order.
	for j, c := range t.Calls {
		call := Call{Session: s.ID, Seq: uint64(j + 1), Tool: c.Tool, Start: s.Start.Add(time.Duration(j)), Outcome: outcomeOf(c)}
		im.batch = append(im.batch, event{kind: eventCall, call: call})
		im.last = latest(im.last, call.Start)
	}
	s.End = s.Start.Add(time.Duration(len(t.Calls)))
	im.batch = append(im.batch, event{kind: eventSession, session: &s})
	if im.first.IsZero() || s.Start.Before(im.first) {
		im.first = s.Start
	}
	im.last = latest(im.last, s.End)
	im.res.Sessions++
	im.res.Calls += len(t.Calls)
	if len(im.batch) >= importBatch {
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
	db, err := createSegmentWith(im.tmp, im.replica, im.now, &bolt.Options{Timeout: LockTimeout, NoSync: true, NoGrowSync: true})
	if err != nil {
		os.Remove(im.tmp)
		return err
	}
	w, err := newSegmentWriter(db, im.tmp)
	if err != nil {
		db.Close()
		os.Remove(im.tmp)
		return err
	}
	im.seg = w
	im.batch = make([]event, 0, importBatch+64)
	return nil
}

func (im *Importer) flush() error {
	if err := im.ctx.Err(); err != nil {
		im.Abort()
		return err
	}
	if err := im.seg.commit(im.batch, 0, false); err != nil {
		im.Abort()
		return err
	}
	clear(im.batch)
	im.batch = im.batch[:0]
	return nil
}

// Commit writes what is left, marks the segment closed and renames it into
// dir. With nothing added, it writes nothing.
func (im *Importer) Commit() (ImportResult, error) {
	if im.done {
		return im.res, errors.New("import: Commit after Commit or Abort")
	}
	if im.seg == nil {
		im.done = true
		return im.res, nil
	}
	if err := im.flush(); err != nil {
		return im.res, err
	}
	// The segment's created time is its earliest session's start, known
	// only now.
	if err := im.seg.db.Update(func(tx *bolt.Tx) error {
		return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaCreated), be64(nanos(im.first)))
	}); err != nil {
		im.Abort()
		return im.res, fmt.Errorf("import: write telemetry segment %s: %w", im.tmp, err)
	}
	// Closing commits once more, now with fsync: that one covers the
	// batches written without.
	im.seg.db.NoSync = false
	err := im.seg.close(im.last, 0)
	im.seg = nil
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
	if im.seg != nil {
		im.seg.db.Close()
		im.seg = nil
	}
	if im.tmp != "" {
		os.Remove(im.tmp)
	}
	im.batch = nil
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
func storedSessionIDs(ctx context.Context, dir string) (map[string]bool, error) {
	segs, err := ListSegments([]string{dir})
	if err != nil {
		return nil, err
	}
	ids := map[string]bool{}
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
				ids[string(v)] = true
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
