package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"sort"
	"time"
)

// The session JSON Lines exchange format: one session per line, calls in
// order (see the data README). Arguments travel in trace files for replay
// only; telemetry never stores them.

// TraceClient names the MCP client of a traced session.
type TraceClient struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// TraceSession is one line of a trace file.
type TraceSession struct {
	Session string      `json:"session"`
	Client  TraceClient `json:"client"`
	Started *time.Time  `json:"started,omitempty"`
	Profile string      `json:"profile,omitempty"` // absent: the session saw every tool
	Calls   []TraceCall `json:"calls"`
	// Turns holds the user's words, one entry per turn ("turns"), for
	// evaluating tool search offline. Decoding reads them; encoding never
	// writes them back, and telemetry never records them.
	Turns []string `json:"-"`
	// StartedNoZone is set by decoding when "started" had no zone offset
	// and was read as UTC.
	StartedNoZone bool `json:"-"`
}

// CallsOutside counts t's calls to tools not in known (a catalog's
// names): calls a profile derived from that catalog cannot serve.
func (t *TraceSession) CallsOutside(known map[string]bool) int {
	n := 0
	for _, c := range t.Calls {
		if !known[c.Tool] {
			n++
		}
	}
	return n
}

// UnmarshalJSON decodes a trace line, reading "started" with
// ParseTraceTime.
func (ts *TraceSession) UnmarshalJSON(b []byte) error {
	type plain TraceSession // without this method
	var v struct {
		plain
		Started *string  `json:"started"` // shadows plain.Started
		Turns   []string `json:"turns"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	*ts = TraceSession(v.plain)
	ts.Turns = v.Turns
	ts.Started, ts.StartedNoZone = nil, false
	if v.Started != nil {
		t, noZone, err := ParseTraceTime(*v.Started)
		if err != nil {
			return fieldError{err}
		}
		ts.Started, ts.StartedNoZone = &t, noZone
	}
	return nil
}

// fieldError is a session object with a field of the right type but an
// invalid value: reported as it is, not as "not a session object".
type fieldError struct{ err error }

func (e fieldError) Error() string { return e.err.Error() }
func (e fieldError) Unwrap() error { return e.err }

// traceTimeNoZone is RFC 3339 without the zone offset.
const traceTimeNoZone = "2006-01-02T15:04:05.999999999"

// ParseTraceTime parses a trace's "started": RFC 3339, or the same without
// a zone offset (2026-03-01T12:00:00), read as UTC and reported by noZone,
// since exports often drop the zone of times kept in UTC.
func ParseTraceTime(s string) (t time.Time, noZone bool, err error) {
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t, false, nil
	}
	if t, err := time.Parse(traceTimeNoZone, s); err == nil {
		return t, true, nil
	}
	return time.Time{}, false, fmt.Errorf(`"started" %q: want RFC 3339 (2026-03-01T12:00:00Z), or without a zone offset (read as UTC)`, s)
}

// TraceCall is one call of a traced session.
type TraceCall struct {
	Tool      string          `json:"tool"`
	OK        *bool           `json:"ok,omitempty"`
	Arguments json.RawMessage `json:"arguments,omitempty"` // replay only; never stored in telemetry
	Outcome   string          `json:"outcome,omitempty"`
	Turn      *int            `json:"turn,omitempty"` // index into the session's Turns
	// Search marks a call made through call_tool, of a tool the session
	// found with find_tools (Call.Search): Tool is the tool it ran.
	Search bool `json:"search,omitempty"`
}

// LineError is a malformed line of a trace file.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }
func (e *LineError) Unwrap() error { return e.Err }

// maxTraceLine bounds one line (one session) of a trace file.
const maxTraceLine = 64 << 20

// DecodeTrace reads a trace file; name is used in errors. Every malformed
// line is reported. Without skipBad any malformed line is an error and no
// session is returned; with skipBad the good lines are returned.
func DecodeTrace(r io.Reader, name string, skipBad bool) ([]TraceSession, []LineError, error) {
	return decodeTrace(r, name, skipBad, maxTraceLine)
}

func decodeTrace(r io.Reader, name string, skipBad bool, maxLine int) ([]TraceSession, []LineError, error) {
	var out []TraceSession
	var bad []LineError
	seen := map[string]int{}
	err := scanTrace(context.Background(), r, name, maxLine, func(line int, ts *TraceSession) error {
		if prev, dup := seen[ts.Session]; dup {
			bad = append(bad, LineError{File: name, Line: line, Err: fmt.Errorf("session %q already on line %d (session ids must be unique)", ts.Session, prev)})
			return nil
		}
		seen[ts.Session] = line
		out = append(out, *ts)
		return nil
	}, func(e LineError) { bad = append(bad, e) })
	if err != nil {
		return nil, bad, err
	}
	if len(bad) > 0 && !skipBad {
		return nil, bad, fmt.Errorf("trace %s: %d malformed line(s), first %w", name, len(bad), &bad[0])
	}
	return out, bad, nil
}

// ScanTrace reads a trace file and passes each well-formed session to fn,
// in file order, with its line number, and each malformed line to bad;
// name is used in errors. Repeated session ids are left to the caller.
// Lines are decoded on every CPU a chunk at a time, so a file of any size
// is held only a few chunks at once; fn must not keep ts past the call.
// ScanTrace stops at fn's first error and returns it.
func ScanTrace(ctx context.Context, r io.Reader, name string, fn func(line int, ts *TraceSession) error, bad func(LineError)) error {
	return scanTrace(ctx, r, name, maxTraceLine, fn, bad)
}

// scanChunk is how many lines a ScanTrace worker decodes at a time.
const scanChunk = 1 << 12

// scanned is one decoded line: a session, or err for a malformed line.
type scanned struct {
	line int
	ts   TraceSession
	err  error
}

func scanTrace(ctx context.Context, r io.Reader, name string, maxLine int, fn func(line int, ts *TraceSession) error, bad func(LineError)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	futures := make(chan chan []scanned, runtime.GOMAXPROCS(0)+1)
	readErr := make(chan error, 1)
	go func() {
		defer close(futures)
		sc := bufio.NewScanner(r)
		sc.Buffer(make([]byte, min(64<<10, maxLine)), maxLine)
		var data []byte
		var starts []int // line number, then offset of its end, per line
		launch := func() bool {
			if len(starts) == 0 {
				return true
			}
			fut := make(chan []scanned, 1)
			select {
			case futures <- fut:
			case <-ctx.Done():
				return false
			}
			go func(data []byte, starts []int) {
				res := make([]scanned, len(starts)/2)
				in := newInterner()
				slab := make([]TraceCall, 0, 6*len(res))
				off := 0
				for i := range res {
					end := starts[2*i+1]
					res[i].line = starts[2*i]
					res[i].ts, res[i].err = decodeTraceLine(data[off:end], in, &slab)
					off = end
				}
				fut <- res
			}(data, starts)
			data, starts = make([]byte, 0, len(data)), make([]int, 0, 2*scanChunk)
			return true
		}
		line := 1
		for ; sc.Scan(); line++ {
			text := bytes.TrimSpace(sc.Bytes())
			if len(text) == 0 {
				continue
			}
			data = append(data, text...)
			starts = append(starts, line, len(data))
			if len(starts) == 2*scanChunk && !launch() {
				return
			}
		}
		if !launch() {
			return
		}
		if err := sc.Err(); err != nil {
			if errors.Is(err, bufio.ErrTooLong) {
				readErr <- fmt.Errorf("read trace %s:%d: a line longer than %d bytes (one session per line)", name, line, maxLine)
			} else {
				readErr <- fmt.Errorf("read trace %s: %w", name, err)
			}
		}
	}()
	var stop error
	for fut := range futures {
		res := <-fut // waited for even after a stop, so no worker outlives the call
		if stop != nil {
			continue
		}
		for i := range res {
			if res[i].err != nil {
				bad(LineError{File: name, Line: res[i].line, Err: res[i].err})
				continue
			}
			if stop = fn(res[i].line, &res[i].ts); stop != nil {
				cancel()
				break
			}
		}
		if stop == nil {
			if stop = ctx.Err(); stop != nil {
				cancel()
			}
		}
	}
	if stop != nil {
		return stop
	}
	select {
	case err := <-readErr:
		return err
	default:
		return nil
	}
}

// decodeTraceLine decodes one line: by scanTraceSession when the line has
// the common shape, else by encoding/json. in shares the strings of tool
// names and clients across lines.
func decodeTraceLine(text []byte, in *interner, slab *[]TraceCall) (TraceSession, error) {
	ts, ok := scanTraceSession(text, in, slab)
	if !ok {
		ts = TraceSession{}
		dec := json.NewDecoder(bytes.NewReader(text))
		if err := dec.Decode(&ts); err != nil {
			if fe := (fieldError{}); errors.As(err, &fe) {
				return ts, fe.err
			}
			return ts, fmt.Errorf(`not a session object: %v (want {"session": ..., "client": {...}, "calls": [{"tool": ...}]})`, err)
		}
		if dec.More() {
			return ts, errors.New("more than one JSON value on the line (one session per line)")
		}
	}
	if ts.Session == "" {
		return ts, errors.New(`missing "session" id`)
	}
	for i, c := range ts.Calls {
		if c.Tool == "" {
			return ts, fmt.Errorf(`calls[%d]: missing "tool"`, i)
		}
		if c.Turn != nil && (*c.Turn < 0 || *c.Turn >= len(ts.Turns)) {
			return ts, fmt.Errorf(`calls[%d]: turn %d: want an index into "turns" (0 to %d)`, i, *c.Turn, len(ts.Turns)-1)
		}
		// The stored codes are the valid outcomes (TestOutcomeCodes): no
		// list is made per call to check one.
		if c.Outcome != "" && outcomeCode(Outcome(c.Outcome)) == codeOther {
			return ts, fmt.Errorf(`calls[%d]: outcome %q: want one of %v`, i, c.Outcome, Outcomes())
		}
	}
	return ts, nil
}

// outcomeOf maps a trace call's optional "outcome" and "ok" to an outcome.
func outcomeOf(c TraceCall) Outcome {
	switch {
	case c.Outcome != "":
		return Outcome(c.Outcome)
	case c.OK == nil:
		return ""
	case *c.OK:
		return OutcomeOK
	default:
		return OutcomeToolError
	}
}

// UsageFromTrace derives per-session usage from traces, in input order. A
// session without "profile" saw every tool (Session.Profile "").
func UsageFromTrace(ts []TraceSession) []Usage {
	out := make([]Usage, 0, len(ts))
	for _, t := range ts {
		u := Usage{Session: traceSession(t, time.Time{}), Calls: len(t.Calls)}
		for _, c := range t.Calls {
			u.Tools = append(u.Tools, c.Tool)
			switch outcomeOf(c) {
			case OutcomeDenied:
				u.Denied++
			case OutcomeUnknownTool:
				u.Unknown++
			}
		}
		slices.Sort(u.Tools)
		u.Tools = slices.Compact(u.Tools)
		out = append(out, u)
	}
	return out
}

func traceSession(t TraceSession, defaultStart time.Time) Session {
	s := Session{ID: t.Session, ClientName: t.Client.Name, ClientVersion: t.Client.Version, Profile: t.Profile, Start: defaultStart}
	if t.Started != nil {
		s.Start = t.Started.UTC()
	}
	return s
}

// EncodeTrace writes sessions and their calls as trace lines, sessions in
// the given order and calls by sequence number. It is the inverse of
// Import for the fields the format carries.
func EncodeTrace(w io.Writer, sessions []Session, calls []Call) error {
	bySession := map[string][]Call{}
	for _, c := range calls {
		bySession[c.Session] = append(bySession[c.Session], c)
	}
	bw := bufio.NewWriter(w)
	enc := json.NewEncoder(bw)
	for _, s := range sessions {
		cs := bySession[s.ID]
		sort.SliceStable(cs, func(i, j int) bool { return cs[i].Seq < cs[j].Seq })
		start := s.Start.UTC()
		ts := TraceSession{Session: s.ID, Client: TraceClient{Name: s.ClientName, Version: s.ClientVersion}, Started: &start, Profile: s.Profile, Calls: make([]TraceCall, 0, len(cs))}
		for _, c := range cs {
			tc := TraceCall{Tool: c.Tool, Outcome: string(c.Outcome), Search: c.Search}
			switch c.Outcome {
			case "":
			case OutcomeOK:
				tc.OK = new(true)
			default:
				tc.OK = new(false)
			}
			ts.Calls = append(ts.Calls, tc)
		}
		if err := enc.Encode(ts); err != nil {
			return fmt.Errorf("encode session %s: %w", s.ID, err)
		}
	}
	return bw.Flush()
}
