package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

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
// its fields in the order mcp.ListToolsResult encodes them. Tools are
// their wire form (catalogState.wireTools).
type toolsPage struct {
	mcp.ResultBase
	NextCursor string            `json:"nextCursor,omitempty"`
	Tools      []json.RawMessage `json:"tools"`
}

// cacheablePage is a 2026-07-28 tools/list result: the SDK's type, whose
// methods let the SDK set its result type and _meta, with its tools
// shadowed by their wire form.
type cacheablePage struct {
	*mcp.ListToolsResult
	Tools []json.RawMessage `json:"tools"`
}

// toolsListResult returns res, its tools as wire lists them, as req's
// protocol version has it: with its cache fields set from 2026-07-28 on
// (cacheScope scope), without them before.
func toolsListResult(req mcp.Request, res *mcp.ListToolsResult, wire []json.RawMessage, scope string) mcp.Result {
	if cacheableProtocol(req) {
		res.CacheScope = scope
		return &cacheablePage{ListToolsResult: res, Tools: wire}
	}
	return &toolsPage{ResultBase: mcp.ResultBase{Meta: res.Meta}, NextCursor: res.NextCursor, Tools: wire}
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
