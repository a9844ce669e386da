package telemetry

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"time"
)

// Record encodings. Values are varint-packed: a call is typically 10-16
// bytes, because session ids and tool names are replaced by numbers that are
// local to the segment (buckets session_names and tools hold the names).

// Outcome codes: the byte a call record stores for its outcome. The values
// are the file format, read back from segments any build wrote: a code
// never changes or is reused, and a new outcome takes the next free one
// (Outcomes lists them in code order). Each is written as a number, not by
// iota, so that reordering the list cannot renumber them; TestOutcomeCodes
// pins them.
const (
	codeNone          byte = 0 // no outcome
	codeOK            byte = 1
	codeToolError     byte = 2
	codeUpstreamError byte = 3
	codeDenied        byte = 4
	codeUnknownTool   byte = 5
	codeCancelled     byte = 6
	// codeOther marks an outcome outside the known set, its string stored
	// inline after the code.
	codeOther byte = 0xff
)

// outcomeCode is o's stored code: codeOther for an outcome outside the
// known set.
func outcomeCode(o Outcome) byte {
	switch o {
	case "":
		return codeNone
	case OutcomeOK:
		return codeOK
	case OutcomeToolError:
		return codeToolError
	case OutcomeUpstreamError:
		return codeUpstreamError
	case OutcomeDenied:
		return codeDenied
	case OutcomeUnknownTool:
		return codeUnknownTool
	case OutcomeCancelled:
		return codeCancelled
	}
	return codeOther
}

var errShortRecord = errors.New("record ends early")

func nanos(t time.Time) uint64 {
	n := t.UnixNano()
	if n < 0 {
		return 0
	}
	return uint64(n)
}

func timeKey(t time.Time, counter uint32) []byte {
	k := make([]byte, 12)
	binary.BigEndian.PutUint64(k, nanos(t))
	binary.BigEndian.PutUint32(k[8:], counter)
	return k
}

func appendTimeKey(b []byte, t time.Time, counter uint32) []byte {
	b = binary.BigEndian.AppendUint64(b, nanos(t))
	return binary.BigEndian.AppendUint32(b, counter)
}

func keyTime(k []byte) time.Time {
	return time.Unix(0, int64(binary.BigEndian.Uint64(k))).UTC()
}

func num4(n uint32) []byte { return binary.BigEndian.AppendUint32(make([]byte, 0, 4), n) }

func appendString(b []byte, s string) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

func appendCall(b []byte, snum, tool uint32, c *Call) []byte {
	b = binary.AppendUvarint(b, uint64(snum))
	b = binary.AppendUvarint(b, c.Seq)
	b = binary.AppendUvarint(b, uint64(tool))
	b = binary.AppendUvarint(b, uint64(max(c.Duration, 0)))
	code := outcomeCode(c.Outcome)
	b = append(b, code)
	if code == codeOther {
		b = appendString(b, string(c.Outcome))
	}
	b = binary.AppendUvarint(b, uint64(max(c.RequestBytes, 0)))
	b = binary.AppendUvarint(b, uint64(max(c.ResponseBytes, 0)))
	// Trailing flags, written only when set: records without them read as
	// before, and readers before them ignore the trailing bytes.
	if c.Search {
		b = binary.AppendUvarint(b, callSearch)
	}
	return b
}

// Call flags, a trailing uvarint absent when zero.
const callSearch = 1 << 0

// recordReader decodes varint-packed fields, remembering the first error.
type recordReader struct {
	b      []byte
	err    error
	intern map[string]string // when set, repeated strings share one allocation
}

// maxInterned bounds an intern table: session fields such as client name
// repeat across sessions, but a table must not grow with the data.
const maxInterned = 4096

func (r *recordReader) uvarint() uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = errShortRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) varint() int64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Varint(r.b)
	if n <= 0 {
		r.err = errShortRecord
		return 0
	}
	r.b = r.b[n:]
	return v
}

func (r *recordReader) byte() byte {
	if r.err != nil || len(r.b) == 0 {
		r.err = errShortRecord
		return 0
	}
	c := r.b[0]
	r.b = r.b[1:]
	return c
}

func (r *recordReader) string() string {
	n := r.uvarint()
	if r.err != nil || n == 0 {
		return "" // most of a session's optional fields: no lookup
	}
	if uint64(len(r.b)) < n {
		r.err = errShortRecord
		return ""
	}
	raw := r.b[:n]
	r.b = r.b[n:]
	if r.intern == nil {
		return string(raw)
	}
	if s, ok := r.intern[string(raw)]; ok { // no allocation for the lookup
		return s
	}
	s := string(raw)
	if len(r.intern) < maxInterned {
		r.intern[s] = s
	}
	return s
}

// outcomeOfCode is the inverse of outcomeCode for the known outcomes; a
// switch, not a table, because it runs once per call record read.
func outcomeOfCode(code byte) (Outcome, bool) {
	switch code {
	case codeNone:
		return "", true
	case codeOK:
		return OutcomeOK, true
	case codeToolError:
		return OutcomeToolError, true
	case codeUpstreamError:
		return OutcomeUpstreamError, true
	case codeDenied:
		return OutcomeDenied, true
	case codeUnknownTool:
		return OutcomeUnknownTool, true
	case codeCancelled:
		return OutcomeCancelled, true
	}
	return "", false
}

func (r *recordReader) outcome() Outcome {
	code := r.byte()
	if code == codeOther {
		return Outcome(r.string())
	}
	o, ok := outcomeOfCode(code)
	if !ok && r.err == nil {
		r.err = fmt.Errorf("unknown outcome code %d", code)
	}
	return o
}

// decodeCallUsage decodes of a call value what a usage read needs: its
// session and tool numbers, and whether it was denied or named an unknown
// tool. It fails where decodeCall would on the fields up to the outcome,
// and allocates nothing, an inline outcome included: it runs once per call
// record of every segment read.
func decodeCallUsage(v []byte) (snum, tool uint32, denied, unknown bool, err error) {
	var f [4]uint64 // session, seq, tool, duration
	i := 0
	for k := range f {
		// One byte, the usual size of a number local to the segment,
		// needs no call.
		if i < len(v) && v[i] < 0x80 {
			f[k] = uint64(v[i])
			i++
			continue
		}
		x, n := binary.Uvarint(v[i:])
		if n <= 0 {
			return 0, 0, false, false, errShortRecord
		}
		f[k], i = x, i+n
	}
	if i >= len(v) {
		return 0, 0, false, false, errShortRecord
	}
	if f[0] > math.MaxUint32 || f[2] > math.MaxUint32 {
		return 0, 0, false, false, errWideNumber
	}
	code := v[i]
	switch code {
	case codeDenied:
		denied = true
	case codeUnknownTool:
		unknown = true
	case codeOther:
		n, m := binary.Uvarint(v[i+1:])
		j := i + 1 + m
		if m <= 0 || uint64(len(v)-j) < n {
			return 0, 0, false, false, errShortRecord
		}
		o := string(v[j : j+int(n)]) // compared, not kept: no allocation
		denied, unknown = o == string(OutcomeDenied), o == string(OutcomeUnknownTool)
	default:
		if _, ok := outcomeOfCode(code); !ok {
			return 0, 0, false, false, fmt.Errorf("unknown outcome code %d", code)
		}
	}
	return uint32(f[0]), uint32(f[2]), denied, unknown, nil
}

// decodeCall decodes a call value; Session and Tool are left to the caller,
// which maps the returned numbers to names.
func decodeCall(k, v []byte) (c Call, snum, tool uint32, err error) {
	r := recordReader{b: v}
	s := r.uvarint()
	c.Seq = r.uvarint()
	t := r.uvarint()
	c.Duration = time.Duration(r.uvarint())
	c.Outcome = r.outcome()
	c.RequestBytes = int(r.uvarint())
	c.ResponseBytes = int(r.uvarint())
	if r.err == nil && len(r.b) > 0 {
		c.Search = r.uvarint()&callSearch != 0
	}
	c.Start = keyTime(k)
	if r.err == nil && (s > math.MaxUint32 || t > math.MaxUint32) {
		r.err = errWideNumber
	}
	return c, uint32(s), uint32(t), r.err
}

// errWideNumber refuses a call record whose session or tool number does
// not fit the uint32 every writer gives it: cut to 32 bits it would name
// another session or tool.
var errWideNumber = errors.New("call record: session or tool number beyond 32 bits")

const (
	sessionExploration = 1 << iota
	sessionEnded
	sessionReadOnly // absent from records written before it: not read-only
	// The attribution rule of a sessionless usage session; neither bit
	// (every record written before them) is AttributionConnection. Readers
	// that predate them ignore the bits.
	sessionByTrace
	sessionByCaller
)

// appendSession encodes a session record; its key holds the start time and
// session number, and the id is in session_names.
func appendSession(b []byte, s *Session) []byte {
	var flags byte
	if s.Exploration {
		flags |= sessionExploration
	}
	if s.ReadOnly {
		flags |= sessionReadOnly
	}
	if !s.End.IsZero() {
		flags |= sessionEnded
	}
	switch s.Attribution {
	case AttributionTrace:
		flags |= sessionByTrace
	case AttributionCaller:
		flags |= sessionByCaller
	}
	b = append(b, flags)
	if !s.End.IsZero() {
		b = binary.AppendVarint(b, s.End.UnixNano())
	}
	for _, f := range []string{s.Transport, s.ClientName, s.ClientVersion, s.ProtocolVersion, s.Profile, s.ServerVersion, s.CatalogHash} {
		b = appendString(b, f)
	}
	b = binary.AppendUvarint(b, uint64(max(s.ToolsListCalls, 0)))
	b = binary.AppendUvarint(b, uint64(max(s.ToolsListPages, 0)))
	b = binary.AppendUvarint(b, uint64(len(s.Switches)))
	for _, sw := range s.Switches {
		b = binary.AppendVarint(b, sw.Time.UnixNano())
		b = appendString(b, sw.Group)
	}
	if s.Trace != "" {
		b = appendString(b, s.Trace) // absent from records written before it
	}
	return b
}

// decodeSession decodes a session record; the caller sets ID from the
// returned session number.
func decodeSession(k, v []byte, intern map[string]string) (s Session, snum uint32, err error) {
	if len(k) != 12 {
		return s, 0, fmt.Errorf("session key has %d bytes, want 12", len(k))
	}
	r := recordReader{b: v, intern: intern}
	flags := r.byte()
	s.Exploration = flags&sessionExploration != 0
	s.ReadOnly = flags&sessionReadOnly != 0
	switch {
	case flags&sessionByTrace != 0:
		s.Attribution = AttributionTrace
	case flags&sessionByCaller != 0:
		s.Attribution = AttributionCaller
	}
	if flags&sessionEnded != 0 {
		s.End = time.Unix(0, r.varint()).UTC()
	}
	for _, f := range []*string{&s.Transport, &s.ClientName, &s.ClientVersion, &s.ProtocolVersion, &s.Profile, &s.ServerVersion, &s.CatalogHash} {
		*f = r.string()
	}
	s.ToolsListCalls = int(r.uvarint())
	s.ToolsListPages = int(r.uvarint())
	n := r.uvarint()
	for i := uint64(0); i < n && r.err == nil; i++ {
		t := time.Unix(0, r.varint()).UTC()
		s.Switches = append(s.Switches, Switch{Time: t, Group: r.string()})
	}
	if r.err == nil && len(r.b) > 0 {
		s.Trace = r.string()
	}
	s.Start = keyTime(k)
	return s, binary.BigEndian.Uint32(k[8:]), r.err
}

func appendSwitch(b []byte, snum uint32, sw *Switch) []byte {
	b = binary.AppendUvarint(b, uint64(snum))
	return appendString(b, sw.Group)
}

func decodeSwitch(k, v []byte) (sw Switch, snum uint32, err error) {
	r := recordReader{b: v}
	snum = uint32(r.uvarint())
	sw.Group = r.string()
	sw.Time = keyTime(k)
	return sw, snum, r.err
}
