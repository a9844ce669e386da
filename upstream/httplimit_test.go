package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/launch"
)

// TestHTTPAnswerOverLimitSparesTheSession: a real go-sdk HTTP server
// answers one call with more than MaxMessageBytes, as application/json or
// as an SSE event. That call fails with a TooLargeError naming the limit,
// as a stdio server's oversized line does; the session is the same one
// after it (ready, no restart) and the next call is answered.
func TestHTTPAnswerOverLimitSparesTheSession(t *testing.T) {
	const limit = 1 << 20
	for _, tt := range []struct {
		name string
		json bool
	}{
		{"application/json", true},
		{"SSE", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "big", Version: "1"}, nil)
			mcp.AddTool(s, &mcp.Tool{Name: "big"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("A", 3*limit)}}}, nil, nil
			})
			mcp.AddTool(s, &mcp.Tool{Name: "small"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "small"}}}, nil, nil
			})
			ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: tt.json}))
			t.Cleanup(ts.Close)
			doc := launch.Document{Servers: []launch.Server{{Name: "big", Transport: launch.StreamableHTTP, URL: ts.URL, Source: "x.mcp.json:1"}}}
			r, err := doc.Resolve(func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			c := NewClient(r.Servers[0], Options{ConnectTimeout: 5 * time.Second, MaxMessageBytes: limit})
			t.Cleanup(func() { c.Close() })
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			call := func(name string) (*mcp.CallToolResult, error) {
				return c.CallTool(context.Background(), &mcp.CallToolParamsRaw{Name: name, Arguments: json.RawMessage(`{}`)})
			}
			_, err = call("big")
			var tl *TooLargeError
			if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) || tl.Limit != limit || tl.Bytes <= limit || tl.Server != "big" {
				t.Fatalf("big call: %v, want a TooLargeError over the %d-byte limit", err, limit)
			}
			res, err := call("small")
			if err != nil || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "small" {
				t.Fatalf("next call: %v, %v; want it answered", res, err)
			}
			if h := c.Health(); h.State != StateReady || h.Restarts != 0 {
				t.Errorf("health %+v, want the first session still ready", h)
			}
		})
	}
}
