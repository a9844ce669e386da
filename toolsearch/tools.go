package toolsearch

// The tools a gateway serves for search, as listed: short, since every
// session that is served search pays for them in each request.
const (
	FindToolsName = "find_tools"
	CallToolName  = "call_tool"
	// DefaultLimit is find_tools' limit when the call gives none: with
	// DefaultCut, the limit with which the search arm costs least on a
	// validation part of the learning sessions (evaluate's
	// TestEvalDefaultLimit; 8 to 10 cost nearly as little, 5 costs more,
	// 4 and below miss more). The cut trims a clear query's answer, so
	// the limit mostly bounds an ambiguous one's. MaxLimit bounds the one a call
	// gives.
	DefaultLimit = 11
	MaxLimit     = 20
)

// FindToolsDefinition is find_tools' tools/list entry.
const FindToolsDefinition = `{"name":"find_tools","description":"Search the tools not listed here. Returns up to limit (default 11) definitions not returned before, best first, fewer when the best stand out; run one with call_tool. Query \"*\" lists their names; a name returns its definition.","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"what you want to do"},"limit":{"type":"integer","minimum":1,"maximum":20}},"required":["query"]}}`

// CallToolDefinition is call_tool's tools/list entry.
const CallToolDefinition = `{"name":"call_tool","description":"Run a tool find_tools returned.","inputSchema":{"type":"object","properties":{"name":{"type":"string"},"arguments":{"type":"object"}},"required":["name"]}}`
