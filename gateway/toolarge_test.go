package gateway

import (
	"context"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/upstream"
)

// tooLargeFakeUpstream answers every call as upstream.Client does when the
// server's answer was over the message limit (the real case, a 20 MB
// answer from a stdio server, is tested in package upstream).
type tooLargeFakeUpstream struct {
	tools []*mcp.Tool
}

func (u *tooLargeFakeUpstream) ListTools(context.Context) ([]*mcp.Tool, error) {
	return slices.Clone(u.tools), nil
}

func (u *tooLargeFakeUpstream) CallTool(_ context.Context, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	return nil, &upstream.TooLargeError{Server: "fake", Op: "tools/call " + p.Name, Bytes: 20 << 20, Limit: upstream.DefaultMaxMessageBytes}
}
