package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

// TestScanTraceSessionMatchesJSON: the fast line scanner gives what
// encoding/json gives, for every line it accepts, and declines the rest.
func TestScanTraceSessionMatchesJSON(t *testing.T) {
	lines := []struct {
		line   string
		accept bool
	}{
		{`{"session":"s","client":{"name":"c","version":"1"},"started":"2026-01-01T00:00:00Z","calls":[{"tool":"a"},{"tool":"b","ok":false},{"tool":"c","ok":true,"outcome":"denied"}]}`, true},
		{`{ "session" : "s" , "calls" : [ ] }`, true},
		{`{"session":"s","calls":null,"profile":null,"client":null,"started":null}`, true},
		{`{"session":"s","profile":"p","started":"2026-03-01T12:00:00.5","calls":[{"tool":"a","ok":null,"outcome":null}]}`, true},
		{`{"session":"s","client":{"name":null,"version":"2"},"calls":[{"tool":"a"}]}`, true},
		{`{"session":"a","session":"b","calls":[]}`, true},
		{`{"session":"s","calls":[{"tool":"a","search":true},{"tool":"b","search":false,"ok":true},{"tool":"c","search":null}]}`, true},
		{`{"session":"s","calls":[{"tool":"a","search":1}]}`, false},
		{`{"session":"s","calls":[{"tool":"a","arguments":{"x":1}}]}`, false},
		{`{"session":"s","turns":["hi"],"calls":[{"tool":"a","turn":0}]}`, false},
		{`{"session":"s\u00e9","calls":[]}`, false},
		{`{"session":"s","Calls":[]}`, false},
		{`{"session":"s","calls":[]} {}`, false},
		{`{"session":"s","started":"yesterday","calls":[]}`, false},
	}
	for _, tc := range lines {
		t.Run(tc.line, func(t *testing.T) {
			var slab []TraceCall
			got, ok := scanTraceSession([]byte(tc.line), newInterner(), &slab)
			if ok != tc.accept {
				t.Fatalf("accepted %v, want %v", ok, tc.accept)
			}
			if !ok {
				return
			}
			var want TraceSession
			if err := json.Unmarshal([]byte(tc.line), &want); err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, want) {
				t.Fatalf("scanned %+v\njson    %+v", got, want)
			}
		})
	}
}

// TestImporterCommitsInBatches: an import holds at most one batch of
// events in memory, whatever its size; the rest is in the segment.
func TestImporterCommitsInBatches(t *testing.T) {
	dir := t.TempDir()
	im, err := NewImporter(context.Background(), dir, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	defer im.Abort()
	// Each session calls its own tools, so that a batch overwritten while
	// it is written would show in what is read back.
	const perSession = 9
	toolsOf := func(i int) []string {
		var tools []string
		for j := range perSession {
			tools = append(tools, fmt.Sprintf("t%03d", (i+j)%97))
		}
		slices.Sort(tools)
		return slices.Compact(tools)
	}
	sessions := 3 * importBatch / perSession
	most := 0
	for i := range sessions {
		var calls []TraceCall
		for _, tool := range toolsOf(i) {
			calls = append(calls, TraceCall{Tool: tool})
		}
		if _, err := im.Add(&TraceSession{Session: fmt.Sprint("s", i), Calls: calls}); err != nil {
			t.Fatal(err)
		}
		most = max(most, len(im.calls))
	}
	calls := make([]TraceCall, perSession)
	if most > importBatch+len(calls) {
		t.Fatalf("import held %d events at once, want at most a batch (%d)", most, importBatch)
	}
	res, err := im.Commit()
	if err != nil {
		t.Fatal(err)
	}
	usage, err := ReadUsage(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sessions != sessions || len(usage) != sessions || res.Calls != sessions*len(calls) {
		t.Fatalf("imported %+v, read %d sessions; want %d sessions", res, len(usage), sessions)
	}
	for _, u := range usage {
		var i int
		if _, err := fmt.Sscanf(u.Session.ID, "s%d", &i); err != nil {
			t.Fatalf("session %q: %v", u.Session.ID, err)
		}
		if want := toolsOf(i); !slices.Equal(u.Tools, want) || u.Calls != perSession {
			t.Fatalf("session %s read back with tools %v (%d calls), want %v (%d)", u.Session.ID, u.Tools, u.Calls, want, perSession)
		}
	}
}

// TestImporterAbortLeavesNothing: an import cancelled part way, or
// aborted after batches were committed, leaves the directory as it was.
func TestImporterAbortLeavesNothing(t *testing.T) {
	for _, cancelIt := range []bool{false, true} {
		t.Run(fmt.Sprint("cancel=", cancelIt), func(t *testing.T) {
			dir := t.TempDir()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			im, err := NewImporter(ctx, dir, time.Now())
			if err != nil {
				t.Fatal(err)
			}
			calls := []TraceCall{{Tool: "a"}, {Tool: "b"}, {Tool: "c"}}
			var addErr error
			for i := 0; i < importBatch && addErr == nil; i++ {
				if cancelIt && i == importBatch/2 {
					cancel()
				}
				_, addErr = im.Add(&TraceSession{Session: fmt.Sprint("s", i), Calls: calls})
			}
			if cancelIt {
				if !errors.Is(addErr, context.Canceled) {
					t.Fatalf("Add after cancel: %v, want context.Canceled", addErr)
				}
			} else {
				if addErr != nil {
					t.Fatal(addErr)
				}
				im.Abort()
			}
			if _, err := im.Commit(); err == nil {
				t.Fatal("Commit after an abort succeeded")
			}
			entries, err := os.ReadDir(dir)
			if err != nil {
				t.Fatal(err)
			}
			if len(entries) != 0 {
				t.Fatalf("directory holds %v after the abort", entries)
			}
		})
	}
}

// TestScanTraceLineOrder: sessions and malformed lines come in file order
// across decoding chunks, with their line numbers.
func TestScanTraceLineOrder(t *testing.T) {
	var b strings.Builder
	n := 3*scanChunk + 5
	for i := range n {
		switch {
		case i%1000 == 7:
			b.WriteString("{not json}\n")
		case i%777 == 3:
			b.WriteString("\n")
		default:
			fmt.Fprintf(&b, `{"session":"s%d","calls":[{"tool":"t%d"}]}`+"\n", i, i%5)
		}
	}
	var got []int
	err := ScanTrace(context.Background(), strings.NewReader(b.String()), "t.jsonl", func(line int, ts *TraceSession) error {
		if ts.Session != fmt.Sprint("s", line-1) {
			return fmt.Errorf("line %d holds session %s", line, ts.Session)
		}
		got = append(got, line)
		return nil
	}, func(e LineError) { got = append(got, -e.Line) })
	if err != nil {
		t.Fatal(err)
	}
	var want []int
	sc := bufio.NewScanner(strings.NewReader(b.String()))
	for line := 1; sc.Scan(); line++ {
		switch text := sc.Bytes(); {
		case len(bytes.TrimSpace(text)) == 0:
		case text[0] == '{' && text[1] == 'n':
			want = append(want, -line)
		default:
			want = append(want, line)
		}
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got %d events, want %d in order", len(got), len(want))
	}
}

// TestImportStoredIDsFromNameTables: re-importing skips the sessions the
// directory already holds, including one known only from its calls.
func TestImportStoredIDsFromNameTables(t *testing.T) {
	dir := t.TempDir()
	r, err := OpenRecorder(dir, RecorderOptions{Replica: "r"})
	if err != nil {
		t.Fatal(err)
	}
	r.Call(Call{Session: "r/calls-only", Tool: "a"})
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	res, err := Import(context.Background(), dir, []TraceSession{{Session: "r/calls-only"}, {Session: "new"}}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(res.Skipped, []string{"r/calls-only"}) || res.Sessions != 1 {
		t.Fatalf("import %+v, want r/calls-only skipped and 1 session stored", res)
	}
	if _, err := os.Stat(filepath.Dir(res.Path)); err != nil {
		t.Fatal(err)
	}
}

// TestScanTraceSessionSharedSlab: sessions decoded one after another into
// one slab keep their own calls, however the slab grows.
func TestScanTraceSessionSharedSlab(t *testing.T) {
	var slab []TraceCall
	in := newInterner()
	var got []TraceSession
	for i := range 200 {
		var b strings.Builder
		fmt.Fprintf(&b, `{"session":"s%d","calls":[`, i)
		for j := range i % 7 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"tool":"t%d_%d"}`, i, j)
		}
		b.WriteString("]}")
		ts, ok := scanTraceSession([]byte(b.String()), in, &slab)
		if !ok {
			t.Fatalf("line %q declined", b.String())
		}
		got = append(got, ts)
	}
	for i, ts := range got {
		if len(ts.Calls) != i%7 || ts.Calls == nil {
			t.Fatalf("session %d: %d calls (nil %v), want %d", i, len(ts.Calls), ts.Calls == nil, i%7)
		}
		for j, c := range ts.Calls {
			if want := fmt.Sprintf("t%d_%d", i, j); c.Tool != want {
				t.Fatalf("session %d call %d: tool %q, want %q", i, j, c.Tool, want)
			}
		}
	}
}

// TestImportOutOfOrderStarts: sessions whose starts are not in file order
// are read back as imported, and the segment is not much larger than the
// one of the same sessions in start order (pages filled full for appends
// split in two when a later batch reaches back into them).
func TestImportOutOfOrderStarts(t *testing.T) {
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const n = 12 * importBatch / 3 // twelve batches of three calls a session
	order := make([]int, n)
	for i := range order {
		order[i] = i
	}
	shuffled := slices.Clone(order)
	for i := range shuffled { // a fixed permutation, no seed to keep
		j := (i*7919 + 13) % n
		shuffled[i], shuffled[j] = shuffled[j], shuffled[i]
	}
	imp := func(order []int) (string, []Session, []Call) {
		dir := t.TempDir()
		var traces []TraceSession
		for _, i := range order {
			start := base.Add(time.Duration(i) * time.Second)
			traces = append(traces, TraceSession{Session: fmt.Sprint("s", i), Started: &start,
				Calls: []TraceCall{{Tool: fmt.Sprint("t", i%5)}, {Tool: "u"}, {Tool: fmt.Sprint("t", i%3)}}})
		}
		res, err := Import(context.Background(), dir, traces, base)
		if err != nil {
			t.Fatal(err)
		}
		sessions, calls, err := ReadAll(context.Background(), []string{dir}, Window{})
		if err != nil {
			t.Fatal(err)
		}
		return res.Path, sessions, calls
	}
	inOrder, wantSessions, wantCalls := imp(order)
	outOfOrder, gotSessions, gotCalls := imp(shuffled)
	if len(gotSessions) != n || len(gotCalls) != 3*n {
		t.Fatalf("read back %d sessions, %d calls; want %d, %d", len(gotSessions), len(gotCalls), n, 3*n)
	}
	// Session numbers follow the order of the file; compare what the
	// readers give without them.
	key := func(s Session) string { return fmt.Sprint(s.ID, s.Start.UnixNano(), s.End.UnixNano()) }
	for i := range gotSessions {
		if key(gotSessions[i]) != key(wantSessions[i]) {
			t.Fatalf("session %d: %+v, want %+v", i, gotSessions[i], wantSessions[i])
		}
	}
	for i := range gotCalls {
		g, w := gotCalls[i], wantCalls[i]
		if g.Session != w.Session || g.Tool != w.Tool || g.Seq != w.Seq || !g.Start.Equal(w.Start) {
			t.Fatalf("call %d: %+v, want %+v", i, g, w)
		}
	}
	size := func(path string) int64 {
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}
	// Full pages split by later batches made it 4x; half-full ones 2.4x.
	if a, b := size(inOrder), size(outOfOrder); float64(b) > 3*float64(a) {
		t.Errorf("segment of sessions out of start order is %d bytes, %.1fx the in-order one (%d); want at most 3x", b, float64(b)/float64(a), a)
	}
}
