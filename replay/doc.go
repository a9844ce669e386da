// Package replay drives recorded sessions against a live MCP server and
// counts what the client saw.
//
// A trace (telemetry.DecodeTrace) holds one session per line: the client
// that ran it, the profile it was served and its calls in order, with their
// arguments. Run replays each as a real session: it opens a transport from a
// Target, initializes as the traced client, lists the tools as a client
// does, then makes the calls one by one. Sessions run Options.Concurrency at
// a time, in trace order of start; each session is bounded by
// Options.Timeout, and the whole replay by the context: once it is done, no
// more sessions start and those not run are left out of the Report.
//
// Every call ends in one outcome (Outcomes lists them in report order):
//
//   - OK: a result without isError.
//   - ToolError: the tool ran and answered isError.
//   - Denied: the gateway refused the call by policy (an error envelope of
//     category policy, such as tool_not_in_profile); Report.DeniedCodes
//     counts the codes.
//   - UnknownTool: JSON-RPC -32602, no upstream offers the tool.
//   - Error: anything else: a transport failure, another JSON-RPC error, an
//     upstream envelope, or a session that could not be opened.
//
// A session that cannot be opened or listed counts once in
// Report.SessionErrors and each of its calls as Error: the figures then say
// more about the server than about the profile, and callers should treat
// them as such (profiler replay exits 1).
//
// A Target says how a session reaches the server: HTTPTarget for a
// streamable HTTP endpoint (the gateway serves profile NAME at /mcp/NAME),
// CommandTarget for a stdio server started per session (asked for a profile
// by TOOLPROF_PROFILE). Any other transport, such as an in-memory one in a
// test, is a Target of a few lines (see the example).
//
// Calls carry the trace's arguments, or {} when it has none (telemetry
// keeps no argument values, so an exported trace has none). CheckArguments
// refuses, before anything is sent, a trace whose arguments are not JSON
// objects: the server would answer -32602 and the call would be miscounted
// as an unknown tool.
package replay
