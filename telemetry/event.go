// Package telemetry records what MCP sessions do with their tools, in bbolt
// segment files, and reads it back for the profiler.
//
// It stores tool names, timings, sizes and outcomes: never argument values,
// results or anything derived from them.
//
// A telemetry directory holds segments, seg-<UTC start>-<replica>.db. A
// Recorder writes one segment at a time (named *.open.db while it holds the
// bbolt lock), rotates it on a UTC-aligned interval (daily by default) and
// renames it when closed; a recorder restarted after a crash closes what its
// replica left open. Readers take one or several directories, merge every
// segment, and leave out an open segment a live writer holds. Each segment
// carries its schema version in the meta bucket; a newer one is refused.
// Calls are keyed by start time (8 bytes) and a counter, values are varints
// with segment-local numbers for session ids and tool names, and buckets are
// filled to 100%: about 48 bytes of file per call event.
package telemetry

import "time"

// Outcome is how a tool call ended.
type Outcome string

// The outcomes a call record may carry.
const (
	OutcomeOK            Outcome = "ok"
	OutcomeToolError     Outcome = "tool_error"     // the upstream answered with isError
	OutcomeUpstreamError Outcome = "upstream_error" // the upstream failed or was unreachable
	OutcomeDenied        Outcome = "denied"         // outside the session's profile
	OutcomeUnknownTool   Outcome = "unknown_tool"   // no upstream offers it
	OutcomeCancelled     Outcome = "cancelled"
)

// Outcomes returns the outcomes a call record may carry, in their stored
// order (a fresh slice: callers may keep or change it).
func Outcomes() []Outcome {
	return []Outcome{OutcomeOK, OutcomeToolError, OutcomeUpstreamError, OutcomeDenied, OutcomeUnknownTool, OutcomeCancelled}
}

// Transport names.
const (
	TransportStdio = "stdio"
	TransportHTTP  = "http"
)

// Session describes one MCP session.
type Session struct {
	ID              string // unique across replicas: "<replica>/<n>"
	Start           time.Time
	End             time.Time // zero while open
	Transport       string
	ClientName      string
	ClientVersion   string
	ProtocolVersion string
	Profile         string
	// Exploration marks a session picked by --explore. Profile names what
	// it was served: full, or the --max-profile ceiling when full lies
	// beyond it.
	Exploration bool
	// ReadOnly marks a session served only read and evaluate tools
	// (--read-only, or a read_only profile): it did not see every tool of
	// its profile.
	ReadOnly       bool
	ServerVersion  string
	CatalogHash    string
	ToolsListCalls int // tools/list requests
	ToolsListPages int // pages served (a request without a cursor is one page)
	Switches       []Switch
	// Attribution is the rule that grouped the session's calls: one
	// connection (protocols before 2026-07-28), or for sessionless requests
	// a trace id or a caller (credential hash and client name) with an idle
	// gap. Records written before the field read as AttributionConnection.
	Attribution Attribution
	// Trace is, for AttributionTrace, TraceKey of the trace id: equal in
	// the records every replica keeps for one trace, which readers merge
	// into one usage session (merge.go).
	Trace string
}

// Attribution is how the calls of a usage session were grouped.
type Attribution string

// Name is the rule's name for reports: "connection" for the zero value.
func (a Attribution) Name() string {
	if a == AttributionConnection {
		return "connection"
	}
	return string(a)
}

// The attribution rules.
const (
	AttributionConnection Attribution = ""       // one protocol session (the zero value, as in old records)
	AttributionTrace      Attribution = "trace"  // the W3C traceparent trace id in params._meta
	AttributionCaller     Attribution = "caller" // credential hash and client name, split by an idle gap
)

// Switch records a tool group switched on in a session (enable_tools).
type Switch struct {
	Time  time.Time
	Group string
}

// Call describes one tools/call.
type Call struct {
	Session       string
	Seq           uint64
	Tool          string
	Start         time.Time
	Duration      time.Duration
	Outcome       Outcome
	RequestBytes  int // the tool's name and arguments, as the client sent them
	ResponseBytes int // the result, as sent to the client
	// Search marks a call made through call_tool, of a tool the session
	// found with find_tools rather than one it was listed.
	Search bool
}
