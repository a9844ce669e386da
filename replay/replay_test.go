package replay

import (
	"errors"
	"regexp"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
)

// TestClassifyCall covers every arm of the outcome mapping, including the
// ones a live gateway rarely produces (an upstream envelope, another
// JSON-RPC error, a transport failure).
func TestClassifyCall(t *testing.T) {
	envelope := func(code, category string) *mcp.CallToolResult {
		return &mcp.CallToolResult{IsError: true, StructuredContent: gateway.Envelope{Code: code, Message: "m", Category: category}}
	}
	for _, c := range []struct {
		name          string
		out           *mcp.CallToolResult
		err           error
		outcome, code string
	}{
		{"ok", &mcp.CallToolResult{}, nil, OK, ""},
		{"tool error", &mcp.CallToolResult{IsError: true}, nil, ToolError, ""},
		{"tool error with its own structured content", &mcp.CallToolResult{IsError: true, StructuredContent: map[string]any{"reason": "x"}}, nil, ToolError, ""},
		{"policy envelope", envelope(gateway.CodeToolNotInProfile, gateway.CategoryPolicy), nil, Denied, gateway.CodeToolNotInProfile},
		{"upstream envelope", envelope(gateway.CodeUpstreamUnavailable, gateway.CategoryUpstream), nil, Error, gateway.CodeUpstreamUnavailable},
		{"invalid params", nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: `unknown tool "x"`}, UnknownTool, ""},
		{"other JSON-RPC error", nil, &jsonrpc.Error{Code: -32021, Message: "capability"}, Error, ""},
		{"transport", nil, errors.New("connection reset"), Error, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := classifyCall("x", c.out, c.err)
			if r.outcome != c.outcome || r.code != c.code {
				t.Errorf("outcome %q code %q, want %q %q", r.outcome, r.code, c.outcome, c.code)
			}
		})
	}
}

// TestLimitedBuffer: a command's stderr is kept up to the limit and the
// writer never fails (a child blocked on its stderr would hang the session).
func TestLimitedBuffer(t *testing.T) {
	b := &limitedBuffer{max: 8}
	for _, p := range []string{"abc", "defgh", "ijk", " "} {
		if n, err := b.Write([]byte(p)); n != len(p) || err != nil {
			t.Fatalf("Write(%q) = %d, %v; want %d, nil", p, n, err, len(p))
		}
	}
	if got := b.String(); got != "abcdefgh" {
		t.Errorf("kept %q, want the first 8 bytes %q", got, "abcdefgh")
	}
}

// Each replayed session carries a traceparent of its own: a gateway
// serving 2026-07-28 groups requests into usage sessions by its trace id.
func TestNewTraceparent(t *testing.T) {
	pattern := regexp.MustCompile(`^00-[0-9a-f]{32}-[0-9a-f]{16}-01$`)
	a, b := newTraceparent(), newTraceparent()
	if !pattern.MatchString(a) || !pattern.MatchString(b) {
		t.Errorf("traceparents %q, %q: want 00-TRACEID-SPANID-01", a, b)
	}
	if a[3:35] == b[3:35] {
		t.Errorf("two sessions share the trace id %s", a[3:35])
	}
}
