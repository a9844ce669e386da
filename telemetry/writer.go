package telemetry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"time"

	bolt "go.etcd.io/bbolt"
)

// eventKind says which field of an event is set.
type eventKind uint8

const (
	eventCall eventKind = iota
	eventSession
	eventSwitch
)

// event is one queued record. Sessions travel by pointer: they are rare and
// large, while calls are frequent and stay inline so enqueueing a call does
// not allocate.
type event struct {
	kind    eventKind
	call    Call
	session *Session
	sw      Switch
	swOf    string // session of a switch
}

// segmentWriter appends events to one segment. Session ids and tool names
// get segment-local numbers, remembered here so a batch needs no lookups.
type segmentWriter struct {
	db          *bolt.DB
	path        string
	sessions    map[string]uint32   // session id -> number
	sessionKeys map[uint32][12]byte // session number -> key of its record (no pointers for the GC)
	tools       map[string]uint32   // tool name -> number
	counter     uint32              // key suffix, unique within the segment
}

func newSegmentWriter(db *bolt.DB, path string) (*segmentWriter, error) {
	w := &segmentWriter{db: db, path: path}
	if err := db.View(w.load); err != nil {
		return nil, fmt.Errorf("load telemetry segment %s: %w", path, err)
	}
	return w, nil
}

// load rebuilds the name tables from the file (at open, and after a failed
// commit left the in-memory tables ahead of the file).
func (w *segmentWriter) load(tx *bolt.Tx) error {
	w.sessions = map[string]uint32{}
	w.sessionKeys = map[uint32][12]byte{}
	w.tools = map[string]uint32{}
	if err := tx.Bucket([]byte(bucketSessionNames)).ForEach(func(k, v []byte) error {
		w.sessions[string(v)] = binary.BigEndian.Uint32(k)
		return nil
	}); err != nil {
		return err
	}
	if err := tx.Bucket([]byte(bucketTools)).ForEach(func(k, v []byte) error {
		w.tools[string(v)] = binary.BigEndian.Uint32(k)
		return nil
	}); err != nil {
		return err
	}
	if err := tx.Bucket([]byte(bucketSessions)).ForEach(func(k, v []byte) error {
		if len(k) != 12 {
			return fmt.Errorf("bucket %s key %x: want 12 bytes", bucketSessions, k)
		}
		w.sessionKeys[binary.BigEndian.Uint32(k[8:])] = [12]byte(k)
		return nil
	}); err != nil {
		return err
	}
	// The counter is kept across a reload: every stored key's counter came
	// from it, so it is above them all. At the first load it is found by a
	// scan: keys sort by time first, and calls arrive out of start order
	// (a long call ends after shorter ones that began later), so the last
	// key's counter need not be the largest.
	if w.counter != 0 {
		return nil
	}
	for _, name := range []string{bucketCalls, bucketSwitches} {
		c := tx.Bucket([]byte(name)).Cursor()
		for k, _ := c.First(); k != nil; k, _ = c.Next() {
			if len(k) == 12 {
				w.counter = max(w.counter, binary.BigEndian.Uint32(k[8:])+1)
			}
		}
	}
	return nil
}

// commit writes a batch and the drop count in one transaction.
func (w *segmentWriter) commit(batch []event, dropped uint64, setDropped bool) error {
	err := w.db.Update(func(tx *bolt.Tx) error {
		if err := w.apply(tx, batch); err != nil {
			return err
		}
		if setDropped {
			return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaDropped), be64(dropped))
		}
		return nil
	})
	if err != nil {
		// The name tables may now hold numbers the file never got.
		if lerr := w.db.View(w.load); lerr != nil {
			return fmt.Errorf("write telemetry segment %s: %w (reload: %v)", w.path, err, lerr)
		}
		return fmt.Errorf("write telemetry segment %s: %w", w.path, err)
	}
	return nil
}

func (w *segmentWriter) apply(tx *bolt.Tx, batch []event) error {
	calls := tx.Bucket([]byte(bucketCalls))
	names := tx.Bucket([]byte(bucketSessionNames))
	tools := tx.Bucket([]byte(bucketTools))
	sessions := tx.Bucket([]byte(bucketSessions))
	switches := tx.Bucket([]byte(bucketSwitches))
	for _, b := range []*bolt.Bucket{calls, names, tools, sessions, switches} {
		b.FillPercent = appendFill
	}
	snum := func(id string) (uint32, error) {
		if n, ok := w.sessions[id]; ok {
			return n, nil
		}
		n := uint32(len(w.sessions) + 1)
		if err := names.Put(num4(n), []byte(id)); err != nil {
			return 0, err
		}
		w.sessions[id] = n
		return n, nil
	}
	// bbolt keeps references to keys and values until the commit, so each
	// batch encodes into one arena instead of a reused buffer; a grown
	// arena leaves earlier records intact in the old array.
	arena := make([]byte, 0, 32*len(batch))
	put := func(b *bolt.Bucket, enc func([]byte) []byte) error {
		start := len(arena)
		arena = enc(arena)
		k := arena[start : start+12 : start+12]
		return b.Put(k, arena[start+12:len(arena):len(arena)])
	}
	for i := range batch {
		e := &batch[i]
		switch e.kind {
		case eventCall:
			sn, err := snum(e.call.Session)
			if err != nil {
				return err
			}
			tn, ok := w.tools[e.call.Tool]
			if !ok {
				tn = uint32(len(w.tools) + 1)
				if err := tools.Put(num4(tn), []byte(e.call.Tool)); err != nil {
					return err
				}
				w.tools[e.call.Tool] = tn
			}
			if err := put(calls, func(b []byte) []byte {
				return appendCall(appendTimeKey(b, e.call.Start, w.counter), sn, tn, &e.call)
			}); err != nil {
				return err
			}
			w.counter++
		case eventSession:
			s := e.session
			sn, err := snum(s.ID)
			if err != nil {
				return err
			}
			key := timeKey(s.Start, sn)
			if old, ok := w.sessionKeys[sn]; ok && string(old[:]) != string(key) {
				if err := sessions.Delete(old[:]); err != nil {
					return err
				}
			}
			if err := sessions.Put(key, appendSession(nil, s)); err != nil {
				return err
			}
			w.sessionKeys[sn] = [12]byte(key)
		case eventSwitch:
			sn, err := snum(e.swOf)
			if err != nil {
				return err
			}
			if err := put(switches, func(b []byte) []byte {
				return appendSwitch(appendTimeKey(b, e.sw.Time, w.counter), sn, &e.sw)
			}); err != nil {
				return err
			}
			w.counter++
		}
	}
	return nil
}

// close marks the segment closed at the given time and closes the file.
func (w *segmentWriter) close(closed time.Time, dropped uint64, renameTo string) error {
	err := w.db.Update(func(tx *bolt.Tx) error {
		meta := tx.Bucket([]byte(bucketMeta))
		if err := meta.Put([]byte(metaDropped), be64(dropped)); err != nil {
			return err
		}
		return meta.Put([]byte(metaClosed), be64(nanos(closed)))
	})
	var used int64
	if err == nil {
		err = w.db.View(func(tx *bolt.Tx) error { used = tx.Size(); return nil })
	}
	path := w.path
	if renameTo != "" {
		// Renamed while the lock is held, even if marking it closed failed
		// (nobody writes it any more, and readers fall back on its last
		// event for its end): a file under an open segment's name whose
		// lock is free is one a stopped recorder left, which another
		// process would close again (closeStale).
		if rerr := os.Rename(w.path, renameTo); rerr != nil {
			err = errors.Join(err, rerr)
		} else {
			path = renameTo
		}
	}
	if cerr := w.db.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		// bbolt grows files in steps of up to 16 MiB; a closed segment never
		// grows again, so give the unused tail back.
		if fi, serr := os.Stat(path); serr == nil && fi.Size() > used {
			err = os.Truncate(path, used)
		}
	}
	if err != nil {
		return fmt.Errorf("close telemetry segment %s: %w", w.path, err)
	}
	return nil
}

// staleAge is how long an open segment must have gone untouched before a
// process other than its replica closes it: younger, and its recorder may be
// between creating the file and locking it.
const staleAge = time.Minute

func staleFile(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && time.Since(fi.ModTime()) > staleAge
}

// errClosedMeanwhile is closeStale's answer for a segment that its writer,
// or another process, closed after it was listed.
var errClosedMeanwhile = errors.New("closed meanwhile")

// closeStale marks an open segment whose recorder died as closed (at its
// last event) and renames it. It fails with ErrSegmentLocked when the
// recorder is alive, and with errClosedMeanwhile when the segment is no
// longer at its open name: it never creates a file there, and never takes
// a file renamed away from it, which would write over a closed segment.
func closeStale(s SegmentFile) error {
	var file *os.File
	db, err := createSegmentWith(s.Path, s.Replica, s.Start, &bolt.Options{Timeout: LockTimeout, OpenFile: func(name string, flag int, perm os.FileMode) (*os.File, error) {
		f, err := os.OpenFile(name, flag&^os.O_CREATE, perm)
		file = f
		return f, err
	}})
	if errors.Is(err, fs.ErrNotExist) {
		return errClosedMeanwhile
	}
	if err != nil {
		return err
	}
	// The lock is on the file opened; its name may have moved on since.
	opened, err := file.Stat()
	if err == nil {
		var now fs.FileInfo
		if now, err = os.Stat(s.Path); err == nil && !os.SameFile(opened, now) {
			err = errClosedMeanwhile
		}
	}
	if err != nil {
		db.Close()
		if errors.Is(err, fs.ErrNotExist) {
			return errClosedMeanwhile
		}
		return err
	}
	var last time.Time
	var dropped uint64
	_ = db.View(func(tx *bolt.Tx) error {
		last, dropped = lastActivity(tx), readMeta(tx).Dropped
		return nil
	})
	w := &segmentWriter{db: db, path: s.Path}
	return w.close(last, dropped, closedPath(s.Path))
}
