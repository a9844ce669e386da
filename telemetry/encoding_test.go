package telemetry

import (
	"bytes"
	"testing"
	"time"
)

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

// TestCallSearchFlag: a call reached through search keeps its mark, and a
// call without it encodes to the same bytes as before the mark existed
// (seven varint fields), so older readers and records agree.
func TestCallSearchFlag(t *testing.T) {
	k := timeKey(time.Unix(1, 0), 0)
	for _, c := range []Call{
		{Seq: 3, Duration: 5, Outcome: OutcomeOK, RequestBytes: 7, ResponseBytes: 9},
		{Seq: 3, Duration: 5, Outcome: OutcomeOK, RequestBytes: 7, ResponseBytes: 9, Search: true},
	} {
		b := appendCall(nil, 1, 2, &c)
		got, snum, tool, err := decodeCall(k, b)
		if err != nil || snum != 1 || tool != 2 || got.Search != c.Search || got.ResponseBytes != 9 {
			t.Fatalf("decode %+v: %+v %d %d %v", c, got, snum, tool, err)
		}
		old := []byte{1, 3, 2, 5, 1, 7, 9} // the layout without flags
		if !c.Search && !bytes.Equal(b, old) {
			t.Fatalf("unmarked call encodes to %v, want %v", b, old)
		}
		if c.Search && !bytes.Equal(b[:len(old)], old) {
			t.Fatalf("marked call's first fields %v, want %v", b[:len(old)], old)
		}
	}
}
