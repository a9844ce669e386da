package telemetry

import (
	"bytes"
	"encoding/binary"
	"testing"
	"time"
)

// TestOutcomeCodes: every outcome a call may carry has its own stored code
// that decodes back to it; the codes are the stored format, so they must
// not move.
func TestOutcomeCodes(t *testing.T) {
	// The numbers are the file format, written out here rather than taken
	// from the constants so that renumbering one fails.
	pinned := []struct {
		o     Outcome
		code  byte
		named byte
	}{
		{"", 0, codeNone},
		{OutcomeOK, 1, codeOK},
		{OutcomeToolError, 2, codeToolError},
		{OutcomeUpstreamError, 3, codeUpstreamError},
		{OutcomeDenied, 4, codeDenied},
		{OutcomeUnknownTool, 5, codeUnknownTool},
		{OutcomeCancelled, 6, codeCancelled},
	}
	if all := append([]Outcome{""}, Outcomes()...); len(all) != len(pinned) {
		t.Fatalf("Outcomes() lists %d outcomes and no outcome, %d are pinned here: pin the new one's code", len(all), len(pinned))
	}
	seen := map[byte]Outcome{}
	for i, p := range pinned {
		if p.named != p.code {
			t.Errorf("the constant for %q is %d, want %d (stored codes must not move)", p.o, p.named, p.code)
		}
		if code := outcomeCode(p.o); code != p.code {
			t.Errorf("outcome %q has code %d, want %d (stored codes must not move)", p.o, code, p.code)
		}
		if i > 0 && Outcomes()[i-1] != p.o {
			t.Errorf("Outcomes()[%d] = %q, want %q: Outcomes lists them in code order", i-1, Outcomes()[i-1], p.o)
		}
		if prev, dup := seen[p.code]; dup {
			t.Errorf("outcomes %q and %q share code %d", prev, p.o, p.code)
		}
		seen[p.code] = p.o
		if back, ok := outcomeOfCode(p.code); !ok || back != p.o {
			t.Errorf("code %d decodes to %q, %v; want %q", p.code, back, ok, p.o)
		}
	}
	if codeOther != 0xff {
		t.Errorf("codeOther = %#x, want 0xff (stored codes must not move)", codeOther)
	}
	if code := outcomeCode("something_new"); code != codeOther {
		t.Errorf("an unknown outcome has code %d, want codeOther (stored inline)", code)
	}
	for _, code := range []byte{7, codeOther} {
		if _, ok := outcomeOfCode(code); ok {
			t.Errorf("code %d decodes; want unknown", code)
		}
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

// TestDecodeCallUsage: the usage read's decoder agrees with decodeCall on
// every call record and every prefix of one (a record cut short): the
// same session and tool numbers, the same denied and unknown_tool
// verdicts, and an error exactly where decodeCall fails before the
// fields after the outcome.
func TestDecodeCallUsage(t *testing.T) {
	k := timeKey(time.Unix(1, 0), 0)
	var calls []Call
	for _, o := range append([]Outcome{"", "something_new", "x"}, Outcomes()...) {
		calls = append(calls, Call{Seq: 3, Duration: 5, Outcome: o, RequestBytes: 7, ResponseBytes: 9})
	}
	calls = append(calls,
		Call{Seq: 1 << 40, Duration: 90 * time.Second, Outcome: OutcomeDenied}, // multi-byte varints
		Call{Seq: 127, Duration: 128, Outcome: OutcomeUnknownTool, Search: true},
	)
	var records [][]byte
	for i, c := range calls {
		for _, nums := range [][2]uint32{{1, 2}, {200, 70000}} {
			b := appendCall(nil, nums[0], nums[1]+uint32(i), &c)
			for n := 0; n <= len(b); n++ {
				records = append(records, b[:n])
			}
		}
	}
	records = append(records,
		[]byte{1, 1, 2, 5, 7},            // unknown outcome code
		[]byte{1, 1, 2, 5, 0xff, 9, 'a'}, // inline outcome longer than the record
		bytes.Repeat([]byte{0xff}, 12),   // a varint past 64 bits
	)
	for _, b := range records {
		want, wsn, wtn, werr := decodeCall(k, b)
		// decodeCall reads past the outcome; the fields after it are not
		// the usage read's, so its verdict is the record's up to there.
		head := recordReader{b: b}
		head.uvarint()
		head.uvarint()
		head.uvarint()
		head.uvarint()
		head.outcome()
		sn, tn, denied, unknown, err := decodeCallUsage(b)
		if (err != nil) != (head.err != nil) {
			t.Errorf("record %v: error %v, want %v", b, err, head.err)
			continue
		}
		if err != nil {
			continue
		}
		if werr == nil && (sn != wsn || tn != wtn) {
			t.Errorf("record %v: session %d tool %d, want %d %d", b, sn, tn, wsn, wtn)
		}
		if denied != (want.Outcome == OutcomeDenied) || unknown != (want.Outcome == OutcomeUnknownTool) {
			t.Errorf("record %v (outcome %q): denied %v unknown %v", b, want.Outcome, denied, unknown)
		}
	}
}

// TestCallNumbersBeyond32Bits: a call record whose session or tool number
// does not fit 32 bits is refused by both decoders rather than read as the
// session or tool its low 32 bits name.
func TestCallNumbersBeyond32Bits(t *testing.T) {
	k := timeKey(time.Unix(1, 0), 0)
	record := func(snum, tool uint64) []byte {
		b := binary.AppendUvarint(nil, snum)
		b = binary.AppendUvarint(b, 3) // seq
		b = binary.AppendUvarint(b, tool)
		b = binary.AppendUvarint(b, 5) // duration
		b = append(b, outcomeCode(OutcomeDenied))
		b = binary.AppendUvarint(b, 7) // request bytes
		return binary.AppendUvarint(b, 9)
	}
	for _, c := range []struct {
		name        string
		snum, tool  uint64
		wantRefused bool
	}{
		{"both fit", 1<<32 - 1, 1<<32 - 1, false},
		{"session beyond", 1<<32 + 1, 2, true},
		{"tool beyond", 1, 1<<40 + 2, true},
	} {
		b := record(c.snum, c.tool)
		_, sn, tn, err := decodeCall(k, b)
		if (err != nil) != c.wantRefused || err == nil && (uint64(sn) != c.snum || uint64(tn) != c.tool) {
			t.Errorf("%s: decodeCall = session %d tool %d, %v; want refused %v", c.name, sn, tn, err, c.wantRefused)
		}
		sn, tn, _, _, err = decodeCallUsage(b)
		if (err != nil) != c.wantRefused || err == nil && (uint64(sn) != c.snum || uint64(tn) != c.tool) {
			t.Errorf("%s: decodeCallUsage = session %d tool %d, %v; want refused %v", c.name, sn, tn, err, c.wantRefused)
		}
	}
}
