package telemetry

import "testing"

// TestOutcomeCodes: every outcome a call may carry has its own stored code
// that decodes back to it; the codes are the stored format, so they must
// not move.
func TestOutcomeCodes(t *testing.T) {
	seen := map[byte]Outcome{}
	for i, o := range append([]Outcome{""}, Outcomes()...) {
		code := outcomeCode(o)
		if code != byte(i) {
			t.Errorf("outcome %q has code %d, want %d (stored codes must not move)", o, code, i)
		}
		if prev, dup := seen[code]; dup {
			t.Errorf("outcomes %q and %q share code %d", prev, o, code)
		}
		seen[code] = o
		if back, ok := outcomeOfCode(code); !ok || back != o {
			t.Errorf("code %d decodes to %q, %v; want %q", code, back, ok, o)
		}
	}
	if code := outcomeCode("something_new"); code != outcomeOther {
		t.Errorf("an unknown outcome has code %d, want outcomeOther (stored inline)", code)
	}
	if _, ok := outcomeOfCode(7); ok {
		t.Error("code 7 decodes; want unknown")
	}
}
