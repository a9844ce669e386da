package upstream

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// relayed reports whether method is a notification relayed to the caller of
// a call in flight.
func relayed(method string) bool {
	switch method {
	case "notifications/message", "notifications/progress",
		// The list changes the SDK's client handles: another reaches
		// no middleware, so counting it would hold the next call.
		"notifications/tools/list_changed", "notifications/prompts/list_changed", "notifications/resources/list_changed":
		return true
	}
	return false
}

// trackNotes is receiving middleware counting the relayed notifications
// handled on their connection (notecount.go).
func (c *Client) trackNotes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if n, ok := ctx.Value(notesKey{}).(*noteCount); ok && relayed(method) {
			n.begin()
			defer n.end()
		}
		return next(ctx, method, req)
	}
}

// elicitAsIs hands an upstream's elicitation/create to OnElicit before the
// SDK's client checks its schema: the SDK refuses schemas that MCP clients
// accept (an array of anyOf-titled strings, SEP-1330), and the gateway
// must not hide from its client a request that client can answer. The
// downstream client judges the schema.
func (c *Client) elicitAsIs(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.ElicitRequest)
		if method != "elicitation/create" || !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		return c.opts.OnElicit(ctx, c.srv.Name, r.Params)
	}
}
