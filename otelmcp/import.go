package otelmcp

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sort"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/ptrace"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/telemetry"
)

// ImportStats counts what ReadFiles read.
type ImportStats struct {
	Spans    int // every span read (a span in several files counts once)
	Calls    int // MCP tools/call SERVER spans, imported as calls
	Skipped  int // other spans: not MCP tool calls, counted and left out
	Sessions int
}

// ReadFiles reads OTLP JSON trace files and returns the MCP tool calls of
// their SERVER spans as traced sessions, for telemetry.Import. A file may
// hold one OTLP JSON object ({"resourceSpans": [...]}, as the collector's
// file exporter writes one per line), several, or Jaeger's /api/v3 answer,
// which wraps one in {"result": ...}.
//
// Sessions are keyed by toolprof.usage_session (this gateway's session
// ID), else mcp.session.id, else the trace ID, across every file; their
// calls are in start order and their start is the first call's. Spans that
// are not tools/call SERVER spans naming a tool are counted and skipped. A
// file that is not OTLP JSON is an error naming it and the first bad field.
func ReadFiles(paths []string) ([]telemetry.TraceSession, ImportStats, error) {
	r := &reader{sessions: map[string]*importSession{}, seen: map[spanKey]bool{}}
	for _, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return nil, ImportStats{}, err
		}
		err = r.read(path, f)
		f.Close()
		if err != nil {
			return nil, ImportStats{}, err
		}
	}
	return r.result()
}

type spanKey struct {
	trace pcommon.TraceID
	span  pcommon.SpanID
}

type importCall struct {
	start time.Time
	call  telemetry.TraceCall
}

type importSession struct {
	id      string
	profile string
	calls   []importCall
}

type reader struct {
	stats    ImportStats
	sessions map[string]*importSession
	order    []string
	seen     map[spanKey]bool
}

// read reads every OTLP JSON value of one file.
func (r *reader) read(path string, in io.Reader) error {
	dec := json.NewDecoder(in)
	for n := 1; ; n++ {
		var raw json.RawMessage
		err := dec.Decode(&raw)
		if errors.Is(err, io.EOF) {
			if n == 1 {
				return fmt.Errorf("%s: not OTLP JSON: the file is empty", path)
			}
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: object %d: not OTLP JSON: %w", path, n, err)
		}
		traces, err := unmarshal(raw)
		if err != nil {
			return fmt.Errorf("%s: object %d: not OTLP JSON: %w", path, n, err)
		}
		r.add(traces)
	}
}

// unmarshal reads one OTLP JSON traces object, unwrapping Jaeger's
// {"result": ...}.
func unmarshal(raw json.RawMessage) (ptrace.Traces, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		return ptrace.Traces{}, fmt.Errorf("want an object with \"resourceSpans\": %w", err)
	}
	if inner, ok := top["result"]; ok && len(top) == 1 {
		raw, top = inner, nil
		if err := json.Unmarshal(raw, &top); err != nil {
			return ptrace.Traces{}, fmt.Errorf("field \"result\": want an object with \"resourceSpans\": %w", err)
		}
	}
	if _, ok := top["resourceSpans"]; !ok {
		keys := make([]string, 0, len(top))
		for k := range top {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if len(keys) == 0 {
			return ptrace.Traces{}, errors.New("no field \"resourceSpans\"")
		}
		return ptrace.Traces{}, fmt.Errorf("field %q: want \"resourceSpans\" (or Jaeger's \"result\")", keys[0])
	}
	var u ptrace.JSONUnmarshaler
	t, err := u.UnmarshalTraces(raw)
	if err != nil {
		return ptrace.Traces{}, err
	}
	return t, nil
}

// add takes the MCP tool calls of traces.
func (r *reader) add(traces ptrace.Traces) {
	rss := traces.ResourceSpans()
	for i := range rss.Len() {
		sss := rss.At(i).ScopeSpans()
		for j := range sss.Len() {
			spans := sss.At(j).Spans()
			for k := range spans.Len() {
				r.span(spans.At(k))
			}
		}
	}
}

func (r *reader) span(s ptrace.Span) {
	key := spanKey{s.TraceID(), s.SpanID()}
	if r.seen[key] {
		return
	}
	r.seen[key] = true
	r.stats.Spans++
	a := s.Attributes()
	str := func(k string) string {
		if v, ok := a.Get(k); ok {
			return v.AsString()
		}
		return ""
	}
	tool := str(AttrToolName)
	if s.Kind() != ptrace.SpanKindServer || str(AttrMethodName) != methodCallTool || tool == "" {
		r.stats.Skipped++
		return
	}
	r.stats.Calls++
	id := str(AttrUsageSession)
	switch {
	case id != "":
	case str(AttrSessionID) != "":
		id = "mcp/" + str(AttrSessionID)
	default:
		id = "trace/" + s.TraceID().String()
	}
	sess, ok := r.sessions[id]
	if !ok {
		sess = &importSession{id: id}
		r.sessions[id] = sess
		r.order = append(r.order, id)
	}
	if p := str(AttrProfile); p != "" && sess.profile == "" {
		sess.profile = p
	}
	sess.calls = append(sess.calls, importCall{
		start: s.StartTimestamp().AsTime(),
		// Only a call search let through says so (toolprof.reached_by); a
		// refused one reads as a direct call of the tool.
		call: telemetry.TraceCall{Tool: tool, Outcome: string(outcome(str(AttrOutcome), str(AttrErrorType))), Search: str(AttrReachedBy) == gateway.ReachedSearch},
	})
}

// outcome is the call's toolprof.outcome when it names one, else what
// error.type says: none is ok, tool_error a tool error, any other an
// upstream error.
func outcome(recorded, errType string) telemetry.Outcome {
	if slices.Contains(telemetry.Outcomes(), telemetry.Outcome(recorded)) {
		return telemetry.Outcome(recorded)
	}
	switch errType {
	case "":
		return telemetry.OutcomeOK
	case "tool_error":
		return telemetry.OutcomeToolError
	}
	return telemetry.OutcomeUpstreamError
}

func (r *reader) result() ([]telemetry.TraceSession, ImportStats, error) {
	out := make([]telemetry.TraceSession, 0, len(r.order))
	for _, id := range r.order {
		s := r.sessions[id]
		sort.SliceStable(s.calls, func(i, j int) bool { return s.calls[i].start.Before(s.calls[j].start) })
		t := telemetry.TraceSession{Session: s.id, Profile: s.profile}
		started := s.calls[0].start.UTC()
		t.Started = &started
		for _, c := range s.calls {
			t.Calls = append(t.Calls, c.call)
		}
		out = append(out, t)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Started.Before(*out[j].Started) })
	r.stats.Sessions = len(out)
	return out, r.stats, nil
}
