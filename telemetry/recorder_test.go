package telemetry

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

func quietLogger(buf *bytes.Buffer) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, nil))
}

func openTestRecorder(t *testing.T, dir string, opts RecorderOptions) (*Recorder, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	if opts.Replica == "" {
		opts.Replica = "test"
	}
	opts.Logger = quietLogger(&logs)
	r, err := OpenRecorder(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return r, &logs
}

func TestRecorderRoundTrip(t *testing.T) {
	dir := t.TempDir()
	r, _ := openTestRecorder(t, dir, RecorderOptions{BatchSize: 7, FlushInterval: 5 * time.Millisecond})
	base := time.Date(2026, 3, 1, 10, 0, 0, 123456789, time.UTC)
	var wantSessions []Session
	var wantCalls []Call
	for i := range 5 {
		s := Session{
			ID: r.NewSessionID(), Start: base.Add(time.Duration(i) * time.Second), Transport: TransportHTTP,
			ClientName: "claude-code", ClientVersion: "2.1", ProtocolVersion: "2025-06-18", Profile: "coding",
			Exploration: i == 3, ReadOnly: i == 2 || i == 3, ServerVersion: "0.1.0", CatalogHash: "sha256:abc",
		}
		switch i {
		case 1, 3:
			s.Attribution = AttributionTrace
		case 4:
			s.Attribution = AttributionCaller
		}
		r.Session(s) // at start
		for j := range 9 {
			c := Call{Session: s.ID, Seq: uint64(j + 1), Tool: fmt.Sprintf("tool-%d", (i+j)%4), Start: s.Start.Add(time.Duration(j) * time.Millisecond),
				Duration: time.Duration(j) * 1234 * time.Microsecond, Outcome: Outcomes()[j%6], RequestBytes: 100 * j, ResponseBytes: 7000 * j}
			if j == 8 {
				c.Outcome = "future_outcome" // kept verbatim
			}
			r.Call(c)
			wantCalls = append(wantCalls, c)
		}
		sw := Switch{Time: s.Start.Add(2 * time.Millisecond), Group: "files"}
		r.Switch(s.ID, sw)
		s.End = s.Start.Add(time.Minute)
		s.ToolsListCalls, s.ToolsListPages = 2, 3
		s.Switches = []Switch{sw}
		r.Session(s) // at end: replaces the start record
		wantSessions = append(wantSessions, s)
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	if h := r.Health(); h.Written != h.Enqueued || h.Dropped != 0 || h.Degraded != nil {
		t.Fatalf("health after close: %+v", h)
	}
	sessions, calls, err := ReadAll(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(sessions, wantSessions) {
		t.Errorf("sessions:\n got %+v\nwant %+v", sessions, wantSessions)
	}
	if !reflect.DeepEqual(calls, wantCalls) {
		t.Errorf("calls:\n got %+v\nwant %+v", calls, wantCalls)
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(usage) != 5 {
		t.Fatalf("usage: %d sessions, want 5", len(usage))
	}
	for i, u := range usage {
		if u.Calls != 9 || len(u.Tools) != 4 || u.Denied != 1 || u.Unknown != 1 || !reflect.DeepEqual(u.Session, wantSessions[i]) {
			t.Errorf("usage[%d] = %+v", i, u)
		}
	}
	segs, _ := ListSegments([]string{dir})
	if len(segs) != 1 || segs[0].Open || segs[0].Replica != "test" {
		t.Errorf("segments after close: %+v (want one closed segment of replica test)", segs)
	}
}

func TestWindowSelectsSessionsByStart(t *testing.T) {
	dir := t.TempDir()
	r, _ := openTestRecorder(t, dir, RecorderOptions{})
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for d := range 4 {
		s := Session{ID: fmt.Sprintf("test/%d", d), Start: base.AddDate(0, 0, d)}
		r.Session(s)
		r.Call(Call{Session: s.ID, Seq: 1, Tool: "a", Start: s.Start.Add(time.Hour)})
		r.Call(Call{Session: s.ID, Seq: 2, Tool: "b", Start: s.Start.Add(48 * time.Hour)}) // after the window's end: still the session's
	}
	r.Call(Call{Session: "test/orphan", Seq: 1, Tool: "c", Start: base.Add(36 * time.Hour)}) // no session record
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		w    Window
		want []string
	}{
		{Window{}, []string{"test/0", "test/1", "test/orphan", "test/2", "test/3"}},
		{Window{Since: base.AddDate(0, 0, 1)}, []string{"test/1", "test/orphan", "test/2", "test/3"}},
		{Window{Until: base.AddDate(0, 0, 2)}, []string{"test/0", "test/1", "test/orphan"}},
		{Window{Since: base.AddDate(0, 0, 1), Until: base.AddDate(0, 0, 1).Add(time.Hour)}, []string{"test/1"}},
	} {
		sessions, calls, err := ReadAll(context.Background(), []string{dir}, tc.w)
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, s := range sessions {
			got = append(got, s.ID)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("window %+v: sessions %v, want %v", tc.w, got, tc.want)
		}
		wantCalls := 2*len(tc.want) - bool2int(contains(tc.want, "test/orphan"))
		if len(calls) != wantCalls {
			t.Errorf("window %+v: %d calls, want %d", tc.w, len(calls), wantCalls)
		}
	}
}

func bool2int(b bool) int {
	if b {
		return 1
	}
	return 0
}

func contains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}

func TestRotationSplitsSegmentsAndReadersMerge(t *testing.T) {
	dir := t.TempDir()
	r, _ := openTestRecorder(t, dir, RecorderOptions{Rotate: 30 * time.Millisecond, FlushInterval: 2 * time.Millisecond})
	s := Session{ID: r.NewSessionID(), Start: time.Now(), ClientName: "c"}
	r.Session(s)
	r.Call(Call{Session: s.ID, Seq: 1, Tool: "first", Start: time.Now()})
	first := waitSegmentChange(t, r, "")
	r.Call(Call{Session: s.ID, Seq: 2, Tool: "second", Start: time.Now()})
	waitSegmentChange(t, r, first)
	s.End = time.Now()
	r.Session(s)
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	segs, _ := ListSegments([]string{dir})
	if len(segs) < 2 {
		t.Fatalf("%d segments, want rotation to make at least 2", len(segs))
	}
	for _, seg := range segs {
		if seg.Open {
			t.Errorf("segment %s still open after Close", seg.Path)
		}
		if err := OpenSegmentCheck(seg.Path); err != nil {
			t.Error(err)
		}
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(usage) != 1 || !reflect.DeepEqual(usage[0].Tools, []string{"first", "second"}) || usage[0].Session.End.IsZero() {
		t.Fatalf("merged usage = %+v, want one ended session with tools first, second", usage)
	}
}

// waitSegmentChange waits until the recorder writes to a segment other than
// prev and returns it.
func waitSegmentChange(t *testing.T, r *Recorder, prev string) string {
	t.Helper()
	for range 5000 {
		if h := r.Health(); h.Segment != "" && h.Segment != prev && h.Written == h.Enqueued {
			return h.Segment
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("recorder never moved off segment %q", prev)
	return ""
}

func TestGracefulCloseLosesNothing(t *testing.T) {
	const writers, each = 4, 20000
	dir := t.TempDir()
	r, _ := openTestRecorder(t, dir, RecorderOptions{QueueSize: writers * each})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				r.Call(Call{Session: fmt.Sprintf("test/%d", w), Seq: uint64(i), Tool: "t", Start: time.Now()})
			}
		})
	}
	wg.Wait()
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	h := r.Health()
	if h.Enqueued != writers*each || h.Dropped != 0 || h.Written != h.Enqueued {
		t.Fatalf("health %+v, want %d enqueued and written, none dropped", h, writers*each)
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	stored := 0
	for _, u := range usage {
		stored += u.Calls
	}
	if stored != writers*each {
		t.Fatalf("stored %d calls, sent %d", stored, writers*each)
	}
	// After Close, calls are refused without blocking and counted.
	r.Call(Call{Session: "test/late", Tool: "t"})
	if got := r.Health().Dropped; got != 1 {
		t.Fatalf("call after Close: dropped = %d, want 1", got)
	}
}

func TestFullQueueDropsAreCountedAndStored(t *testing.T) {
	dir := t.TempDir()
	r, _ := openTestRecorder(t, dir, RecorderOptions{QueueSize: 1, BatchSize: 1})
	const sent = 20000
	for i := range sent {
		r.Call(Call{Session: "test/s", Seq: uint64(i), Tool: "t"})
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	h := r.Health()
	if h.Dropped == 0 || h.Enqueued+h.Dropped != sent || h.Written != h.Enqueued {
		t.Fatalf("health %+v: want drops, enqueued+dropped = %d, all enqueued written", h, sent)
	}
	snap, err := Scan(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if snap.Dropped != h.Dropped || uint64(len(snap.Calls)) != h.Written {
		t.Fatalf("stored: %d dropped, %d calls; recorder: %+v", snap.Dropped, len(snap.Calls), h)
	}
}

func TestCrashKeepsCommittedEvents(t *testing.T) {
	for _, mode := range []string{"record-load", "record-idle"} {
		t.Run(mode, func(t *testing.T) {
			dir := t.TempDir()
			cmd, out, _ := startChild(t, mode+":"+dir)
			var lastWritten, flushed uint64
			for out.Scan() {
				var e, w, d uint64
				if n, _ := fmt.Sscanf(out.Text(), "PROGRESS %d %d %d", &e, &w, &d); n == 3 {
					if d != 0 {
						t.Fatalf("child dropped %d events", d)
					}
					lastWritten = w
					if w >= 5000 && mode == "record-load" {
						break
					}
					continue
				}
				if n, _ := fmt.Sscanf(out.Text(), "FLUSHED %d", &flushed); n == 1 {
					break
				}
				t.Fatalf("child: %s", out.Text())
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			for out.Scan() { // progress written before the kill
				var e, w, d uint64
				if n, _ := fmt.Sscanf(out.Text(), "PROGRESS %d %d %d", &e, &w, &d); n == 3 {
					lastWritten = w
				}
			}
			cmd.Wait()

			segs, err := ListSegments([]string{dir})
			if err != nil || len(segs) != 1 || !segs[0].Open {
				t.Fatalf("segments after SIGKILL: %+v, %v (want the one open segment)", segs, err)
			}
			if err := OpenSegmentCheck(segs[0].Path); err != nil {
				t.Fatalf("consistency check after SIGKILL: %v", err)
			}
			_, calls, err := ReadAll(context.Background(), []string{dir}, Window{})
			if err != nil {
				t.Fatal(err)
			}
			// One writer commits in order and nothing was dropped, so the
			// stored calls are exactly the first len(calls) sent.
			for i, c := range calls {
				if c.Seq != uint64(i) {
					t.Fatalf("stored call %d has seq %d: a hole in what was committed", i, c.Seq)
				}
			}
			switch mode {
			case "record-load":
				// Everything the child saw committed survived; only the
				// batch in flight (at most one flush interval) may be missing.
				if uint64(len(calls))+1 < lastWritten { // +1: the session record
					t.Fatalf("stored %d calls, child had committed %d events", len(calls), lastWritten)
				}
			case "record-idle":
				// Idle longer than a flush interval: nothing is missing,
				// including the partial last batch the timer committed.
				if uint64(len(calls)) != crashIdleCalls || flushed != crashIdleCalls+1 {
					t.Fatalf("stored %d calls, child flushed %d, sent %d", len(calls), flushed, crashIdleCalls)
				}
			}
			// A restarted recorder of the same replica closes the segment
			// the crashed one left open.
			r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "crash"})
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			segs, _ = ListSegments([]string{dir})
			for _, s := range segs {
				if s.Open {
					t.Errorf("segment %s still open after restart", s.Path)
				}
			}
		})
	}
}

func TestRecorderUnwritableDirectoryKeepsServing(t *testing.T) {
	type arm struct {
		name string
		dir  func(t *testing.T) string
	}
	arms := []arm{{"parent is a regular file", func(t *testing.T) string {
		file := filepath.Join(t.TempDir(), "file")
		if err := os.WriteFile(file, nil, 0o600); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(file, "telemetry")
	}}}
	if os.Geteuid() != 0 {
		// Root ignores permission bits, so this arm only means something
		// for other users; the arm above fails for root too.
		arms = append(arms, arm{"directory mode 0500", func(t *testing.T) string {
			dir := t.TempDir()
			if err := os.Chmod(dir, 0o500); err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { os.Chmod(dir, 0o700) })
			return dir
		}})
	}
	for _, a := range arms {
		t.Run(a.name, func(t *testing.T) {
			dir := a.dir(t)
			r, logs := openTestRecorder(t, dir, RecorderOptions{FlushInterval: time.Millisecond})
			for i := range 100 {
				r.Call(Call{Session: "test/s", Seq: uint64(i), Tool: "t"}) // returns: the test would hang otherwise
			}
			h := r.Health()
			if h.Degraded == nil || !strings.Contains(h.Degraded.Error(), filepath.Base(dir)) {
				t.Fatalf("Health().Degraded = %v, want an error naming %s", h.Degraded, dir)
			}
			err := r.Close()
			if err == nil {
				t.Fatal("Close of a recorder that could store nothing returned nil")
			}
			if h := r.Health(); h.Lost != 100 || h.Written != 0 {
				t.Fatalf("health %+v, want the 100 calls lost and counted", h)
			}
			if n := strings.Count(logs.String(), "telemetry degraded"); n != 1 {
				t.Fatalf("logged the degradation %d times, want once:\n%s", n, logs)
			}
		})
	}
}

func TestRecorderRecoversWhenStorageReturns(t *testing.T) {
	root := t.TempDir()
	dir := filepath.Join(root, "telemetry")
	r, logs := openTestRecorder(t, dir, RecorderOptions{Rotate: 20 * time.Millisecond, FlushInterval: time.Millisecond, RetryInterval: time.Millisecond})
	waitSegmentChange(t, r, "")
	// Replace the directory with a file: the next rotation cannot create a segment.
	if err := os.RemoveAll(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dir, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	// Until a call was lost, not only until degraded: degraded is set when
	// the old segment's rename fails, and a directory restored before the
	// new segment's open lets every call through.
	for h := r.Health(); h.Degraded == nil || h.Lost == 0; h = r.Health() {
		r.Call(Call{Session: "test/s", Tool: "lost"})
		time.Sleep(time.Millisecond)
	}
	if err := os.Remove(dir); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for r.Health().Degraded != nil {
		time.Sleep(time.Millisecond)
	}
	r.Call(Call{Session: "test/s", Seq: 1, Tool: "kept"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	h := r.Health()
	snap, err := Scan(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(snap.Calls) == 0 || snap.Calls[len(snap.Calls)-1].Tool != "kept" || h.Lost == 0 || snap.Dropped < h.Lost {
		t.Fatalf("after recovery: calls %+v, stored drops %d, health %+v", snap.Calls, snap.Dropped, h)
	}
	if !strings.Contains(logs.String(), "telemetry recovered") {
		t.Fatalf("recovery not logged:\n%s", logs)
	}
}

func TestOpenRecorderRejectsBadOptions(t *testing.T) {
	for _, opts := range []RecorderOptions{
		{Replica: "a/b"},
		{Replica: "a.open"},
		{Replica: "r", Rotate: -time.Second},
		{Replica: "r", BatchSize: -1},
	} {
		if r, err := OpenRecorder(t.TempDir(), opts); err == nil {
			r.Close()
			t.Errorf("OpenRecorder(%+v) accepted", opts)
		}
	}
}

func TestNewSessionIDUnique(t *testing.T) {
	seen := map[string]bool{}
	for range 3 { // three "restarts" of the same replica
		r, _ := openTestRecorder(t, t.TempDir(), RecorderOptions{Replica: "r1"})
		for range 1000 {
			id := r.NewSessionID()
			if seen[id] || !strings.HasPrefix(id, "r1/") {
				t.Fatalf("session id %q repeated or lacks the replica prefix", id)
			}
			seen[id] = true
		}
		r.Close()
	}
}

func TestSecondRecorderOfAReplicaLeavesTheLiveSegmentAlone(t *testing.T) {
	dir := t.TempDir()
	first, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "same"})
	waitSegmentChange(t, first, "")
	// The second recorder finds the first one's open segment, cannot lock
	// it (LockTimeout), warns, and still records into its own segment.
	second, logs := openTestRecorder(t, dir, RecorderOptions{Replica: "same"})
	second.Call(Call{Session: "same/2", Seq: 1, Tool: "t"})
	first.Call(Call{Session: "same/1", Seq: 1, Tool: "t"})
	if err := second.Close(); err != nil {
		t.Fatal(err)
	}
	if err := first.Close(); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), "replica ids must be unique") {
		t.Fatalf("no warning about the held segment:\n%s", logs)
	}
	if h := second.Health(); h.Degraded != nil || h.Written != 1 {
		t.Fatalf("second recorder: %+v", h)
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil || len(usage) != 2 {
		t.Fatalf("usage %+v, %v: want both recorders' sessions", usage, err)
	}
}

func TestDefaultRotationIsDailyAtUTCMidnight(t *testing.T) {
	for _, tc := range []struct {
		rotate, want time.Duration
	}{{0, 24 * time.Hour}, {time.Hour, time.Hour}} {
		before := time.Now().UTC()
		r, _ := openTestRecorder(t, t.TempDir(), RecorderOptions{Rotate: tc.rotate})
		after := time.Now().UTC()
		// rotateAt is set before the writer goroutine starts; either side
		// of a boundary crossed while opening is right.
		got := r.rotateAt
		r.Close()
		if r.opts.Rotate != tc.want ||
			!(got.Equal(before.Truncate(tc.want).Add(tc.want)) || got.Equal(after.Truncate(tc.want).Add(tc.want))) {
			t.Fatalf("Rotate %s: rotates every %s at %s, want every %s at the next UTC boundary after %s", tc.rotate, r.opts.Rotate, got, tc.want, before)
		}
	}
}

func TestRecorderFullDiskKeepsServing(t *testing.T) {
	dir := t.TempDir()
	// A segment that cannot grow past 128 KiB fails its commits as a full
	// disk would; retries start fresh segments, which fill up in turn.
	r, logs := openTestRecorder(t, dir, RecorderOptions{FlushInterval: time.Millisecond, BatchSize: 512, QueueSize: 1 << 16, RetryInterval: 5 * time.Millisecond, maxSegmentBytes: 128 << 10})
	sawDegraded := false
	for i := 0; i < 40000; i++ {
		r.Call(Call{Session: "test/s", Seq: uint64(i), Tool: fmt.Sprintf("tool_%d", i%30)}) // never blocks
		if i%500 == 0 {
			waitSegmentCommitted(r)
			if d := r.Health().Degraded; d != nil {
				sawDegraded = true
				if !strings.Contains(d.Error(), "maximum size") {
					t.Fatalf("degraded with %v, want the size error", d)
				}
			}
		}
	}
	r.Close() // may report the last segment's failure
	h := r.Health()
	if !sawDegraded || h.Lost == 0 || h.Dropped != 0 || h.Written+h.Lost != h.Enqueued {
		t.Fatalf("health %+v (saw degraded: %v): want losses counted and every event accounted for", h, sawDegraded)
	}
	snap, err := Scan(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if uint64(len(snap.Calls)) != h.Written || len(snap.Segments) < 2 {
		segs, _ := ListSegments([]string{dir})
		t.Fatalf("stored %d calls in %d segments; recorder wrote %d\n%+v\n%s", len(snap.Calls), len(snap.Segments), h.Written, segs, logs)
	}
	// Each episode is logged once, not once per failed batch.
	if n := strings.Count(logs.String(), "telemetry degraded"); n == 0 || n > len(snap.Segments) {
		t.Fatalf("logged degradation %d times over %d segments", n, len(snap.Segments))
	}
}

// waitSegmentCommitted waits until everything queued was committed or lost.
func waitSegmentCommitted(r *Recorder) {
	for h := r.Health(); h.Written+h.Lost < h.Enqueued; h = r.Health() {
		time.Sleep(100 * time.Microsecond)
	}
}

// TestNewSegmentIsLockedBeforeItIsListed: a recorder sweeping segments
// left open (finishStale, closeStale) while another process of the same
// replica opens its segment never takes that segment for a stopped
// recorder's: a segment appears under its open name only once its writer
// holds its lock. Before, the sweep could lock the file between its
// creation and its writer's lock, close it and rename it, and the writer's
// Close then failed to find it.
func TestNewSegmentIsLockedBeforeItIsListed(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	swept := make(chan int)
	go func() {
		n := 0
		defer func() { swept <- n }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			segs, err := ListSegments([]string{dir})
			if err != nil {
				continue
			}
			for _, s := range segs {
				if s.Open && closeStale(s) == nil {
					n++
				}
			}
		}
	}()
	const recorders = 150
	for i := range recorders {
		r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "same"})
		waitSegmentChange(t, r, "")
		r.Call(Call{Session: fmt.Sprintf("same/%d", i), Seq: 1, Tool: "t"})
		if err := r.Close(); err != nil {
			close(stop)
			<-swept
			t.Fatalf("recorder %d: %v", i, err)
		}
	}
	close(stop)
	if n := <-swept; n != 0 {
		t.Errorf("the sweep closed %d segments a live recorder held", n)
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil || len(usage) != recorders {
		t.Fatalf("usage of %d sessions, %v: want %d", len(usage), err, recorders)
	}
}

// TestStaleSegmentSweptTwiceKeepsItsCalls: two processes closing the same
// segment a crashed recorder left open, at once, leave one closed segment
// holding its calls. Before, the later one, finding the name gone, created
// an empty segment there and renamed it over the closed one.
func TestStaleSegmentSweptTwiceKeepsItsCalls(t *testing.T) {
	dir := t.TempDir()
	const segments = 40
	start := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	for i := range segments {
		at := start.Add(time.Duration(i) * time.Minute)
		path := segmentPath(dir, "crashed", at, true)
		db, err := createSegment(path, "crashed", at)
		if err != nil {
			t.Fatal(err)
		}
		w, _ := newSegmentWriter(db, path)
		if err := w.commit([]event{{kind: eventCall, call: Call{Session: fmt.Sprintf("crashed/%d", i), Seq: 1, Tool: "t", Start: at}}}, 0, true); err != nil {
			t.Fatal(err)
		}
		db.Close() // the crash: never marked closed nor renamed
		segs, err := ListSegments([]string{dir})
		if err != nil {
			t.Fatal(err)
		}
		var stale SegmentFile
		for _, s := range segs {
			if s.Open {
				stale = s
			}
		}
		errs := make(chan error, 2)
		for range 2 {
			go func() { errs <- closeStale(stale) }()
		}
		for range 2 {
			if err := <-errs; err != nil && !errors.Is(err, errClosedMeanwhile) && !errors.Is(err, ErrSegmentLocked) {
				t.Fatalf("segment %d: %v", i, err)
			}
		}
	}
	segs, err := ListSegments([]string{dir})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range segs {
		if s.Open {
			t.Errorf("%s left open", s.Path)
		}
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil || len(usage) != segments || len(segs) != segments {
		t.Fatalf("%d segments holding %d sessions, %v: want %d of each", len(segs), len(usage), err, segments)
	}
}

// TestFailedSegmentCreationLeavesNoFile: a segment bbolt cannot create
// (here over its size limit; a full disk likewise) leaves no .creating
// file behind, which no listing or sweep would ever find, however often
// the recorder retries.
func TestFailedSegmentCreationLeavesNoFile(t *testing.T) {
	dir := t.TempDir()
	r, _ := openTestRecorder(t, dir, RecorderOptions{FlushInterval: time.Millisecond, RetryInterval: time.Millisecond, maxSegmentBytes: 1})
	base := time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	for i := range 50 {
		r.Call(Call{Session: "s", Seq: uint64(i + 1), Tool: "t", Start: base.Add(time.Duration(i) * time.Millisecond), Outcome: OutcomeOK})
		time.Sleep(time.Millisecond) // let the writer retry between calls
	}
	_ = r.Close()
	left, err := filepath.Glob(filepath.Join(dir, "*"+creatingSuffix))
	if err != nil {
		t.Fatal(err)
	}
	if len(left) > 0 {
		t.Errorf("%d .creating files left: %v", len(left), left)
	}
}

// TestCreatingLeftoversSwept: a recorder starting removes the .creating
// files recorders died creating (no lock held, untouched for staleAge),
// and leaves one a live process holds, one too young to tell from a
// creation under way, and files that are no segment's.
func TestCreatingLeftoversSwept(t *testing.T) {
	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	tests := []struct {
		name    string
		file    string // name in the telemetry directory
		held    bool   // a live second process holds the file's lock
		old     bool   // last modified before staleAge ago
		removed bool
	}{
		{name: "this replica's, creator dead", file: filepath.Base(segmentPath("", "me", at, true)) + creatingSuffix, old: true, removed: true},
		{name: "another replica's, creator dead", file: filepath.Base(segmentPath("", "other", at, true)) + creatingSuffix, old: true, removed: true},
		{name: "this replica's, held by a live process", file: filepath.Base(segmentPath("", "me", at, true)) + creatingSuffix, held: true, old: true},
		{name: "another replica's, held by a live process", file: filepath.Base(segmentPath("", "other", at, true)) + creatingSuffix, held: true, old: true},
		{name: "too young to tell from a creation under way", file: filepath.Base(segmentPath("", "other", at, true)) + creatingSuffix},
		{name: "this replica's, too young", file: filepath.Base(segmentPath("", "me", at, true)) + creatingSuffix},
		{name: "no segment's name", file: "notes" + creatingSuffix, old: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := filepath.Join(dir, tt.file)
			if tt.held {
				_, out, _ := startChild(t, "hold:"+path)
				if !out.Scan() || out.Text() != "HELD" {
					t.Fatalf("holder: %q", out.Text())
				}
			} else if err := os.WriteFile(path, nil, 0o600); err != nil { // as a crash before bbolt's lock leaves it
				t.Fatal(err)
			}
			if tt.old {
				old := time.Now().Add(-2 * staleAge)
				if err := os.Chtimes(path, old, old); err != nil {
					t.Fatal(err)
				}
			}
			r, logs := openTestRecorder(t, dir, RecorderOptions{Replica: "me"})
			waitSegmentChange(t, r, "")
			if err := r.Close(); err != nil {
				t.Fatal(err)
			}
			_, err := os.Stat(path)
			if gone := errors.Is(err, fs.ErrNotExist); gone != tt.removed {
				t.Errorf("removed %v, want %v (stat: %v); log:\n%s", gone, tt.removed, err, logs)
			}
		})
	}
}

// TestCreatingSweepLeavesLiveCreationsAlone: sweeping .creating files
// while recorders create their segments never takes one from its creator,
// whose segment then opens and keeps its calls.
func TestCreatingSweepLeavesLiveCreationsAlone(t *testing.T) {
	dir := t.TempDir()
	stop := make(chan struct{})
	swept := make(chan []string)
	go func() {
		var all []string
		defer func() { swept <- all }()
		for {
			select {
			case <-stop:
				return
			default:
			}
			removed, _ := sweepCreating(dir, time.Now().Add(-staleAge))
			all = append(all, removed...)
		}
	}()
	const recorders = 150
	for i := range recorders {
		r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "same"})
		r.Call(Call{Session: fmt.Sprintf("same/%d", i), Seq: 1, Tool: "t"})
		if err := r.Close(); err != nil {
			close(stop)
			<-swept
			t.Fatalf("recorder %d: %v", i, err)
		}
		if h := r.Health(); h.Written != 1 {
			close(stop)
			<-swept
			t.Fatalf("recorder %d: %+v", i, h)
		}
	}
	close(stop)
	if all := <-swept; len(all) != 0 {
		t.Errorf("the sweep removed %d files live recorders were creating: %v", len(all), all[:1])
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil || len(usage) != recorders {
		t.Fatalf("usage of %d sessions, %v: want %d", len(usage), err, recorders)
	}
}
