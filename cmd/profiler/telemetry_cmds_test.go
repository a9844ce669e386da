package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/internal/golden"
	"github.com/toolprof/toolprof/telemetry"
)

const telemetryTrace = `{"session": "a/1", "client": {"name": "claude-code", "version": "2.1"}, "started": "2026-03-01T09:00:00Z", "profile": "coding", "calls": [{"tool": "read_file", "ok": true}, {"tool": "grep|search", "outcome": "denied"}, {"tool": "read_file", "ok": false}]}
{"session": "a/2", "client": {"name": "claude-code", "version": "2.1"}, "started": "2026-03-02T09:00:00Z", "calls": [{"tool": "write_file", "arguments": {"content": "MARKER-c0ffee"}, "ok": true}]}
{"session": "b/1", "client": {"name": "cursor", "version": "1.0"}, "started": "2026-03-05T09:00:00Z", "calls": [{"tool": "read_file"}, {"tool": "not_in_catalog", "outcome": "unknown_tool"}]}
`

const telemetryCatalog = `{"tools": [{"name": "read_file", "inputSchema": {"type": "object"}}, {"name": "write_file", "inputSchema": {"type": "object"}}]}`

// runProfiler runs the profiler's run() and returns stdout, stderr and the
// exit status main would use.
func runProfiler(t *testing.T, args ...string) (string, string, int) {
	t.Helper()
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), args, &stdout, &stderr)
	code := exitCode(err, &stderr)
	return stdout.String(), stderr.String(), code
}

func writeTemp(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func segmentCount(t *testing.T, dir string) int {
	t.Helper()
	segs, err := telemetry.ListSegments([]string{dir})
	if err != nil && !os.IsNotExist(err) && !strings.Contains(err.Error(), "no such file") {
		t.Fatal(err)
	}
	return len(segs)
}

func TestImportCommand(t *testing.T) {
	trace := writeTemp(t, "trace.jsonl", telemetryTrace)
	cat := writeTemp(t, "catalog.json", telemetryCatalog)
	bad := writeTemp(t, "bad.jsonl", strings.Replace(telemetryTrace, `{"session": "a/2"`, `{"session": `, 1))
	otlpFile := filepath.Join("testdata", "otlp-jaeger.json")
	for _, tc := range []struct {
		name     string
		args     func(dir string) []string
		code     int
		stdout   []string
		stderr   []string
		segments int
	}{
		{"imports and counts tools in no catalog", func(d string) []string { return []string{"import", "--telemetry", d, "--catalog", cat, trace} },
			0, []string{"imported 3 sessions, 6 calls", "2 call(s) to tools in no catalog given (kept)"}, nil, 1},
		{"malformed line without --skip-bad writes nothing", func(d string) []string { return []string{"import", "--telemetry", d, trace, bad} },
			1, nil, []string{bad + ":2: not a session object", "nothing written"}, 0},
		{"malformed line with --skip-bad imports the rest", func(d string) []string { return []string{"import", "--telemetry", d, "--skip-bad", bad} },
			0, []string{"imported 2 sessions, 5 calls", "skipped 1 malformed line(s)"}, []string{bad + ":2:"}, 1},
		{"session repeated across files", func(d string) []string { return []string{"import", "--telemetry", d, trace, trace} },
			1, nil, []string{`session "a/1" is also in ` + trace}, 0},
		{"no directory", func(d string) []string { return []string{"import", trace} }, 2, nil, []string{"exactly one --telemetry DIR"}, 0},
		{"two directories", func(d string) []string { return []string{"import", "--telemetry", d, "--telemetry", d, trace} }, 2, nil, []string{"exactly one --telemetry DIR"}, 0},
		{"no files", func(d string) []string { return []string{"import", "--telemetry", d} }, 2, nil, []string{"no trace files"}, 0},
		{"empty directory flag", func(d string) []string { return []string{"import", "--telemetry", "", trace} }, 2, nil, []string{`invalid value "" for flag -telemetry: want a directory path`}, 0},
		{"unknown flag", func(d string) []string { return []string{"import", "--telemetry", d, "--nope", trace} }, 2, nil, []string{"flag provided but not defined: -nope"}, 0},
		{"missing file", func(d string) []string { return []string{"import", "--telemetry", d, trace + ".missing"} }, 1, nil, []string{"trace.jsonl.missing"}, 0},
		{"otlp from another gateway", func(d string) []string { return []string{"import", "--telemetry", d, "--otlp", otlpFile} },
			0, []string{"read 3 spans: 2 MCP tool calls in 1 sessions, 1 other spans skipped", "imported 1 sessions, 2 calls"}, nil, 1},
		{"otlp file that is not OTLP", func(d string) []string { return []string{"import", "--telemetry", d, "--otlp", otlpFile, trace} },
			1, nil, []string{trace + ": object 1: not OTLP JSON", `field "calls"`}, 0},
		{"otlp with --skip-bad", func(d string) []string { return []string{"import", "--telemetry", d, "--otlp", "--skip-bad", otlpFile} },
			2, nil, []string{"drop --skip-bad"}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "telemetry")
			stdout, stderr, code := runProfiler(t, tc.args(dir)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d\nstdout: %s\nstderr: %s", code, tc.code, stdout, stderr)
			}
			for _, want := range tc.stdout {
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
			for _, want := range tc.stderr {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if n := segmentCount(t, dir); n != tc.segments {
				t.Errorf("%d segments written, want %d", n, tc.segments)
			}
		})
	}
}

func TestImportKeepsNoArguments(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runProfiler(t, "import", "--telemetry", dir, writeTemp(t, "trace.jsonl", telemetryTrace)); code != 0 {
		t.Fatal(stderr)
	}
	files := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, _ := os.ReadFile(path)
		if bytes.Contains(b, []byte("MARKER-c0ffee")) {
			t.Errorf("%s holds a call argument", path)
		}
		return nil
	})
	if files == 0 {
		t.Fatal("import wrote no file to look at")
	}
	exported, _, _ := runProfiler(t, "export", "--telemetry", dir)
	if strings.Contains(exported, "MARKER-c0ffee") || !strings.Contains(exported, "write_file") {
		t.Fatalf("export: %s", exported)
	}
}

func TestExportCommandRoundTrip(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runProfiler(t, "import", "--telemetry", dir, writeTemp(t, "trace.jsonl", telemetryTrace)); code != 0 {
		t.Fatal(stderr)
	}
	first, stderr, code := runProfiler(t, "export", "--telemetry", dir)
	if code != 0 {
		t.Fatal(stderr)
	}
	if strings.Count(first, "\n") != 3 {
		t.Fatalf("export has %d lines, want 3:\n%s", strings.Count(first, "\n"), first)
	}
	// Calls to tools no upstream offers are kept, with their outcome.
	for _, want := range []string{`"tool":"not_in_catalog"`, `"outcome":"unknown_tool"`, `"tool":"grep|search"`, `"outcome":"denied"`} {
		if !strings.Contains(first, want) {
			t.Errorf("export lacks %s:\n%s", want, first)
		}
	}
	dir2 := t.TempDir()
	if _, stderr, code := runProfiler(t, "import", "--telemetry", dir2, writeTemp(t, "export.jsonl", first)); code != 0 {
		t.Fatal(stderr)
	}
	second, _, _ := runProfiler(t, "export", "--telemetry", dir2)
	if second != first {
		t.Fatalf("export -> import -> export changed:\n%s\nvs\n%s", first, second)
	}
	// Both directories at once: each session once per directory it is in.
	both, _, _ := runProfiler(t, "export", "--telemetry", dir, "--telemetry", dir2)
	if strings.Count(both, "\n") != 3 {
		t.Fatalf("two directories holding the same sessions: %d lines, want the 3 merged", strings.Count(both, "\n"))
	}

	for _, tc := range []struct {
		args []string
		want []string
		code int
	}{
		{[]string{"--since", "2026-03-02"}, []string{`"a/2"`, `"b/1"`}, 0},
		{[]string{"--until", "2026-03-02"}, []string{`"a/1"`}, 0},
		{[]string{"--since", "2026-03-01T10:00:00Z", "--until", "2026-03-05T09:00:00Z"}, []string{`"a/2"`}, 0},
		{[]string{"--since", "yesterday"}, nil, 2},
		{[]string{"--since", "2026-03-05", "--until", "2026-03-01"}, nil, 2},
	} {
		out, stderr, code := runProfiler(t, append([]string{"export", "--telemetry", dir}, tc.args...)...)
		if code != tc.code {
			t.Fatalf("export %v: exit %d, want %d: %s", tc.args, code, tc.code, stderr)
		}
		if code == 0 && strings.Count(out, "\n") != len(tc.want) {
			t.Errorf("export %v: %d sessions, want %v:\n%s", tc.args, strings.Count(out, "\n"), tc.want, out)
		}
		for _, w := range tc.want {
			if !strings.Contains(out, w) {
				t.Errorf("export %v lacks %s", tc.args, w)
			}
		}
	}
	if _, stderr, code := runProfiler(t, "export"); code != 2 || !strings.Contains(stderr, "--telemetry DIR is required") {
		t.Fatalf("export without --telemetry: exit %d %s", code, stderr)
	}
	if _, stderr, code := runProfiler(t, "export", "--telemetry", filepath.Join(dir, "missing")); code != 1 || !strings.Contains(stderr, "missing") {
		t.Fatalf("export of a missing directory: exit %d %s", code, stderr)
	}
}

func TestStatsCommand(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runProfiler(t, "import", "--telemetry", dir, writeTemp(t, "trace.jsonl", telemetryTrace)); code != 0 {
		t.Fatal(stderr)
	}
	for _, format := range []string{"table", "markdown"} {
		out, stderr, code := runProfiler(t, "stats", "--telemetry", dir, "--format", format)
		if code != 0 {
			t.Fatal(stderr)
		}
		golden.Assert(t, filepath.Join("testdata", "telemetry_stats."+format+".golden"), []byte(out))
	}
	md, _, _ := runProfiler(t, "stats", "--telemetry", dir, "--format", "markdown")
	if !strings.Contains(md, "| `grep\\|search` | 1 | 1 |") {
		t.Errorf("markdown does not escape | in a tool name:\n%s", md)
	}

	out, stderr, code := runProfiler(t, "stats", "--telemetry", dir, "--format", "json")
	if code != 0 {
		t.Fatal(stderr)
	}
	var st telemetry.Stats
	if err := json.Unmarshal([]byte(out), &st); err != nil {
		t.Fatal(err)
	}
	byName := func(rows []telemetry.StatRow) map[string]telemetry.StatRow {
		m := map[string]telemetry.StatRow{}
		for _, r := range rows {
			m[r.Name] = r
		}
		return m
	}
	tools, clients, outcomes := byName(st.Tools), byName(st.Clients), byName(st.Outcomes)
	switch {
	case st.Sessions != 3 || st.Calls != 6 || st.Dropped != 0 || st.Since == nil || !st.Since.Equal(mustTime("2026-03-01T09:00:00Z")):
		t.Errorf("totals: %+v", st)
	case tools["read_file"] != (telemetry.StatRow{Name: "read_file", Calls: 3, Sessions: 2}):
		t.Errorf("read_file: %+v", tools["read_file"])
	case clients["claude-code 2.1"] != (telemetry.StatRow{Name: "claude-code 2.1", Calls: 4, Sessions: 2}) || clients["cursor 1.0"] != (telemetry.StatRow{Name: "cursor 1.0", Calls: 2, Sessions: 1}):
		t.Errorf("clients: %+v", st.Clients)
	case outcomes["ok"].Calls != 2 || outcomes["denied"].Calls != 1 || outcomes["tool_error"].Calls != 1 || outcomes["unknown_tool"].Calls != 1 || outcomes["(not recorded)"].Calls != 1:
		t.Errorf("outcomes: %+v", st.Outcomes)
	}

	if _, stderr, code := runProfiler(t, "stats", "--telemetry", dir, "--format", "yaml"); code != 2 || !strings.Contains(stderr, "want table, markdown or json") {
		t.Fatalf("--format yaml: exit %d %s", code, stderr)
	}
}

func mustTime(s string) time.Time {
	var tt telemetryTime
	if err := tt.Set(s); err != nil {
		panic(err)
	}
	return tt.T
}

func TestCompactCommand(t *testing.T) {
	dir := t.TempDir()
	// One segment per import: an old one and a recent one.
	lines := strings.SplitAfter(telemetryTrace, "\n")
	for i, l := range []string{lines[0], lines[2]} {
		if _, stderr, code := runProfiler(t, "import", "--telemetry", dir, writeTemp(t, "t"+string(rune('0'+i))+".jsonl", l)); code != 0 {
			t.Fatal(stderr)
		}
	}
	if n := segmentCount(t, dir); n != 2 {
		t.Fatalf("%d segments, want 2", n)
	}
	out, stderr, code := runProfiler(t, "compact", "--telemetry", dir, "--before", "2026-03-03")
	if code != 0 || !strings.Contains(out, "removed 1 segment(s)") {
		t.Fatalf("compact: exit %d\n%s%s", code, out, stderr)
	}
	exported, _, _ := runProfiler(t, "export", "--telemetry", dir)
	if strings.Contains(exported, `"a/1"`) || !strings.Contains(exported, `"b/1"`) {
		t.Fatalf("after compact: %s", exported)
	}
	for _, args := range [][]string{{"compact", "--telemetry", dir}, {"compact", "--before", "2026-03-03"}, {"compact", "--telemetry", dir, "--before", "March"}} {
		if _, stderr, code := runProfiler(t, args...); code != 2 {
			t.Errorf("%v: exit %d, want 2 (%s)", args, code, stderr)
		}
	}
}

// TestReadersLeaveOutALiveSegment: while a server records, stats and export
// read the closed segments, leave the live one out and say so, and exit 0;
// compact never removes it, however old --before makes it look.
func TestReadersLeaveOutALiveSegment(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runProfiler(t, "import", "--telemetry", dir, writeTemp(t, "trace.jsonl", telemetryTrace)); code != 0 {
		t.Fatal(stderr)
	}
	rec, err := telemetry.OpenRecorder(dir, telemetry.RecorderOptions{Replica: "live"})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	rec.Session(telemetry.Session{ID: rec.NewSessionID(), Start: time.Now()})
	for h := rec.Health(); h.Segment == "" || h.Written < 1; h = rec.Health() {
		time.Sleep(time.Millisecond)
	}
	live := rec.Health().Segment
	for _, args := range [][]string{{"stats", "--format", "json"}, {"export"}} {
		out, stderr, code := runProfiler(t, append(args, "--telemetry", dir)...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		if want := args[0] + ": left out " + live + ": a running server writes it"; !strings.Contains(stderr, want) {
			t.Errorf("%v: stderr lacks %q:\n%s", args, want, stderr)
		}
		if args[0] == "export" && strings.Count(out, "\n") != 3 {
			t.Errorf("export: %d sessions, want the 3 imported:\n%s", strings.Count(out, "\n"), out)
		}
	}
	out, stderr, code := runProfiler(t, "compact", "--telemetry", dir, "--before", "2999-01-01")
	if code != 0 || !strings.Contains(out, "removed 1 segment(s)") {
		t.Fatalf("compact: exit %d\n%s%s", code, out, stderr)
	}
	if _, err := os.Stat(live); err != nil {
		t.Fatalf("compact removed the live segment: %v", err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	if segs := segmentCount(t, dir); segs != 1 {
		t.Errorf("%d segments after the recorder closed, want its one", segs)
	}
}
