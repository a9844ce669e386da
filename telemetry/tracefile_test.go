package telemetry

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestCallsOutside(t *testing.T) {
	s := TraceSession{Calls: []TraceCall{{Tool: "read"}, {Tool: "gone"}, {Tool: "read"}, {Tool: "other"}}}
	for _, c := range []struct {
		name  string
		known map[string]bool
		want  int
	}{
		{"no catalog names", nil, 4},
		{"some known", map[string]bool{"read": true}, 2},
		{"all known", map[string]bool{"read": true, "gone": true, "other": true}, 0},
	} {
		if got := s.CallsOutside(c.known); got != c.want {
			t.Errorf("%s: CallsOutside = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestReadTraceFile(t *testing.T) {
	dir := t.TempDir()
	good := `{"session": "a", "calls": [{"tool": "t1"}]}` + "\n"
	bad := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(bad, []byte(good+"not json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, path string
		skipBad    bool
		wantN      int
		wantErr    string
		wantLog    string
	}{
		{name: "malformed line", path: bad, wantErr: "check: 1 malformed trace line(s), nothing checked (first " + bad + ":2:", wantLog: "check: " + bad + ":2:"},
		{name: "malformed line skipped", path: bad, skipBad: true, wantN: 1, wantLog: "check: skipped " + bad + ":2:"},
		{name: "missing file", path: filepath.Join(dir, "absent.jsonl"), wantErr: "check: open trace: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			sessions, err := ReadTraceFile(c.path, "check", c.skipBad, &log, "nothing checked", "check the rest")
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("ReadTraceFile error = %v, want one starting %q", err, c.wantErr)
				}
			} else if err != nil || len(sessions) != c.wantN {
				t.Fatalf("ReadTraceFile = %d sessions, %v; want %d", len(sessions), err, c.wantN)
			}
			if !strings.HasPrefix(log.String(), c.wantLog) {
				t.Errorf("ReadTraceFile said %q, want it to start %q", log.String(), c.wantLog)
			}
		})
	}
}
