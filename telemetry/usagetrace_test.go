package telemetry

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"time"
)

// traceEdgeLines are lines the fast scanner must either decode exactly as
// DecodeTrace does or hand to it.
var traceEdgeLines = []string{
	`{"session":"s1","client":{"name":"c","version":"1"},"started":"2025-08-20T09:43:42Z","calls":[{"tool":"cd"},{"tool":"mkdir","ok":true}]}`,
	`{"calls": [{"tool": "b"}, {"tool": "a", "ok": false}, {"tool": "b"}], "client": {"name": "gpt-4o", "version": ""}, "session": "s2"}`,
	`{"session":"s3","calls":[]}`,
	`{"session":"s4","profile":"core","started":"2025-08-20T09:43:42.123+02:00","calls":[{"tool":"x","outcome":"denied"},{"tool":"y","outcome":"unknown_tool"}]}`,
	`{"session":"s5","calls":[{"tool":"a","arguments":{"path":"/tmp","n":3,"deep":[1,{"k":"v"}]}}]}`,
	`{"session":"s6","calls":[{"tool":"caf\u00e9"}]}`,
	`{"Session":"s7","calls":[{"tool":"a"}]}`,
	`{"session":"s8","started":null,"profile":null,"client":null,"calls":null}`,
	`{"session":"s9","extra":1,"calls":[{"tool":"a"}]}`,
	`  {"session":"s11","calls":[{"tool":"a","ok":null,"outcome":null}]}  `,
	`{"session":"s12","calls":[{"tool":"a\"b"}]}`,
	`{"session":"s13","started":"2025-08-20T09:43:42","calls":[{"tool":"a"}]}`,
	`{"session":"s14","started":"2025-08-20T09:43:42.5","calls":[{"tool":"caf\u00e9"}]}`,
}

// generatedTrace writes n trace lines in the shape exports and the scale
// generator (bench/sessiongen) write, over tools tools, deterministically
// from seed; with variety, some calls carry "ok" or "outcome" and some
// sessions a profile.
func generatedTrace(b *bytes.Buffer, seed uint64, n, tools int, variety bool) {
	r := rand.New(rand.NewPCG(seed, 0))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	outcomes := Outcomes()
	for i := range n {
		at := start.Add(time.Duration(i) * time.Second)
		ts := TraceSession{Session: fmt.Sprintf("gen/%d", i), Client: TraceClient{Name: "sessiongen", Version: "1"}, Started: &at, Calls: []TraceCall{}}
		for range r.IntN(6) {
			c := TraceCall{Tool: fmt.Sprintf("server%02d__tool_%03d", r.IntN(3), r.IntN(tools))}
			if variety {
				switch r.IntN(4) {
				case 0:
					c.OK = new(r.IntN(2) == 0)
				case 1:
					c.Outcome = string(outcomes[r.IntN(len(outcomes))])
				}
			}
			ts.Calls = append(ts.Calls, c)
		}
		if variety && r.IntN(5) == 0 {
			ts.Profile = "core"
		}
		line, _ := json.Marshal(ts)
		b.Write(append(line, '\n'))
	}
}

func TestReadTraceUsageMatchesDecodeTrace(t *testing.T) {
	var b bytes.Buffer
	for _, l := range traceEdgeLines {
		b.WriteString(l + "\n")
	}
	b.WriteString("\n")
	generatedTrace(&b, 3, 300, 40, false)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(path, b.Bytes(), 0o644)
	got, st, err := ReadTraceUsage(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := DecodeTrace(bytes.NewReader(b.Bytes()), path, false)
	if err != nil {
		t.Fatal(err)
	}
	want := UsageFromTrace(ts)
	if len(got) != len(want) {
		t.Fatalf("%d sessions, telemetry reads %d", len(got), len(want))
	}
	unknown, noZone := 0, 0
	for _, t := range ts {
		if t.StartedNoZone {
			noZone++
		}
	}
	if st.NoZone != noZone || noZone != 2 {
		t.Errorf("starts without a zone %d, telemetry %d, want 2", st.NoZone, noZone)
	}
	for i, u := range want {
		g := got[i]
		unknown += u.Unknown
		if !slices.Equal(g.Tools, u.Tools) || g.Calls != u.Calls || !g.Session.Start.Equal(u.Session.Start) || g.Session.Profile != u.Session.Profile {
			t.Errorf("session %s: got %+v, telemetry %+v", u.Session.ID, g, u)
		}
	}
	// A denied call is demand: its tool is in the session's set.
	if s4 := got[3]; !slices.Contains(s4.Tools, "x") || s4.Session.Profile != "core" {
		t.Errorf("denied call not counted as demand: %+v", s4)
	}
	if st.UnknownOutcomes != unknown || unknown != 1 {
		t.Errorf("unknown outcomes %d, telemetry %d", st.UnknownOutcomes, unknown)
	}
}

// TestReadTraceUsageIsUsageFromTrace: whichever path decodes a line, the
// usage is all of UsageFromTrace's (client, denied and unknown calls
// included), and the per-tool call counts are the trace's.
func TestReadTraceUsageIsUsageFromTrace(t *testing.T) {
	var b bytes.Buffer
	for _, l := range traceEdgeLines {
		b.WriteString(l + "\n")
	}
	generatedTrace(&b, 5, 500, 30, true)
	path := filepath.Join(t.TempDir(), "t.jsonl")
	os.WriteFile(path, b.Bytes(), 0o644)
	got, st, err := ReadTraceUsage(context.Background(), path, false)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := DecodeTrace(bytes.NewReader(b.Bytes()), path, false)
	if err != nil {
		t.Fatal(err)
	}
	want := UsageFromTrace(ts)
	if len(got) != len(want) {
		t.Fatalf("%d sessions, UsageFromTrace %d", len(got), len(want))
	}
	denied := 0
	for i := range want {
		denied += want[i].Denied
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("line %d: got %+v, want %+v", i+1, got[i], want[i])
		}
	}
	if denied == 0 {
		t.Error("no denied call in the test data")
	}
	calls := map[string]int{}
	for _, s := range ts {
		for _, c := range s.Calls {
			calls[c.Tool]++
		}
	}
	if !reflect.DeepEqual(st.ToolCalls, calls) {
		t.Errorf("tool calls %v, want %v", st.ToolCalls, calls)
	}
}

// TestScanLineFastPath: the common shapes are decoded without the
// reflection-based decoder (otherwise a million sessions take too long),
// and unusual ones are left to it.
func TestScanLineFastPath(t *testing.T) {
	fast := map[int]bool{0: true, 1: true, 2: true, 3: true, 7: true, 9: true, 11: true}
	for i, l := range traceEdgeLines {
		_, ok := scanLine(bytes.TrimSpace([]byte(l)), newInterner())
		if ok != fast[i] {
			t.Errorf("line %d: fast path %v, want %v: %s", i, ok, fast[i], l)
		}
	}
	var b bytes.Buffer
	generatedTrace(&b, 1, 50, 20, false)
	for _, l := range strings.Split(strings.TrimSpace(b.String()), "\n") {
		if _, ok := scanLine([]byte(l), newInterner()); !ok {
			t.Fatalf("generated line not on the fast path: %s", l)
		}
	}
}

func TestReadTraceUsageErrors(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name, content string
		skipBad       bool
		want          string
		sessions      int
	}{
		{"malformed", "{\"session\":\"a\",\"calls\":[]}\n{oops\n", false, "t.jsonl:2:", 0},
		{"missing tool", "{\"session\":\"a\",\"calls\":[{\"ok\":true}]}\n", false, `calls[0]: missing "tool"`, 0},
		{"bad outcome", "{\"session\":\"a\",\"calls\":[{\"tool\":\"x\",\"outcome\":\"maybe\"}]}\n", false, `outcome "maybe"`, 0},
		{"client name not a string", "{\"session\":\"a\",\"client\":{\"name\":true},\"calls\":[]}\n", false, "cannot unmarshal bool", 0},
		{"duplicate id", "{\"session\":\"a\",\"calls\":[]}\n{\"session\":\"a\",\"calls\":[]}\n", false, `t.jsonl:2: session "a" already on line 1`, 0},
		{"skip bad", "{\"session\":\"a\",\"calls\":[]}\n{oops\n{\"session\":\"b\",\"calls\":[]}\n", true, "", 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "t.jsonl")
			os.WriteFile(path, []byte(tt.content), 0o644)
			got, st, err := ReadTraceUsage(context.Background(), path, tt.skipBad)
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("err = %v, want %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != tt.sessions || len(st.Skipped) != 1 {
				t.Errorf("sessions %d skipped %v", len(got), st.Skipped)
			}
			var le *LineError
			if !errors.As(st.Skipped[0], &le) || le.Line != 2 {
				t.Errorf("skipped %v, want line 2", st.Skipped[0])
			}
		})
	}
	if _, _, err := ReadTraceUsage(context.Background(), filepath.Join(dir, "none.jsonl"), false); err == nil || !strings.Contains(err.Error(), "none.jsonl") {
		t.Errorf("missing file: %v", err)
	}
}

// sessionLine is a valid trace line of exactly n bytes (n >= 60), its
// client name padded with z.
func sessionLine(id string, n int) string {
	head := `{"session":"` + id + `","calls":[],"client":{"name":"`
	tail := `"}}`
	return head + strings.Repeat("z", n-len(head)-len(tail)) + tail
}

// A line at or past the bound ends the read as it ends DecodeTrace's: the
// same error, a *LineError with the line's number, with or without skipBad;
// a line just under it is read. Checked at a small bound on both sides of
// it, with and without a final newline and with CRLF.
func TestReadTraceUsageLineBound(t *testing.T) {
	const max = 100
	first := sessionLine("a", 60) + "\n"
	tests := []struct {
		name, content string
		tooLong       int // line number; 0: read
	}{
		{"one under, newline", first + sessionLine("b", max-1) + "\n", 0},
		{"one under, last line", first + sessionLine("b", max-1), 0},
		{"at the bound, newline", first + sessionLine("b", max) + "\n", 2},
		{"at the bound, last line", first + sessionLine("b", max), 2},
		{"one over", first + sessionLine("b", max+1) + "\n" + sessionLine("c", 60) + "\n", 2},
		{"CRLF one under", first + sessionLine("b", max-2) + "\r\n", 0},
		{"CRLF at the bound", first + sessionLine("b", max-1) + "\r\n", 2},
		{"after a blank line", first + "\n" + sessionLine("b", 3*max) + "\n", 3},
	}
	for _, tt := range tests {
		for _, skipBad := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/skipBad=%v", tt.name, skipBad), func(t *testing.T) {
				path := filepath.Join(t.TempDir(), "t.jsonl")
				if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
					t.Fatal(err)
				}
				got, st, err := readTraceUsage(context.Background(), path, skipBad, max)
				ts, _, derr := decodeTrace(strings.NewReader(tt.content), path, skipBad, max)
				if fmt.Sprint(err) != fmt.Sprint(derr) {
					t.Fatalf("error %v, DecodeTrace's %v", err, derr)
				}
				if len(st.Skipped) != 0 {
					t.Errorf("skipped %v", st.Skipped)
				}
				if tt.tooLong == 0 {
					if err != nil || len(got) != 2 || len(ts) != 2 {
						t.Fatalf("sessions %d (DecodeTrace %d), err %v", len(got), len(ts), err)
					}
					return
				}
				var le *LineError
				if !errors.As(err, &le) || le.File != path || le.Line != tt.tooLong ||
					err.Error() != fmt.Sprintf("read trace %s:%d: a line longer than %d bytes (one session per line)", path, tt.tooLong, max) {
					t.Fatalf("error %v, want a LineError for line %d", err, tt.tooLong)
				}
				if got != nil {
					t.Errorf("sessions returned with the error: %d", len(got))
				}
			})
		}
	}
}

// At the real bound: a 70 MiB second line is one LineError for line 2, as
// DecodeTrace reports it, not skips of pieces of it.
func TestReadTraceUsageLongLine(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.jsonl")
	content := sessionLine("a", 60) + "\n" + sessionLine("b", 70<<20) + "\n"
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	_, _, derr := DecodeTrace(strings.NewReader(content), path, true)
	for _, skipBad := range []bool{false, true} {
		_, st, err := ReadTraceUsage(context.Background(), path, skipBad)
		var le *LineError
		if !errors.As(err, &le) || le.Line != 2 || derr == nil || err.Error() != derr.Error() || len(st.Skipped) != 0 {
			t.Errorf("skipBad=%v: error %v, skipped %v; want DecodeTrace's %v", skipBad, err, st.Skipped, derr)
		}
	}
}
