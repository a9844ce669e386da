package upstream

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// cyclingServer serves over streamable HTTP an upstream whose tools/list,
// prompts/list and resources/list pages name cursors in a cycle: page ""
// leads to "a", "a" to "b", "b" back to "a". Without a guard a client pages
// forever, its list growing until the caller's context ends.
func cyclingServer(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "cycling", Version: "1"}, nil)
	next := map[string]string{"": "a", "a": "b", "b": "a"}
	s.AddReceivingMiddleware(func(h mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "tools/list":
				c := req.GetParams().(*mcp.ListToolsParams).Cursor
				return &mcp.ListToolsResult{Tools: []*mcp.Tool{{Name: "t" + c, InputSchema: map[string]any{"type": "object"}}}, NextCursor: next[c]}, nil
			case "prompts/list":
				c := req.GetParams().(*mcp.ListPromptsParams).Cursor
				return &mcp.ListPromptsResult{Prompts: []*mcp.Prompt{{Name: "p" + c}}, NextCursor: next[c]}, nil
			case "resources/list":
				c := req.GetParams().(*mcp.ListResourcesParams).Cursor
				return &mcp.ListResourcesResult{Resources: []*mcp.Resource{{Name: "r", URI: "mem://r" + c}}, NextCursor: next[c]}, nil
			}
			return h(ctx, method, req)
		}
	})
	// Capabilities come from registered features.
	s.AddTool(&mcp.Tool{Name: "x", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	s.AddPrompt(&mcp.Prompt{Name: "x"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{}, nil
	})
	s.AddResource(&mcp.Resource{Name: "x", URI: "mem://x"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{}, nil
	})
	front := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(front.Close)
	return front.URL
}

func TestCyclingCursorsEndListing(t *testing.T) {
	url := cyclingServer(t)
	s := startSet(t, `{"mcpServers": {"cyc": {"type": "http", "url": "`+url+`"}}}`, nil, SetOptions{})
	c, _ := s.Client("cyc")
	tests := []struct {
		name string
		list func(ctx context.Context) (int, error)
	}{
		{"client tools", func(ctx context.Context) (int, error) { l, err := c.ListTools(ctx); return len(l), err }},
		{"set tools", func(ctx context.Context) (int, error) { l, err := s.ListTools(ctx); return len(l), err }},
		{"set prompts", func(ctx context.Context) (int, error) { l, err := s.ListPrompts(ctx); return len(l), err }},
		{"set resources", func(ctx context.Context) (int, error) { l, err := s.ListResources(ctx); return len(l), err }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			n, err := tt.list(ctx)
			if errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				t.Fatalf("listing paged until the context ended (%d items, %v)", n, err)
			}
			// Set listings skip a failing upstream; a client's says why.
			if tt.name == "client tools" && (err == nil || !strings.Contains(err.Error(), `cursor "a"`)) {
				t.Errorf("err = %v, want one naming the repeated cursor", err)
			}
			if n > 3 {
				t.Errorf("listed %d items from a 3-page cycle", n)
			}
		})
	}
}

func TestAllPagesCursorCycle(t *testing.T) {
	tests := []struct {
		name    string
		next    map[string]string
		want    int
		wantErr string
	}{
		{"ends", map[string]string{"": "a", "a": "b", "b": ""}, 3, ""},
		{"same cursor again", map[string]string{"": "a", "a": "a"}, 0, `repeated cursor "a"`},
		{"two-page cycle", map[string]string{"": "a", "a": "b", "b": "a"}, 0, `repeated cursor "a"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			got, err := allPages(ctx, func(cursor string) ([]string, string, error) {
				return []string{cursor}, tt.next[cursor], nil
			})
			if tt.wantErr == "" {
				if err != nil || len(got) != tt.want {
					t.Fatalf("got %d items, %v; want %d", len(got), err, tt.want)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Fatalf("err = %v (%d items), want %q", err, len(got), tt.wantErr)
			}
		})
	}
}
