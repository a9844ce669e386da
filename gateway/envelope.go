package gateway

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/upstream"
)

// Envelope is the one shape of every error the gateway itself produces as a
// tool result. It travels in the result's structuredContent, and its message
// (followed by the envelope as JSON) as text content, so that clients which
// read only text still see it.
//
// The documented codes (also in docs/errors.md; each is produced by a test,
// and TestEveryDocumentedCodeIsProduced checks this list against that file):
//
//	code                        category    retryable  when
//	tool_not_in_profile         policy      no         the session's profile excludes the tool (or a group not yet switched on holds it)
//	read_only                   policy      no         a mutate or destructive tool in a read-only session
//	operating_context_rejected  policy      no         the operating context's registry refused a write
//	group_not_allowed           policy      no         enable_tools named a group that would add tools outside the ceiling
//	invalid_arguments           validation  no         arguments are not a JSON object, or get_operating_context's are wrong
//	upstream_unavailable        upstream    yes        the upstream is down, not yet connected, or died during the call
//	upstream_unauthorized       upstream    yes        the upstream is an OAuth server without a usable token (needs_login)
//	upstream_timeout            upstream    yes        the upstream did not answer within --call-timeout
//	result_too_large            upstream    no         the upstream's answer was over the limit on one message; it was dropped
//	busy                        capacity    yes        the session or the gateway has its bound of calls in flight
//
// The policy and validation codes are answered before anything is sent.
// upstream_unavailable is answered without sending when the upstream is
// down, restarting or not yet connected (upstream.Set fails the call at
// once) or is a recorded catalog; only when the upstream dies while the
// call is in flight was the call sent, and it was never answered.
// upstream_timeout: sent, then cancelled upstream. Protocol errors stay
// JSON-RPC errors, as MCP defines them: an unknown tool, missing params and
// a bad tools/list cursor are -32602 (invalid params), not envelopes.
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
	// profile excludes it. When a group the profile offers would add it,
	// the message names the group and the first suggested action is the
	// enable_tools call switching it on. The call never reaches the
	// upstream. Category "policy", not retryable as is.
	CodeToolNotInProfile = "tool_not_in_profile"
	// CodeUpstreamUnavailable: the upstream could not run the call. Usually
	// the call is never sent: the upstream is down, restarting or not yet
	// connected (upstream.Set fails it at once, wrapping
	// upstream.ErrUnavailable), or it is a recorded catalog that cannot run
	// tools. Only when the upstream dies with the call in flight was the call
	// sent (and never answered). Category "upstream", retryable.
	CodeUpstreamUnavailable = "upstream_unavailable"
	// CodeReadOnly: the session is served read-only (--read-only, or a
	// read_only profile) and the tool is not read or evaluate. The call never
	// reaches the upstream. Category "policy", not retryable.
	CodeReadOnly = "read_only"
	// CodeInvalidArguments: the call's arguments are not a JSON object (or,
	// for get_operating_context, not what it accepts). The call never reaches
	// the upstream. Category "validation", not retryable as is.
	CodeInvalidArguments = "invalid_arguments"
	// CodeResultTooLarge: the upstream answered, but its answer was over the
	// limit on one message (upstream.DefaultMaxMessageBytes for a stdio
	// server) and was dropped; the upstream's session and every other call
	// go on. The message names the size and the limit. Category
	// "upstream", not retryable as is.
	CodeResultTooLarge = "result_too_large"
	// CodeBusy: the session already has Options.MaxSessionCalls calls in
	// flight, or all sessions together Options.MaxCalls. The call never
	// reaches the upstream and is not recorded. Category "capacity",
	// retryable.
	CodeBusy = "busy"
)

// Codes lists every envelope code the gateway produces, in documentation
// order.
func Codes() []string {
	return []string{CodeToolNotInProfile, CodeReadOnly, CodeOperatingContextRejected, CodeGroupNotAllowed, CodeInvalidArguments, CodeUpstreamUnavailable, CodeUpstreamUnauthorized, CodeUpstreamTimeout, CodeResultTooLarge, CodeBusy}
}

// Envelope categories.
const (
	CategoryPolicy     = "policy"
	CategoryUpstream   = "upstream"
	CategoryValidation = "validation"
	CategoryCapacity   = "capacity"
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

// resultTooLarge is the envelope for a call whose answer the upstream
// package dropped for its size.
func resultTooLarge(tool string, e *upstream.TooLargeError) Envelope {
	return Envelope{
		Code:      CodeResultTooLarge,
		Message:   fmt.Sprintf("tool %q answered %d bytes, over the gateway's limit of %d bytes on one upstream message; the answer was dropped (upstream %q is still connected)", tool, e.Bytes, e.Limit, e.Server),
		Retryable: false,
		Category:  CategoryUpstream,
		SuggestedActions: []string{
			"call the tool again asking for less: a narrower query, a smaller range or page, a filter",
		},
	}
}

// upstreamUnavailable is the envelope for a call the upstream could not
// run; err says which upstream and why.
func upstreamUnavailable(tool string, err error) Envelope {
	var ue *upstream.UnauthorizedError
	if errors.As(err, &ue) {
		return upstreamUnauthorized(tool, ue)
	}
	return Envelope{
		Code:             CodeUpstreamUnavailable,
		Message:          fmt.Sprintf("tool %q could not be run: the upstream is unavailable (%v)", tool, err),
		Retryable:        true,
		Category:         CategoryUpstream,
		SuggestedActions: []string{"retry the call later", "check the gateway's health output for the upstream's state"},
	}
}
