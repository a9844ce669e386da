package telemetry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"time"

	bolt "go.etcd.io/bbolt"
	berrors "go.etcd.io/bbolt/errors"
)

// SchemaVersion is the segment layout this build writes. Segments with a
// higher version are refused: their encoding is unknown to this build.
const SchemaVersion = 1

// LockTimeout is how long opening a segment waits for another process's lock
// before giving up: long enough to ride out a rotation, short enough that a
// reader never appears to hang.
const LockTimeout = 250 * time.Millisecond

// Errors callers can test with errors.Is.
var (
	// ErrSegmentLocked: another process (a running server) holds the segment.
	ErrSegmentLocked = errors.New("segment is held by another process")
	// ErrNewerSchema: the segment was written by a newer toolprof.
	ErrNewerSchema = errors.New("segment written by a newer schema")
	// ErrDamaged: the file is truncated or not a valid bbolt file.
	ErrDamaged = errors.New("segment is damaged or truncated")
	// ErrNotSegment: a valid bbolt file without toolprof's meta bucket.
	ErrNotSegment = errors.New("not a telemetry segment")
)

// Bucket names (constants: byte-slice variables would be package-level
// mutable state). Keys in calls and switches are 8 bytes of big-endian start
// time (Unix nanoseconds) followed by a 4-byte write counter, so a time
// window is a cursor seek and appends are sequential.
const (
	bucketMeta         = "meta"
	bucketSessions     = "sessions"      // start(8)+session number(4) -> session record
	bucketSessionNames = "session_names" // snum(4) -> session id
	bucketTools        = "tools"         // tool number(4) -> tool name
	bucketCalls        = "calls"         // start(8)+counter(4) -> call record
	bucketSwitches     = "switches"      // time(8)+counter(4) -> switch record

	metaSchema  = "schema"
	metaReplica = "replica"
	metaCreated = "created"
	metaClosed  = "closed"
	metaDropped = "dropped"
)

// allBuckets are the buckets every segment has.
func allBuckets() []string {
	return []string{bucketMeta, bucketSessions, bucketSessionNames, bucketTools, bucketCalls, bucketSwitches}
}

// minSegmentSize is the smallest bbolt file: two meta pages, a freelist
// page and a root page of 4 KiB.
const minSegmentSize = 4 * 4096

// appendFill is the fill percent for append-only buckets: pages are packed
// full because keys only ever arrive (nearly) in order; bbolt's default of
// 0.5 would leave half of every page empty.
const appendFill = 1.0

// segmentName matches segment files: seg-<UTC start>-<replica>.db, with
// ".open" before ".db" while a recorder writes to it.
var segmentName = regexp.MustCompile(`^seg-(\d{8}T\d{6}\.\d{9}Z)-(.+?)(\.open)?\.db$`)

const nameTimeLayout = "20060102T150405.000000000Z"

// SegmentFile is one segment found in a telemetry directory.
type SegmentFile struct {
	Path    string
	Replica string
	Start   time.Time
	Open    bool // still being written (or its writer crashed before closing it)
}

func segmentPath(dir, replica string, start time.Time, open bool) string {
	suffix := ".db"
	if open {
		suffix = ".open.db"
	}
	return filepath.Join(dir, "seg-"+start.UTC().Format(nameTimeLayout)+"-"+replica+suffix)
}

// creatingSuffix marks a segment file while its recorder creates it,
// before it holds the file's lock: segmentName does not match it.
const creatingSuffix = ".creating"

func closedPath(openPath string) string {
	return strings.TrimSuffix(openPath, ".open.db") + ".db"
}

// ListSegments returns the segments in dirs, ordered by start time. Files
// that are not segments are ignored; a missing directory is an error.
func ListSegments(dirs []string) ([]SegmentFile, error) {
	var out []SegmentFile
	for _, dir := range dirs {
		entries, err := os.ReadDir(dir)
		if err != nil {
			return nil, fmt.Errorf("read telemetry directory: %w", err)
		}
		for _, e := range entries {
			m := segmentName.FindStringSubmatch(e.Name())
			if m == nil || !e.Type().IsRegular() {
				continue
			}
			start, err := time.Parse(nameTimeLayout, m[1])
			if err != nil {
				continue
			}
			out = append(out, SegmentFile{Path: filepath.Join(dir, e.Name()), Replica: m[2], Start: start, Open: m[3] != ""})
		}
	}
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].Start.Equal(out[j].Start) {
			return out[i].Start.Before(out[j].Start)
		}
		return out[i].Path < out[j].Path
	})
	return out, nil
}

// openSegment opens an existing segment read-only and checks its schema.
func openSegment(path string) (*bolt.DB, error) {
	fi, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("open telemetry segment: %w", err)
	}
	if fi.Size() < minSegmentSize {
		// bbolt would try to initialise it, which a read-only open cannot.
		return nil, fmt.Errorf("open telemetry segment %s: %w: %d bytes is shorter than any bbolt file; move the file out of the telemetry directory to read the others", path, ErrDamaged, fi.Size())
	}
	db, err := bolt.Open(path, 0o600, &bolt.Options{ReadOnly: true, Timeout: LockTimeout})
	if err != nil {
		return nil, openError(path, err)
	}
	if err := db.View(func(tx *bolt.Tx) error { return checkSegment(path, tx) }); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

// createSegment opens (creating if needed) a segment for writing.
func createSegment(path, replica string, created time.Time) (*bolt.DB, error) {
	return createSegmentMax(path, replica, created, 0)
}

// createSegmentMax is createSegment with a cap on the file size (0: none):
// bbolt refuses to grow the file past it, as a full disk would.
func createSegmentMax(path, replica string, created time.Time, maxSize int) (*bolt.DB, error) {
	return createSegmentWith(path, replica, created, &bolt.Options{Timeout: LockTimeout, MaxSize: maxSize})
}

// createSegmentWith is createSegment with bbolt options of the caller's.
func createSegmentWith(path, replica string, created time.Time, opts *bolt.Options) (*bolt.DB, error) {
	db, err := bolt.Open(path, 0o600, opts)
	if err != nil {
		return nil, openError(path, err)
	}
	err = db.Update(func(tx *bolt.Tx) error {
		if meta := tx.Bucket([]byte(bucketMeta)); meta != nil {
			return checkSegment(path, tx)
		}
		for _, name := range allBuckets() {
			if _, err := tx.CreateBucketIfNotExists([]byte(name)); err != nil {
				return fmt.Errorf("create bucket %s in %s: %w", name, path, err)
			}
		}
		meta := tx.Bucket([]byte(bucketMeta))
		if err := meta.Put([]byte(metaSchema), binary.AppendUvarint(nil, SchemaVersion)); err != nil {
			return err
		}
		if err := meta.Put([]byte(metaReplica), []byte(replica)); err != nil {
			return err
		}
		return meta.Put([]byte(metaCreated), be64(uint64(created.UnixNano())))
	})
	if err != nil {
		db.Close()
		return nil, fmt.Errorf("initialise telemetry segment %s: %w", path, err)
	}
	return db, nil
}

// OpenSegmentCheck opens the segment at path read-only, verifies its schema
// and runs bbolt's consistency check. It returns the first problem found.
func OpenSegmentCheck(path string) error {
	db, err := openSegment(path)
	if err != nil {
		return err
	}
	defer db.Close()
	return db.View(func(tx *bolt.Tx) error {
		for err := range tx.Check() {
			return fmt.Errorf("check telemetry segment %s: %w", path, err)
		}
		return nil
	})
}

func openError(path string, err error) error {
	switch {
	case errors.Is(err, berrors.ErrTimeout):
		return fmt.Errorf("open telemetry segment %s: %w (waited %s for its lock): a running toolprof server or profiler has it open; read closed segments only, wait for the server to rotate it, or stop that process", path, ErrSegmentLocked, LockTimeout)
	case errors.Is(err, berrors.ErrInvalid), errors.Is(err, berrors.ErrChecksum), errors.Is(err, berrors.ErrVersionMismatch), errors.Is(err, berrors.ErrInvalidMapping),
		strings.Contains(err.Error(), "file size too small"), strings.Contains(err.Error(), "invalid database"):
		return fmt.Errorf("open telemetry segment %s: %w: %v; move the file out of the telemetry directory to read the others", path, ErrDamaged, err)
	}
	return fmt.Errorf("open telemetry segment %s: %w", path, err)
}

// checkSegment verifies the meta bucket, the schema version and that the file
// holds every page its meta page claims (a truncated file would otherwise
// fault when a page past its end is read).
func checkSegment(path string, tx *bolt.Tx) error {
	if fi, err := os.Stat(path); err == nil && fi.Size() < tx.Size() {
		return fmt.Errorf("open telemetry segment %s: %w: file has %d bytes, its meta page says %d; move the file out of the telemetry directory to read the others", path, ErrDamaged, fi.Size(), tx.Size())
	}
	meta := tx.Bucket([]byte(bucketMeta))
	if meta == nil {
		return fmt.Errorf("open telemetry segment %s: %w: no %q bucket", path, ErrNotSegment, bucketMeta)
	}
	v, n := binary.Uvarint(meta.Get([]byte(metaSchema)))
	if n <= 0 {
		return fmt.Errorf("open telemetry segment %s: %w: missing schema version in %q bucket", path, ErrNotSegment, bucketMeta)
	}
	if v > SchemaVersion {
		return fmt.Errorf("open telemetry segment %s: %w: file has schema version %d, this build reads up to %d; upgrade toolprof to read it", path, ErrNewerSchema, v, SchemaVersion)
	}
	for _, name := range allBuckets() {
		if tx.Bucket([]byte(name)) == nil {
			return fmt.Errorf("open telemetry segment %s: %w: missing bucket %q", path, ErrDamaged, name)
		}
	}
	return nil
}

// segmentMeta is what a segment says about itself.
type segmentMeta struct {
	Replica string
	Created time.Time
	Closed  time.Time // zero while open
	Dropped uint64
}

func readMeta(tx *bolt.Tx) segmentMeta {
	meta := tx.Bucket([]byte(bucketMeta))
	m := segmentMeta{Replica: string(meta.Get([]byte(metaReplica)))}
	if v := meta.Get([]byte(metaCreated)); len(v) == 8 {
		m.Created = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
	}
	if v := meta.Get([]byte(metaClosed)); len(v) == 8 {
		m.Closed = time.Unix(0, int64(binary.BigEndian.Uint64(v))).UTC()
	}
	if v := meta.Get([]byte(metaDropped)); len(v) == 8 {
		m.Dropped = binary.BigEndian.Uint64(v)
	}
	return m
}

// lastActivity is the start time of the newest call or switch, or created.
func lastActivity(tx *bolt.Tx) time.Time {
	last := readMeta(tx).Created
	for _, name := range []string{bucketCalls, bucketSwitches, bucketSessions} {
		if k, _ := tx.Bucket([]byte(name)).Cursor().Last(); len(k) >= 8 {
			if t := time.Unix(0, int64(binary.BigEndian.Uint64(k))).UTC(); t.After(last) {
				last = t
			}
		}
	}
	return last
}

func be64(v uint64) []byte { return binary.BigEndian.AppendUint64(make([]byte, 0, 8), v) }
