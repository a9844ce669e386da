package otelmcp

// Attribute names of the OpenTelemetry semantic conventions for MCP (status
// Development) that the gateway sets.
const (
	AttrMethodName          = "mcp.method.name"
	AttrToolName            = "gen_ai.tool.name"
	AttrPromptName          = "gen_ai.prompt.name"
	AttrOperationName       = "gen_ai.operation.name"
	AttrSessionID           = "mcp.session.id"
	AttrRequestID           = "jsonrpc.request.id"
	AttrProtocolVersion     = "mcp.protocol.version"
	AttrErrorType           = "error.type"
	AttrRPCStatusCode       = "rpc.response.status_code"
	AttrNetworkTransport    = "network.transport"
	AttrNetworkProtocolName = "network.protocol.name"
)

// Attributes toolprof adds: the gateway's facts that the conventions have
// no name for, and that derive needs from another gateway's traces.
const (
	// AttrProfile is the profile the session was served.
	AttrProfile = "toolprof.profile"
	// AttrOutcome is the call's telemetry outcome (ok, tool_error,
	// upstream_error, denied, unknown_tool, cancelled).
	AttrOutcome = "toolprof.outcome"
	// AttrReachedBy says how the session reached the tool it called:
	// listed (in its profile), group (switched on) or search (through
	// call_tool).
	AttrReachedBy = "toolprof.reached_by"
	// AttrUsageSession is the telemetry session ID, which groups a stdio
	// session's spans (stdio has no mcp.session.id).
	AttrUsageSession = "toolprof.usage_session"
	// AttrToolDefinitionsBytes is, on a tools/list span, the wire size of
	// the tool definitions served.
	AttrToolDefinitionsBytes = "toolprof.tool_definitions.bytes"
	// AttrToolDefinitionsTokens is, on a tools/list span, the model
	// measure of the tool definitions served: the tokens of the tools
	// array a client forwards to the model (package price).
	AttrToolDefinitionsTokens = "toolprof.tool_definitions.tokens"
)

// Metric names: the conventions', and toolprof's listing cost.
const (
	MetricServerOperationDuration = "mcp.server.operation.duration"
	MetricClientOperationDuration = "mcp.client.operation.duration"
	MetricServerSessionDuration   = "mcp.server.session.duration"
	MetricToolDefinitionsTokens   = "toolprof.tool_definitions.tokens"
)

// MCP method names.
const (
	methodCallTool  = "tools/call"
	methodListTools = "tools/list"
)
