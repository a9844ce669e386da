// Package telemetry records what MCP sessions do with their tools, in bbolt
// segment files, and reads it back for the profiler.
//
// It stores tool names, timings, sizes and outcomes: never argument values,
// results or anything derived from them.
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
	Exploration     bool // served full by --explore
	ServerVersion   string
	CatalogHash     string
	ToolsListCalls  int // tools/list requests
	ToolsListPages  int // pages served (a request without a cursor is one page)
	Switches        []Switch
}

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
	RequestBytes  int
	ResponseBytes int
}
