package gateway

import (
	"context"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestUpstreamRequestsToSessionlessCallers: an upstream's elicitation and
// sampling requests during a call reach a 2025-11-25 client, over HTTP as
// over stdio; a 2026-07-28 client, on which a server cannot send requests
// during a call, is never asked, and the upstream is refused saying why,
// which it puts in its result.
func TestUpstreamRequestsToSessionlessCallers(t *testing.T) {
	g := relayGateway(t)
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	var asked atomic.Int32
	opts := &mcp.ClientOptions{
		ElicitationHandler: func(context.Context, *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			asked.Add(1)
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		},
		CreateMessageHandler: func(context.Context, *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			asked.Add(1)
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "sampled"}}, nil
		},
	}
	overHTTP := func(protocol string) func(t *testing.T) *mcp.ClientSession {
		return func(t *testing.T) *mcp.ClientSession {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "caller", Version: "1"}, opts).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			return cs
		}
	}
	overStdio := func(protocol string) func(t *testing.T) *mcp.ClientSession {
		return func(t *testing.T) *mcp.ClientSession {
			return connectSession(t, g, "", opts, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
		}
	}
	const why = "speaks MCP 2026-07-28, on which a server cannot send it requests during a call"
	cases := []struct {
		name    string
		connect func(t *testing.T) *mcp.ClientSession
		relayed bool
	}{
		{"2026-07-28 over HTTP", overHTTP("2026-07-28"), false},
		{"2026-07-28 over stdio", overStdio("2026-07-28"), false},
		{"2025-11-25 over HTTP", overHTTP("2025-11-25"), true},
		{"2025-11-25 over stdio", overStdio("2025-11-25"), true},
	}
	calls := []struct {
		tool, request string
		args          map[string]any
		answer        string // in the result when relayed
	}{
		{"test_elicitation", "elicitation", map[string]any{"message": "name?"}, "ada"},
		{"test_sampling", "sampling request", map[string]any{"prompt": "hi"}, "sampled"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cs := c.connect(t)
			for _, call := range calls {
				asked.Store(0)
				res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: call.tool, Arguments: call.args})
				if err != nil {
					t.Fatalf("%s: %v", call.tool, err)
				}
				text := ""
				if len(res.Content) > 0 {
					if tc, ok := res.Content[0].(*mcp.TextContent); ok {
						text = tc.Text
					}
				}
				if c.relayed {
					if res.IsError || asked.Load() != 1 || !strings.Contains(text, call.answer) {
						t.Errorf("%s: result %q (error %v), client asked %d times: want the client's answer", call.tool, text, res.IsError, asked.Load())
					}
					continue
				}
				if asked.Load() != 0 {
					t.Errorf("%s: the 2026-07-28 client was asked %d times", call.tool, asked.Load())
				}
				if want := call.request + ` from upstream "everything" refused: the client of the call in flight ` + why; !res.IsError || !strings.Contains(text, want) {
					t.Errorf("%s: result %q (error %v), want the upstream's error saying\n%s", call.tool, text, res.IsError, want)
				}
			}
		})
	}
}
