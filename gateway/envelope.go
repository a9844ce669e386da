package gateway

import (
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Envelope is the one shape of every error the gateway itself produces as a
// tool result. It travels in the result's structuredContent, and its message
// (followed by the envelope as JSON) as text content, so that clients which
// read only text still see it.
type Envelope struct {
	Code             string   `json:"code"`
	Message          string   `json:"message"`
	Retryable        bool     `json:"retryable"`
	Category         string   `json:"category"`
	SuggestedActions []string `json:"suggested_actions"`
}

// The envelope codes the gateway produces. Each is produced by at least one
// test.
const (
	// CodeToolNotInProfile: the upstream offers the tool, but the session's
	// profile excludes it. The call never reaches the upstream. Category
	// "policy", not retryable.
	CodeToolNotInProfile = "tool_not_in_profile"
	// CodeUpstreamUnavailable: the upstream could not run the call (its
	// connection failed or closed, or it is a recorded catalog that cannot run
	// tools). Category "upstream", retryable.
	CodeUpstreamUnavailable = "upstream_unavailable"
)

// Envelope categories.
const (
	CategoryPolicy   = "policy"
	CategoryUpstream = "upstream"
)

// result turns the envelope into an isError tool result.
func (e Envelope) result() *mcp.CallToolResult {
	if e.SuggestedActions == nil {
		e.SuggestedActions = []string{} // [] rather than null on the wire
	}
	content := []mcp.Content{&mcp.TextContent{Text: e.Message}}
	if b, err := json.Marshal(e); err == nil {
		content = append(content, &mcp.TextContent{Text: string(b)})
	}
	return &mcp.CallToolResult{IsError: true, Content: content, StructuredContent: e}
}
