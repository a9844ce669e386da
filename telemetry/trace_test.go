package telemetry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/internal/golden"
)

func TestDecodeTrace(t *testing.T) {
	good := `{"session": "s1", "client": {"name": "c", "version": "1"}, "calls": [{"tool": "a"}, {"tool": "b", "ok": false}]}`
	for _, tc := range []struct {
		name      string
		input     string
		skipBad   bool
		sessions  int
		badLines  []int
		wantError string
	}{
		{"good lines and blank lines", good + "\n\n" + strings.Replace(good, "s1", "s2", 1) + "\n", false, 2, nil, ""},
		{"malformed JSON without skip", good + "\n{\"session\": \n", false, 0, []int{2}, "t.jsonl:2: not a session object"},
		{"malformed JSON with skip", good + "\n{\"session\": \n", true, 1, []int{2}, ""},
		{"missing tool", `{"session": "s", "calls": [{"ok": true}]}`, false, 0, []int{1}, `calls[0]: missing "tool"`},
		{"missing session", `{"calls": []}`, false, 0, []int{1}, `missing "session"`},
		{"bad outcome", `{"session": "s", "calls": [{"tool": "a", "outcome": "great"}]}`, false, 0, []int{1}, `outcome "great": want one of`},
		{"duplicate session", good + "\n" + good, true, 1, []int{2}, ""},
		{"two values on a line", good + good, false, 0, []int{1}, "more than one JSON value"},
		{"started without a zone is UTC", `{"session": "s", "started": "2026-03-01T12:00:00.5", "calls": []}`, false, 1, nil, ""},
		{"turns and a call's turn", `{"session": "s", "turns": ["list files"], "calls": [{"tool": "ls", "turn": 0}]}`, false, 1, nil, ""},
		{"turn past the turns", `{"session": "s", "turns": ["list files"], "calls": [{"tool": "ls", "turn": 1}]}`, false, 0, []int{1}, `calls[0]: turn 1: want an index into "turns" (0 to 0)`},
		{"turn without turns", `{"session": "s", "calls": [{"tool": "ls", "turn": 0}]}`, false, 0, []int{1}, `calls[0]: turn 0`},
		{"started not a time", `{"session": "s", "started": "yesterday", "calls": []}`, false, 0, []int{1}, `t.jsonl:1: "started" "yesterday": want RFC 3339`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ts, bad, err := DecodeTrace(strings.NewReader(tc.input), "t.jsonl", tc.skipBad)
			if tc.wantError == "" && err != nil {
				t.Fatal(err)
			}
			if tc.wantError != "" && (err == nil || !strings.Contains(err.Error(), tc.wantError)) {
				t.Fatalf("error %v, want one containing %q", err, tc.wantError)
			}
			if len(ts) != tc.sessions {
				t.Fatalf("%d sessions, want %d", len(ts), tc.sessions)
			}
			var lines []int
			for _, b := range bad {
				if b.File != "t.jsonl" {
					t.Errorf("line error names file %q", b.File)
				}
				lines = append(lines, b.Line)
			}
			if !reflect.DeepEqual(lines, tc.badLines) {
				t.Fatalf("bad lines %v, want %v", lines, tc.badLines)
			}
		})
	}
}

func TestUsageFromTrace(t *testing.T) {
	started := time.Date(2025, 8, 20, 9, 43, 42, 0, time.UTC)
	ok, notOK := true, false
	got := UsageFromTrace([]TraceSession{
		{Session: "a", Client: TraceClient{"c", "1"}, Started: &started, Profile: "p", Calls: []TraceCall{{Tool: "x"}, {Tool: "y", OK: &ok}, {Tool: "x", OK: &notOK}, {Tool: "z", Outcome: "denied"}, {Tool: "q", Outcome: "unknown_tool"}}},
		{Session: "b", Calls: nil},
	})
	want := []Usage{
		{Session: Session{ID: "a", Start: started, ClientName: "c", ClientVersion: "1", Profile: "p"}, Tools: []string{"q", "x", "y", "z"}, Calls: 5, Denied: 1, Unknown: 1},
		{Session: Session{ID: "b"}, Calls: 0},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("got  %+v\nwant %+v", got, want)
	}
}

// TestImportExportRoundTrip imports testdata/sessions.jsonl (every optional
// field, arguments carrying a marker), exports it, and compares with the
// golden export; re-importing the export changes nothing.
func TestImportExportRoundTrip(t *testing.T) {
	in, err := os.ReadFile("testdata/sessions.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	traces, _, err := DecodeTrace(bytes.NewReader(in), "sessions.jsonl", false)
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	res, err := Import(context.Background(), dir, traces, now)
	if err != nil {
		t.Fatal(err)
	}
	if res.Sessions != len(traces) || res.Path == "" {
		t.Fatalf("import result %+v", res)
	}
	export := func() []byte {
		sessions, calls, err := ReadAll(context.Background(), []string{dir}, Window{})
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := EncodeTrace(&buf, sessions, calls); err != nil {
			t.Fatal(err)
		}
		return buf.Bytes()
	}
	got := export()
	golden.Assert(t, filepath.Join("testdata", "sessions.export.jsonl"), got)
	// The usage of the export equals the usage of the original trace.
	reread, _, err := DecodeTrace(bytes.NewReader(got), "export", false)
	if err != nil {
		t.Fatal(err)
	}
	byID := func(us []Usage) map[string]Usage {
		m := map[string]Usage{}
		for _, u := range us {
			u.Session.Start = time.Time{} // absent "started" became the import time
			m[u.Session.ID] = u
		}
		return m
	}
	a, b := byID(UsageFromTrace(traces)), byID(UsageFromTrace(reread))
	if len(a) != len(traces) || !reflect.DeepEqual(a, b) {
		t.Fatalf("usage changed by the round trip:\n%+v\n%+v", a, b)
	}
	// Importing the export into a fresh directory exports identically.
	dir2 := t.TempDir()
	if _, err := Import(context.Background(), dir2, reread, now.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	dir = dir2
	if again := export(); !bytes.Equal(again, got) {
		t.Fatalf("export -> import -> export changed:\n%s\nvs\n%s", again, got)
	}
	// Importing the same sessions again skips them instead of doubling calls.
	res, err = Import(context.Background(), dir2, reread, now)
	if err != nil || res.Sessions != 0 || len(res.Skipped) != len(reread) || res.Path != "" {
		t.Fatalf("re-import: %+v %v", res, err)
	}
}

func TestImportStoresNoArguments(t *testing.T) {
	const marker = "SECRET-MARKER-7f3a9c"
	in := `{"session": "p1", "client": {"name": "c", "version": "1"}, "calls": [{"tool": "read_file", "arguments": {"path": "/home/` + marker + `", "token": "` + marker + `"}, "ok": true}]}`
	traces, _, err := DecodeTrace(strings.NewReader(in), "p.jsonl", false)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(traces[0].Calls[0].Arguments), marker) {
		t.Fatal("the marker did not reach the decoded trace: the test would prove nothing")
	}
	dir := t.TempDir()
	if _, err := Import(context.Background(), dir, traces, time.Now()); err != nil {
		t.Fatal(err)
	}
	assertNoMarker(t, dir, marker, 1)
}

// assertNoMarker checks that no file under dir contains marker, and that
// at least files were looked at.
func assertNoMarker(t *testing.T, dir, marker string, files int) {
	t.Helper()
	seen := 0
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		seen++
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if bytes.Contains(b, []byte(marker)) {
			t.Errorf("%s contains the argument marker", path)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if seen < files {
		t.Fatalf("looked at %d files, want at least %d", seen, files)
	}
}

func TestImportFailureWritesNothing(t *testing.T) {
	root := t.TempDir()
	file := filepath.Join(root, "file")
	os.WriteFile(file, nil, 0o600)
	_, err := Import(context.Background(), filepath.Join(file, "dir"), []TraceSession{{Session: "s"}}, time.Now())
	if err == nil || !strings.Contains(err.Error(), "telemetry directory") {
		t.Fatalf("import into an impossible directory: %v", err)
	}
	var pe *os.PathError
	if !errors.As(err, &pe) {
		t.Fatalf("error does not carry the path: %v", err)
	}
}

func TestDecodeTraceLineTooLong(t *testing.T) {
	short := `{"session": "s1", "calls": []}`
	long := `{"session": "s2", "calls": [` + strings.Repeat(`{"tool": "a"},`, 20) + `{"tool": "a"}]}`
	_, _, err := decodeTrace(strings.NewReader(short+"\n"+long+"\n"), "t.jsonl", true, 100)
	if err == nil || !strings.Contains(err.Error(), "t.jsonl:2: a line longer than 100 bytes") {
		t.Fatalf("got %v, want the file, line and limit", err)
	}
}

func TestScanUsageCountsToolCalls(t *testing.T) {
	dir := t.TempDir()
	traces := []TraceSession{
		{Session: "s1", Calls: []TraceCall{{Tool: "a"}, {Tool: "b"}, {Tool: "a"}}},
		{Session: "s2", Calls: []TraceCall{{Tool: "a"}}},
	}
	if _, err := Import(context.Background(), dir, traces[:1], time.Now()); err != nil {
		t.Fatal(err)
	}
	if _, err := Import(context.Background(), dir, traces[1:], time.Now()); err != nil {
		t.Fatal(err)
	}
	snap, err := ScanUsage(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]int{"a": 3, "b": 1}; !reflect.DeepEqual(snap.ToolCalls, want) {
		t.Errorf("tool calls %v, want %v (summed over both segments)", snap.ToolCalls, want)
	}
	if len(snap.Usage) != 2 || snap.Calls != nil {
		t.Errorf("usage %d sessions, calls %d: want 2 sessions and no calls decoded", len(snap.Usage), len(snap.Calls))
	}
}

func TestDecodeTraceStarted(t *testing.T) {
	for _, tc := range []struct {
		started string
		want    time.Time
		noZone  bool
	}{
		{`"2026-03-01T12:00:00Z"`, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), false},
		{`"2026-03-01T14:00:00+02:00"`, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), false},
		{`"2026-03-01T12:00:00"`, time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC), true},
		{`"2026-03-01T12:00:00.25"`, time.Date(2026, 3, 1, 12, 0, 0, 25e7, time.UTC), true},
	} {
		t.Run(tc.started, func(t *testing.T) {
			ts, _, err := DecodeTrace(strings.NewReader(`{"session":"s","started":`+tc.started+`,"calls":[]}`), "t.jsonl", false)
			if err != nil {
				t.Fatal(err)
			}
			if ts[0].Started == nil || !ts[0].Started.Equal(tc.want) || ts[0].StartedNoZone != tc.noZone {
				t.Errorf("started %v no zone %v, want %v and %v", ts[0].Started, ts[0].StartedNoZone, tc.want, tc.noZone)
			}
		})
	}
}

// TestDecodeTraceTurns reads the turns and each call's turn, and never
// writes the user's words back when the session is encoded.
func TestDecodeTraceTurns(t *testing.T) {
	line := `{"session":"s1","client":{"name":"c","version":"1"},"turns":["secret words one","secret two"],"calls":[{"tool":"a","turn":0},{"tool":"b","turn":1}]}` + "\n" +
		`{"session":"s2","client":{"name":"c","version":"1"},"calls":[{"tool":"a"}]}` + "\n"
	ts, _, err := DecodeTrace(strings.NewReader(line), "t.jsonl", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts[0].Turns) != 2 || ts[0].Calls[1].Turn == nil || *ts[0].Calls[1].Turn != 1 {
		t.Errorf("s1: turns %q, calls %+v; want 2 turns, call b at turn 1", ts[0].Turns, ts[0].Calls)
	}
	if len(ts[1].Turns) != 0 || ts[1].Calls[0].Turn != nil {
		t.Errorf("s2: turns %q, turn %v; want none", ts[1].Turns, ts[1].Calls[0].Turn)
	}
	out, err := json.Marshal(ts[0])
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), "secret") {
		t.Errorf("the user's words were kept: %s", out)
	}
}
