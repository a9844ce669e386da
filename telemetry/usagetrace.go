package telemetry

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"runtime"
	"slices"
	"time"
)

// TraceStats counts what ReadTraceUsage saw besides the sessions.
type TraceStats struct {
	UnknownOutcomes int            // calls recorded with outcome unknown_tool
	ToolCalls       map[string]int // calls per tool, over the sessions returned
	NoZone          int            // sessions whose start had no zone offset, read as UTC
	Skipped         []error        // malformed lines skipped (skipBad)
}

// traceChunk is how many lines a worker decodes at a time: large traces are
// decoded on every CPU and consumed in file order, never held whole as
// decoded trace sessions.
const traceChunk = 1 << 14

// ReadTraceUsage reads a trace file into per-session usage, in file order:
// what DecodeTrace and UsageFromTrace give, without holding the decoded
// trace. The line decoder of DecodeTrace is the authority on the format;
// ReadTraceUsage scans the common shape of a line itself, because
// reflection-based JSON decoding dominates the time of a million-session
// derivation, and hands every line it does not fully recognise (escapes,
// unknown or differently cased keys, unexpected types, invalid values) to
// that decoder, so results and errors are the same. Without skipBad any
// malformed line or repeated session id is an error naming the file and
// line; with skipBad those lines are skipped and reported in the stats.
// A line as long as DecodeTrace's bound (64 MiB) or longer ends the read,
// as it ends DecodeTrace's, with a *LineError naming it; no more of it is
// held than the bound.
func ReadTraceUsage(ctx context.Context, path string, skipBad bool) ([]Usage, TraceStats, error) {
	return readTraceUsage(ctx, path, skipBad, maxTraceLine)
}

func readTraceUsage(ctx context.Context, path string, skipBad bool, maxLine int) ([]Usage, TraceStats, error) {
	st := TraceStats{ToolCalls: map[string]int{}}
	fh, err := os.Open(path)
	if err != nil {
		return nil, st, fmt.Errorf("open trace: %w", err)
	}
	defer fh.Close()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	type result struct {
		sessions []traceLine
		bad      []error
		bytes    int64
	}
	futures := make(chan chan result, runtime.GOMAXPROCS(0)+1)
	readErr := make(chan error, 1)
	go func() {
		defer close(futures)
		br := bufio.NewReaderSize(fh, 1<<20)
		first, lines := 1, 0
		var chunk []byte
		launch := func() bool {
			if lines == 0 {
				return true
			}
			fut := make(chan result, 1)
			select {
			case futures <- fut:
			case <-ctx.Done():
				return false
			}
			go func(data []byte, first int) {
				r := result{sessions: make([]traceLine, 0, traceChunk), bytes: int64(len(data))}
				in := newInterner()
				for n := first; len(data) > 0; n++ {
					line := data
					if i := bytes.IndexByte(data, '\n'); i >= 0 {
						line, data = data[:i], data[i+1:]
					} else {
						data = nil
					}
					tl, ok, err := decodeLine(line, path, n, in)
					switch {
					case err != nil:
						r.bad = append(r.bad, err)
					case ok:
						r.sessions = append(r.sessions, tl)
					}
				}
				fut <- r
			}(chunk, first)
			chunk = make([]byte, 0, len(chunk)+len(chunk)/8)
			first += lines
			lines = 0
			return true
		}
		for {
			line, err := br.ReadSlice('\n')
			if errors.Is(err, bufio.ErrBufferFull) {
				// Gather a line longer than the buffer, but no more of it
				// than tells whether it reaches the bound.
				long := slices.Clone(line)
				for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxLine {
					line, err = br.ReadSlice('\n')
					long = append(long, line...)
				}
				line = long
			}
			// The bound of DecodeTrace's bufio.Scanner, which must hold
			// the line and its newline, or see the end of the file, in
			// maxLine bytes.
			if len(bytes.TrimSuffix(line, []byte{'\n'})) >= maxLine {
				readErr <- fmt.Errorf("read trace %w", &LineError{File: path, Line: first + lines,
					Err: fmt.Errorf("a line longer than %d bytes (one session per line)", maxLine)})
				return
			}
			if len(line) > 0 {
				chunk = append(chunk, bytes.TrimSuffix(line, []byte{'\n'})...)
				chunk = append(chunk, '\n')
				lines++
				if lines == traceChunk && !launch() {
					return
				}
			}
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				readErr <- fmt.Errorf("read trace %s: %w", path, err)
				return
			}
		}
		launch()
	}()
	var seen map[string]int
	var out []Usage
	in := newInterner()
	size := int64(0)
	if fi, err := fh.Stat(); err == nil {
		size = fi.Size()
	}
	var bad []error
	for fut := range futures {
		r := <-fut
		if seen == nil {
			// Size the session list and id set from the first chunk's
			// share of the file, to avoid regrowing them a million times over.
			est := len(r.sessions)
			if n := int64(len(r.sessions)); n > 0 && r.bytes > 0 && size > r.bytes {
				est = int(size / (r.bytes / n) * 11 / 10)
			}
			seen = make(map[string]int, est)
			out = make([]Usage, 0, est)
		}
		bad = append(bad, r.bad...)
		for _, tl := range r.sessions {
			if prev, dup := seen[tl.s.Session.ID]; dup {
				bad = append(bad, &LineError{File: path, Line: tl.line, Err: fmt.Errorf("session %q already on line %d (session ids must be unique)", tl.s.Session.ID, prev)})
				continue
			}
			seen[tl.s.Session.ID] = tl.line
			for i, t := range tl.s.Tools {
				tl.s.Tools[i] = in.str(t)
				st.ToolCalls[tl.s.Tools[i]] += tl.calls[i]
			}
			tl.s.Session.ClientName = in.str(tl.s.Session.ClientName)
			tl.s.Session.ClientVersion = in.str(tl.s.Session.ClientVersion)
			tl.s.Session.Profile = in.str(tl.s.Session.Profile)
			st.UnknownOutcomes += tl.s.Unknown
			if tl.noZone {
				st.NoZone++
			}
			out = append(out, tl.s)
		}
		if err := ctx.Err(); err != nil {
			return nil, st, err
		}
	}
	select {
	case err := <-readErr:
		return nil, st, err
	default:
	}
	if len(bad) > 0 {
		if !skipBad {
			return nil, st, fmt.Errorf("trace %s: %d malformed line(s), first %w", path, len(bad), bad[0])
		}
		st.Skipped = bad
	}
	return out, st, nil
}

// traceLine is one decoded line.
type traceLine struct {
	s      Usage
	calls  []int // calls per tool of s.Tools
	line   int
	noZone bool // the start had no zone offset
}

// toolCalls returns the distinct tools of a session's calls, sorted, and
// the calls to each; tools is sorted in place.
func toolCalls(tools []string) ([]string, []int) {
	slices.Sort(tools)
	var names []string
	var calls []int
	for i, t := range tools {
		if i == 0 || t != tools[i-1] {
			names = append(names, t)
			calls = append(calls, 0)
		}
		calls[len(calls)-1]++
	}
	return names, calls
}

// decodeLine decodes one line: ok false with no error for a blank line.
func decodeLine(line []byte, path string, n int, in *interner) (traceLine, bool, error) {
	line = bytes.TrimSpace(line)
	if len(line) == 0 {
		return traceLine{}, false, nil
	}
	if tl, ok := scanLine(line, in); ok {
		tl.line = n
		return tl, true, nil
	}
	ts, bad, err := DecodeTrace(bytes.NewReader(line), path, true)
	if err != nil {
		return traceLine{}, false, err
	}
	if len(bad) > 0 {
		le := bad[0]
		le.Line = n
		return traceLine{}, false, &le
	}
	if len(ts) == 0 {
		return traceLine{}, false, nil
	}
	u := UsageFromTrace(ts)[0]
	called := make([]string, len(ts[0].Calls))
	for i, c := range ts[0].Calls {
		called[i] = c.Tool
	}
	var calls []int
	u.Tools, calls = toolCalls(called)
	return traceLine{
		s:      u,
		calls:  calls,
		line:   n,
		noZone: ts[0].StartedNoZone,
	}, true, nil
}

// interner shares one string per distinct tool name (and client name,
// version and profile).
type interner struct{ m map[string]string }

func newInterner() *interner { return &interner{m: map[string]string{}} }

func (in *interner) bytes(b []byte) string {
	if s, ok := in.m[string(b)]; ok {
		return s
	}
	s := string(b)
	in.m[s] = s
	return s
}

func (in *interner) str(s string) string {
	if v, ok := in.m[s]; ok {
		return v
	}
	in.m[s] = s
	return s
}

// validOutcomes mirrors the outcomes a trace call may carry.
var validOutcomes = [...]string{
	string(OutcomeOK), string(OutcomeToolError), string(OutcomeUpstreamError),
	string(OutcomeDenied), string(OutcomeUnknownTool), string(OutcomeCancelled),
}

// scanLine recognises the common shape of a trace line exactly; anything
// else returns false and goes to DecodeTrace.
func scanLine(b []byte, in *interner) (traceLine, bool) {
	sc := scanner{b: b}
	var tl traceLine
	if !sc.eat('{') {
		return tl, false
	}
	var tools []string
	first := true
	for {
		sc.space()
		if sc.eat('}') {
			break
		}
		if !first && !sc.eat(',') {
			return tl, false
		}
		first = false
		key, ok := sc.str()
		if !ok || !sc.eat(':') {
			return tl, false
		}
		switch string(key) {
		case "session":
			v, ok := sc.str()
			if !ok {
				return tl, false
			}
			tl.s.Session.ID = string(v)
		case "client":
			if !sc.client(&tl.s.Session, in) {
				return tl, false
			}
		case "started":
			if sc.null() {
				tl.s.Session.Start, tl.noZone = time.Time{}, false
				continue
			}
			v, ok := sc.str()
			if !ok {
				return tl, false
			}
			t, noZone, err := ParseTraceTime(string(v))
			if err != nil {
				return tl, false
			}
			tl.s.Session.Start, tl.noZone = t.UTC(), noZone
		case "profile":
			if sc.null() {
				tl.s.Session.Profile = ""
				continue
			}
			v, ok := sc.str()
			if !ok {
				return tl, false
			}
			tl.s.Session.Profile = in.bytes(v)
		case "calls":
			tools = tools[:0]
			tl.s.Calls, tl.s.Unknown, tl.s.Denied = 0, 0, 0
			if sc.null() {
				continue
			}
			if !sc.eat('[') {
				return tl, false
			}
			for firstCall := true; ; firstCall = false {
				sc.space()
				if sc.eat(']') {
					break
				}
				if !firstCall && !sc.eat(',') {
					return tl, false
				}
				tool, outcome, ok := sc.call()
				if !ok || len(tool) == 0 {
					return tl, false
				}
				if len(outcome) > 0 {
					if !slices.Contains(validOutcomes[:], string(outcome)) {
						return tl, false
					}
					switch Outcome(outcome) {
					case OutcomeUnknownTool:
						tl.s.Unknown++
					case OutcomeDenied:
						tl.s.Denied++
					}
				}
				tools = append(tools, in.bytes(tool))
				tl.s.Calls++
			}
		default:
			return tl, false
		}
	}
	sc.space()
	if sc.i != len(b) || tl.s.Session.ID == "" {
		return tl, false
	}
	tl.s.Tools, tl.calls = toolCalls(tools)
	return tl, true
}

type scanner struct {
	b []byte
	i int
}

func (s *scanner) space() {
	for s.i < len(s.b) && (s.b[s.i] == ' ' || s.b[s.i] == '\t' || s.b[s.i] == '\r' || s.b[s.i] == '\n') {
		s.i++
	}
}

func (s *scanner) eat(c byte) bool {
	s.space()
	if s.i < len(s.b) && s.b[s.i] == c {
		s.i++
		return true
	}
	return false
}

func (s *scanner) null() bool {
	s.space()
	if bytes.HasPrefix(s.b[s.i:], []byte("null")) {
		s.i += 4
		return true
	}
	return false
}

// str reads a string without escapes or control characters (those go to
// the full decoder).
func (s *scanner) str() ([]byte, bool) {
	if !s.eat('"') {
		return nil, false
	}
	start := s.i
	for s.i < len(s.b) {
		c := s.b[s.i]
		switch {
		case c == '"':
			v := s.b[start:s.i]
			s.i++
			return v, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		s.i++
	}
	return nil, false
}

// client reads {"name": "...", "version": "..."} or null into sess as
// encoding/json would: null, or a null member, leaves what was there.
func (s *scanner) client(sess *Session, in *interner) bool {
	if s.null() {
		return true
	}
	if !s.eat('{') {
		return false
	}
	for first := true; ; first = false {
		s.space()
		if s.eat('}') {
			return true
		}
		if !first && !s.eat(',') {
			return false
		}
		key, ok := s.str()
		if !ok || !s.eat(':') || (string(key) != "name" && string(key) != "version") {
			return false
		}
		if s.null() {
			continue
		}
		v, ok := s.str()
		if !ok {
			return false
		}
		if string(key) == "name" {
			sess.ClientName = in.bytes(v)
		} else {
			sess.ClientVersion = in.bytes(v)
		}
	}
}

// call reads {"tool": ..., "ok": ..., "outcome": ..., "arguments": ...}.
func (s *scanner) call() (tool, outcome []byte, ok bool) {
	if !s.eat('{') {
		return nil, nil, false
	}
	for first := true; ; first = false {
		s.space()
		if s.eat('}') {
			return tool, outcome, true
		}
		if !first && !s.eat(',') {
			return nil, nil, false
		}
		key, ok := s.str()
		if !ok || !s.eat(':') {
			return nil, nil, false
		}
		switch string(key) {
		case "tool":
			if tool, ok = s.str(); !ok {
				return nil, nil, false
			}
		case "outcome":
			if s.null() {
				outcome = nil
				continue
			}
			if outcome, ok = s.str(); !ok {
				return nil, nil, false
			}
		case "ok":
			s.space()
			switch {
			case s.null():
			case bytes.HasPrefix(s.b[s.i:], []byte("true")):
				s.i += 4
			case bytes.HasPrefix(s.b[s.i:], []byte("false")):
				s.i += 5
			default:
				return nil, nil, false
			}
		case "arguments":
			if !s.skipValue(0) {
				return nil, nil, false
			}
		default:
			return nil, nil, false
		}
	}
}

// skipValue skips an object, array, or string/literal without escapes;
// numbers and anything unusual go to the full decoder.
func (s *scanner) skipValue(depth int) bool {
	if depth > 64 {
		return false
	}
	s.space()
	if s.i >= len(s.b) {
		return false
	}
	switch s.b[s.i] {
	case '"':
		_, ok := s.str()
		return ok
	case '{', '[':
		open := s.b[s.i]
		end := byte('}')
		if open == '[' {
			end = ']'
		}
		s.i++
		for first := true; ; first = false {
			s.space()
			if s.eat(end) {
				return true
			}
			if !first && !s.eat(',') {
				return false
			}
			if open == '{' {
				if _, ok := s.str(); !ok || !s.eat(':') {
					return false
				}
			}
			if !s.skipValue(depth + 1) {
				return false
			}
		}
	}
	for _, lit := range []string{"null", "true", "false"} {
		if bytes.HasPrefix(s.b[s.i:], []byte(lit)) {
			s.i += len(lit)
			return true
		}
	}
	return false
}

// scanTraceSession recognises the common shape of a trace line exactly, as
// scanLine does, into what encoding/json would decode: session, client,
// started, profile and calls of tool, ok and outcome. Lines with anything
// else (arguments, turns, escapes) return false and go to encoding/json.
// Validation is left to decodeTraceLine, for both paths alike. Calls are
// appended to *slab and the session's Calls is its part of it, so a chunk
// of lines allocates its calls a few times, not once per line.
func scanTraceSession(b []byte, in *interner, slab *[]TraceCall) (TraceSession, bool) {
	sc := scanner{b: b}
	var ts TraceSession
	if !sc.eat('{') {
		return ts, false
	}
	for first := true; ; first = false {
		sc.space()
		if sc.eat('}') {
			break
		}
		if !first && !sc.eat(',') {
			return ts, false
		}
		key, ok := sc.str()
		if !ok || !sc.eat(':') {
			return ts, false
		}
		switch string(key) {
		case "session":
			v, ok := sc.str()
			if !ok {
				return ts, false
			}
			ts.Session = string(v)
		case "client":
			var s Session
			s.ClientName, s.ClientVersion = ts.Client.Name, ts.Client.Version
			if !sc.client(&s, in) {
				return ts, false
			}
			ts.Client = TraceClient{Name: s.ClientName, Version: s.ClientVersion}
		case "started":
			if sc.null() {
				ts.Started, ts.StartedNoZone = nil, false
				continue
			}
			v, ok := sc.str()
			if !ok {
				return ts, false
			}
			t, noZone, err := ParseTraceTime(string(v))
			if err != nil {
				return ts, false
			}
			ts.Started, ts.StartedNoZone = &t, noZone
		case "profile":
			if sc.null() {
				continue // encoding/json leaves a string as it was on null
			}
			v, ok := sc.str()
			if !ok {
				return ts, false
			}
			ts.Profile = in.bytes(v)
		case "calls":
			if sc.null() {
				ts.Calls = nil
				continue
			}
			if !sc.eat('[') {
				return ts, false
			}
			if cap(*slab) == 0 {
				*slab = make([]TraceCall, 0, 64) // non-nil: "[]" decodes to an empty slice, not nil
			}
			from := len(*slab)
			for firstCall := true; ; firstCall = false {
				sc.space()
				if sc.eat(']') {
					break
				}
				if !firstCall && !sc.eat(',') {
					return ts, false
				}
				c, ok := sc.traceCall(in)
				if !ok {
					return ts, false
				}
				*slab = append(*slab, c)
			}
			// Appended calls may have moved the slab: take them from
			// where they are now.
			ts.Calls = (*slab)[from:len(*slab):len(*slab)]
		default:
			return ts, false
		}
	}
	sc.space()
	return ts, sc.i == len(b)
}

// traceCall reads {"tool": ..., "ok": ..., "outcome": ..., "search": ...}.
func (s *scanner) traceCall(in *interner) (TraceCall, bool) {
	var c TraceCall
	if !s.eat('{') {
		return c, false
	}
	for first := true; ; first = false {
		s.space()
		if s.eat('}') {
			return c, true
		}
		if !first && !s.eat(',') {
			return c, false
		}
		key, ok := s.str()
		if !ok || !s.eat(':') {
			return c, false
		}
		switch string(key) {
		case "tool":
			if s.null() {
				continue
			}
			v, ok := s.str()
			if !ok {
				return c, false
			}
			c.Tool = in.bytes(v)
		case "outcome":
			if s.null() {
				continue
			}
			v, ok := s.str()
			if !ok {
				return c, false
			}
			c.Outcome = in.bytes(v)
		case "ok":
			v, ok := s.boolean()
			if !ok {
				return c, false
			}
			c.OK = v
		case "search":
			v, ok := s.boolean()
			if !ok {
				return c, false
			}
			c.Search = v != nil && *v
		default:
			return c, false
		}
	}
}

// boolean reads true, false or null (nil).
func (s *scanner) boolean() (*bool, bool) {
	s.space()
	switch {
	case s.null():
		return nil, true
	case bytes.HasPrefix(s.b[s.i:], []byte("true")):
		s.i += 4
		return new(true), true
	case bytes.HasPrefix(s.b[s.i:], []byte("false")):
		s.i += 5
		return new(false), true
	}
	return nil, false
}
