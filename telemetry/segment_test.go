package telemetry

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	bolt "go.etcd.io/bbolt"
)

// writeTestSegment records n calls through a recorder and returns the
// closed segment's path.
func writeTestSegment(t *testing.T, dir string, n int) string {
	t.Helper()
	r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "seg", QueueSize: n + 1})
	r.Session(Session{ID: "seg/1", Start: time.Now()})
	for i := range n {
		r.Call(Call{Session: "seg/1", Seq: uint64(i), Tool: fmt.Sprintf("tool_%d", i%50), Start: time.Now()})
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if h := r.Health(); h.Written != uint64(n+1) {
		t.Fatalf("recorder stored %d of %d events: %+v", h.Written, n+1, h)
	}
	segs, err := ListSegments([]string{dir})
	if err != nil || len(segs) != 1 {
		t.Fatalf("segments: %+v %v", segs, err)
	}
	return segs[0].Path
}

func TestLockedSegment(t *testing.T) {
	for _, tc := range []struct {
		name     string
		file     string
		readSkip bool // readers leave a live writer's open segment out instead of failing
	}{
		{"open segment of a live server", "seg-20260301T000000.000000000Z-live.open.db", true},
		{"closed segment held by another process", "seg-20260301T000000.000000000Z-live.db", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			writeTestSegment(t, dir, 10)
			path := filepath.Join(dir, tc.file)
			cmd, out, stdin := startChild(t, "hold:"+path)
			if !out.Scan() || out.Text() != "HELD" {
				t.Fatalf("holder: %q", out.Text())
			}
			err := OpenSegmentCheck(path)
			if !errors.Is(err, ErrSegmentLocked) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "stop that process") {
				t.Fatalf("open held segment: %v, want ErrSegmentLocked naming the file and what to do", err)
			}
			snap, err := Scan(context.Background(), []string{dir}, Window{})
			if tc.readSkip {
				if err != nil || len(snap.Skipped) != 1 || snap.Skipped[0].Path != path || len(snap.Calls) != 10 {
					t.Fatalf("scan with a live open segment: %v, %+v", err, snap)
				}
			} else if !errors.Is(err, ErrSegmentLocked) {
				t.Fatalf("scan with a held closed segment: %v, want ErrSegmentLocked", err)
			}
			// Once the holder exits the segment opens.
			stdin.Close()
			if err := cmd.Wait(); err != nil {
				t.Fatalf("holder: %v", err)
			}
			if err := OpenSegmentCheck(path); err != nil {
				t.Fatalf("after the holder exited: %v", err)
			}
		})
	}
}

func TestBadSegmentsGiveClearErrors(t *testing.T) {
	for _, tc := range []struct {
		name    string
		damage  func(t *testing.T, path string)
		want    error
		message string
	}{
		{"newer schema", func(t *testing.T, path string) {
			editSegment(t, path, func(tx *bolt.Tx) error {
				return tx.Bucket([]byte(bucketMeta)).Put([]byte(metaSchema), binary.AppendUvarint(nil, SchemaVersion+1))
			})
		}, ErrNewerSchema, "schema version 2, this build reads up to 1; upgrade toolprof"},
		{"truncated to half", func(t *testing.T, path string) {
			fi, _ := os.Stat(path)
			if err := os.Truncate(path, fi.Size()/2); err != nil {
				t.Fatal(err)
			}
		}, ErrDamaged, "its meta page says"},
		{"truncated inside the meta pages", func(t *testing.T, path string) {
			if err := os.Truncate(path, 100); err != nil {
				t.Fatal(err)
			}
		}, ErrDamaged, "move the file out"},
		{"not a telemetry segment", func(t *testing.T, path string) {
			os.Remove(path)
			db, err := bolt.Open(path, 0o600, nil)
			if err != nil {
				t.Fatal(err)
			}
			db.Update(func(tx *bolt.Tx) error { _, err := tx.CreateBucket([]byte("other")); return err })
			db.Close()
		}, ErrNotSegment, `no "meta" bucket`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := writeTestSegment(t, dir, 20000)
			if err := OpenSegmentCheck(path); err != nil {
				t.Fatalf("intact segment: %v", err)
			}
			tc.damage(t, path)
			for _, read := range []func() error{
				func() error { return OpenSegmentCheck(path) },
				func() error { _, err := ReadUsage(context.Background(), []string{dir}, Window{}); return err },
			} {
				err := read()
				if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), tc.message) {
					t.Fatalf("got %v\nwant %v naming %s and saying %q", err, tc.want, path, tc.message)
				}
			}
		})
	}
}

func editSegment(t *testing.T, path string, fn func(*bolt.Tx) error) {
	t.Helper()
	db, err := bolt.Open(path, 0o600, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(fn); err != nil {
		t.Fatal(err)
	}
	db.Close()
}

func TestReadersMergeDirectories(t *testing.T) {
	dirs := []string{t.TempDir(), t.TempDir()}
	for i, dir := range dirs {
		r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: fmt.Sprintf("replica%d", i)})
		id := r.NewSessionID()
		r.Session(Session{ID: id, Start: time.Now()})
		r.Call(Call{Session: id, Seq: 1, Tool: fmt.Sprintf("tool%d", i)})
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	}
	usage, err := ReadUsage(context.Background(), dirs, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(usage) != 2 || usage[0].Tools[0] != "tool0" || usage[1].Tools[0] != "tool1" {
		t.Fatalf("merged usage %+v", usage)
	}
	if _, err := ReadUsage(context.Background(), []string{filepath.Join(dirs[0], "missing")}, Window{}); err == nil || !strings.Contains(err.Error(), "missing") {
		t.Fatalf("missing directory: %v", err)
	}
	if _, err := ReadUsage(context.Background(), nil, Window{}); err == nil {
		t.Fatal("no directory accepted")
	}
}

func TestFileIsCompactAndSequential(t *testing.T) {
	// Append-only buckets are filled to 100%: at bbolt's default 50% a page
	// split leaves half of each page empty and the file nearly doubles.
	dir := t.TempDir()
	const n = 100000
	path := writeTestSegment(t, dir, n)
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	// One call costs a 16-byte leaf element header, a 12-byte key and its
	// value; session, tool names and page headers add a little.
	element := 16 + 12 + len(appendCall(nil, 1, 1, &Call{Seq: n, Outcome: OutcomeOK}))
	per := float64(fi.Size()) / n
	t.Logf("%.1f file bytes per call event, %d bytes per element", per, element)
	if per > 1.15*float64(element) {
		t.Fatalf("%.1f bytes per call event, want at most 1.15 x %d (pages packed full)", per, element)
	}
}

func TestCompactRemovesOnlyOldClosedSegments(t *testing.T) {
	dir := t.TempDir()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	write := func(replica string, start, end time.Time, open bool) string {
		path := segmentPath(dir, replica, start, open)
		db, err := createSegment(path, replica, start)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := newSegmentWriter(db, path)
		if err := w.commit([]event{{kind: eventCall, call: Call{Session: replica + "/1", Tool: "t", Start: end}}}, 0, false); err != nil {
			t.Fatal(err)
		}
		if open {
			db.Close()
			return path
		}
		if err := w.close(end, 0, ""); err != nil {
			t.Fatal(err)
		}
		return path
	}
	old := write("a", day(1), day(2), false)
	straddles := write("b", day(2), day(4), false)
	recent := write("c", day(5), day(6), false)
	openOld := write("d", day(1), day(1), true) // just written: its recorder may be alive
	dead := write("e", day(1), day(1), true)    // untouched for long, unlocked: its recorder died
	longAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dead, longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
	held := segmentPath(dir, "f", day(1), true) // untouched for long but locked: alive
	cmd, out, stdin := startChild(t, "hold:"+held)
	if !out.Scan() || out.Text() != "HELD" {
		t.Fatalf("holder: %q", out.Text())
	}
	if err := os.Chtimes(held, longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
	removed, err := Compact(context.Background(), dir, day(3))
	if err != nil {
		t.Fatal(err)
	}
	stdin.Close()
	cmd.Wait()
	if want := []string{old, closedPath(dead)}; !slices.Equal(removed, want) {
		t.Fatalf("removed %v, want %v", removed, want)
	}
	for _, p := range []string{straddles, recent, openOld, held} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("%s: %v (should be kept)", p, err)
		}
	}
}

func TestReadersSkipAnEmptyOpenSegment(t *testing.T) {
	dir := t.TempDir()
	writeTestSegment(t, dir, 3)
	// What a reader sees between a recorder's create and its bbolt init.
	empty := filepath.Join(dir, "seg-20260301T000000.000000000Z-starting.open.db")
	if err := os.WriteFile(empty, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil || len(usage) != 1 || usage[0].Calls != 3 {
		t.Fatalf("usage %+v, %v", usage, err)
	}
	// A closed segment of zero bytes is damage, not a race.
	if err := os.Rename(empty, strings.TrimSuffix(empty, ".open.db")+".db"); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadUsage(context.Background(), []string{dir}, Window{}); !errors.Is(err, ErrDamaged) {
		t.Fatalf("empty closed segment: %v, want ErrDamaged", err)
	}
}

func TestRecorderClosesSegmentsOfDeadRecorders(t *testing.T) {
	dir := t.TempDir()
	dead := segmentPath(dir, "dead", time.Now().Add(-2*time.Hour), true)
	db, err := createSegment(dead, "dead", time.Now().Add(-2*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	young := segmentPath(dir, "starting", time.Now(), true)
	if db, err = createSegment(young, "starting", time.Now()); err != nil {
		t.Fatal(err)
	}
	db.Close()
	longAgo := time.Now().Add(-time.Hour)
	if err := os.Chtimes(dead, longAgo, longAgo); err != nil {
		t.Fatal(err)
	}
	r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "alive"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(closedPath(dead)); err != nil {
		t.Errorf("dead recorder's segment not closed: %v", err)
	}
	if _, err := os.Stat(young); err != nil {
		t.Errorf("a just-created segment of another replica was touched: %v", err)
	}
}

func TestDropsCountOnlyForSegmentsInTheWindow(t *testing.T) {
	dir := t.TempDir()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 12, 0, 0, 0, time.UTC) }
	for i, d := range []int{1, 5} {
		path := segmentPath(dir, "r", day(d), false)
		db, err := createSegment(path, "r", day(d))
		if err != nil {
			t.Fatal(err)
		}
		w, _ := newSegmentWriter(db, path)
		call := Call{Session: fmt.Sprintf("r/%d", i), Tool: "t", Start: day(d)}
		if err := w.commit([]event{{kind: eventCall, call: call}}, uint64(10*(i+1)), true); err != nil {
			t.Fatal(err)
		}
		if err := w.close(day(d).Add(time.Hour), uint64(10*(i+1)), ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		w    Window
		want uint64
	}{{Window{}, 30}, {Window{Since: day(3)}, 20}} {
		snap, err := Scan(context.Background(), []string{dir}, tc.w)
		if err != nil {
			t.Fatal(err)
		}
		if snap.Dropped != tc.want {
			t.Errorf("window %+v: %d dropped, want %d", tc.w, snap.Dropped, tc.want)
		}
	}
}

// A segment naming one session id under two numbers (a damaged or
// hand-edited file) reads as one session, its calls counted once, as
// with several segments; a segment of distinct ids reads each once.
func TestReadUsageSessionIDUnderTwoNumbers(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name      string
		rename    bool // session number 2 renamed to session a's id
		want      []Usage
		toolCalls map[string]int
	}{
		{"distinct ids", false, []Usage{
			{Session: Session{ID: "a", Start: t0, End: t0.Add(time.Minute)}, Tools: []string{"t1", "t2"}, Calls: 2},
			{Session: Session{ID: "b", Start: t0.Add(time.Second), End: t0.Add(time.Minute)}, Tools: []string{"t0", "t2"}, Calls: 2},
		}, map[string]int{"t0": 1, "t1": 1, "t2": 2}},
		{"one id twice", true, []Usage{
			{Session: Session{ID: "a", Start: t0.Add(time.Second), End: t0.Add(time.Minute)}, Tools: []string{"t0", "t1", "t2"}, Calls: 4},
		}, map[string]int{"t0": 1, "t1": 1, "t2": 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "dup"})
			for i, id := range []string{"a", "b"} {
				r.Session(Session{ID: id, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Minute)})
			}
			r.Call(Call{Session: "a", Seq: 1, Tool: "t2", Start: t0})
			r.Call(Call{Session: "a", Seq: 2, Tool: "t1", Start: t0})
			r.Call(Call{Session: "b", Seq: 1, Tool: "t0", Start: t0.Add(time.Second)})
			r.Call(Call{Session: "b", Seq: 2, Tool: "t2", Start: t0.Add(time.Second)})
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			if tc.rename {
				segs, err := ListSegments([]string{dir})
				if err != nil || len(segs) != 1 {
					t.Fatalf("segments: %+v %v", segs, err)
				}
				editSegment(t, segs[0].Path, func(tx *bolt.Tx) error {
					b := tx.Bucket([]byte(bucketSessionNames))
					var bn []byte
					b.ForEach(func(k, v []byte) error {
						if string(v) == "b" {
							bn = slices.Clone(k)
						}
						return nil
					})
					if bn == nil {
						return errors.New("no number for session b")
					}
					return b.Put(bn, []byte("a"))
				})
			}
			snap, err := ScanUsage(context.Background(), []string{dir}, Window{})
			if err != nil {
				t.Fatal(err)
			}
			if len(snap.Usage) != len(tc.want) {
				t.Fatalf("usage %+v\nwant %+v", snap.Usage, tc.want)
			}
			for i, u := range snap.Usage {
				w := tc.want[i]
				if u.Session.ID != w.Session.ID || !u.Session.Start.Equal(w.Session.Start) || !u.Session.End.Equal(w.Session.End) ||
					!slices.Equal(u.Tools, w.Tools) || u.Calls != w.Calls || u.Denied != w.Denied || u.Unknown != w.Unknown {
					t.Fatalf("usage %d: %+v\nwant %+v", i, u, w)
				}
			}
			if fmt.Sprint(snap.ToolCalls) != fmt.Sprint(tc.toolCalls) || snap.callsVisited != 4 {
				t.Fatalf("tool calls %v, %d visited; want %v, 4", snap.ToolCalls, snap.callsVisited, tc.toolCalls)
			}
		})
	}
}

// A damaged segment whose last session or tool number lies past the
// bucket's count of keys is refused by every reader, naming the file, the
// bucket and the key and the numbers that would be valid, before any
// table is sized from it (0x10000000 would ask for gigabytes, and
// 0xffffffff wrapped the size to zero and panicked); a number the writer
// skipped (0) still reads.
func TestReadersRefuseNumberPastKeys(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	readers := []struct {
		name string
		read func(dir string) error
	}{
		{"ScanUsage", func(dir string) error { _, err := ScanUsage(context.Background(), []string{dir}, Window{}); return err }},
		{"ScanStats", func(dir string) error { _, err := ScanStats(context.Background(), []string{dir}, Window{}); return err }},
		{"Scan", func(dir string) error { _, err := Scan(context.Background(), []string{dir}, Window{}); return err }},
	}
	for _, tc := range []struct {
		name   string
		bucket string
		key    uint32 // added with a name; 0: the segment as written
		want   string // in the error; "" for none
	}{
		{"as written", "", 0, ""},
		{"session number past the keys", bucketSessionNames, 5, "bucket session_names key 00000005: number 5 is past the bucket's 3 keys: want numbers 0 to 3"},
		{"tool number past the keys", bucketTools, 4, "bucket tools key 00000004: number 4 is past the bucket's 3 keys: want numbers 0 to 3"},
		{"large session number", bucketSessionNames, 0x10000000, "bucket session_names key 10000000: number 268435456 is past the bucket's 3 keys"},
		{"huge session number", bucketSessionNames, 0xffffffff, "bucket session_names key ffffffff: number 4294967295 is past"},
		{"huge tool number", bucketTools, 0xffffffff, "bucket tools key ffffffff: number 4294967295 is past"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "bad"})
			for i, id := range []string{"a", "b"} {
				r.Session(Session{ID: id, Start: t0.Add(time.Duration(i) * time.Second), End: t0.Add(time.Minute)})
				r.Call(Call{Session: id, Seq: 1, Tool: "t" + strconv.Itoa(i), Start: t0})
			}
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			segs, err := ListSegments([]string{dir})
			if err != nil || len(segs) != 1 {
				t.Fatalf("segments: %+v %v", segs, err)
			}
			if tc.bucket != "" {
				editSegment(t, segs[0].Path, func(tx *bolt.Tx) error {
					return tx.Bucket([]byte(tc.bucket)).Put(num4(tc.key), []byte("x"))
				})
			}
			for _, rd := range readers {
				err := rd.read(dir)
				switch {
				case tc.want == "" && err != nil:
					t.Errorf("%s: %v", rd.name, err)
				case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), segs[0].Path)):
					t.Errorf("%s: err = %v, want one naming %s and %q", rd.name, err, segs[0].Path, tc.want)
				}
			}
		})
	}
}
