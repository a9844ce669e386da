package gateway

import "github.com/modelcontextprotocol/go-sdk/mcp"

// The tools/list result by protocol version. ttlMs and cacheScope
// (SEP-2549) are part of protocol 2026-07-28, where they are required; a
// client of an earlier version has no use for them, and every byte of the
// listing lands in its context, so it is not sent them.

// protocolCacheable is the first protocol version whose list results carry
// ttlMs and cacheScope.
const protocolCacheable = "2026-07-28"

// toolsCacheScope is the cacheScope of a 2026-07-28 listing on a protocol
// session (stdio): "private", because what a session is listed depends on
// the session (an exploration session is served another profile; groups
// switched on add tools), so a shared cache must not hand one session's
// listing to another. A sessionless request's listing is "public" unless a
// credential or exploration selects it (stateless.go). ttlMs stays 0
// (immediately stale): the listing changes with the upstream's, announced
// by tools/list_changed.
const toolsCacheScope = "private"

// toolsPage is a tools/list result without the 2026-07-28 cache fields,
// its fields in the order mcp.ListToolsResult encodes them.
type toolsPage struct {
	mcp.ResultBase
	NextCursor string      `json:"nextCursor,omitempty"`
	Tools      []*mcp.Tool `json:"tools"`
}

// toolsListResult returns res as req's protocol version has it: res with
// its cache fields set from 2026-07-28 on, the same listing without them
// before.
func toolsListResult(req mcp.Request, res *mcp.ListToolsResult, scope string) mcp.Result {
	if cacheableProtocol(req) {
		res.CacheScope = scope
		return res
	}
	return &toolsPage{ResultBase: mcp.ResultBase{Meta: res.Meta}, NextCursor: res.NextCursor, Tools: res.Tools}
}

// cacheableProtocol reports whether req follows protocol 2026-07-28 or
// later. From that version every request names its version in _meta
// (SEP-2575), and that is how the SDK itself tells the protocols apart
// for each request; a request of an earlier version names none.
func cacheableProtocol(req mcp.Request) bool {
	p, ok := req.GetParams().(*mcp.ListToolsParams)
	if !ok || p == nil {
		return false
	}
	v, _ := p.Meta[mcp.MetaKeyProtocolVersion].(string)
	return v >= protocolCacheable
}
