package telemetry

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// FuzzDecodeTrace: any JSON Lines input decodes or reports its bad lines
// naming the file; with skipBad the good sessions are still returned and
// every bad line is reported; the result never panics when turned into
// usage.
func FuzzDecodeTrace(f *testing.F) {
	for _, p := range []string{"testdata/sessions.jsonl", "testdata/sessions.export.jsonl"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte(`{"session": "a", "calls": [{"tool": "x", "outcome": "nope"}]}` + "\n{\n"))
	f.Add([]byte(`{"session": "a"}` + "\n" + `{"session": "a"}` + "\n"))
	const name = "fuzz.jsonl"
	f.Fuzz(func(t *testing.T, data []byte) {
		strict, bad, err := DecodeTrace(bytes.NewReader(data), name, false)
		if err != nil && !strings.Contains(err.Error(), name) {
			t.Fatalf("error does not name the file: %v", err)
		}
		if err == nil && len(bad) > 0 {
			t.Fatalf("strict decode accepted %d bad lines", len(bad))
		}
		for _, le := range bad {
			if le.File != name || le.Line < 1 {
				t.Fatalf("bad line not located: %+v", le)
			}
		}
		lenient, badLenient, err := DecodeTrace(bytes.NewReader(data), name, true)
		if err != nil {
			return // an unreadable input (such as an over-long line)
		}
		if len(badLenient) == 0 && len(lenient) != len(strict) {
			t.Fatalf("no bad lines, but lenient gives %d sessions and strict %d", len(lenient), len(strict))
		}
		UsageFromTrace(lenient)
	})
}
