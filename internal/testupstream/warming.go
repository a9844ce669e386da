package testupstream

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// WarmingServer serves a go-sdk streamable HTTP server named name, with one
// tool "one", and returns its URL and a switch: while the switch is on, a
// fake in front of the server answers each tools/list 503, as a load
// balancer does before a warming server (the SDK's client keeps its
// session). A real server cannot be made to answer that on purpose. The
// server closes with the test.
func WarmingServer(t testing.TB, name string) (url string, failList *atomic.Bool) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: name}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "one"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		return &mcp.CallToolResult{}, nil, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	failList = new(atomic.Bool)
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost && failList.Load() {
			body, _ := io.ReadAll(r.Body)
			if bytes.Contains(body, []byte(`"tools/list"`)) {
				http.Error(w, "warming up", http.StatusServiceUnavailable)
				return
			}
			r.Body = io.NopCloser(bytes.NewReader(body))
		}
		h.ServeHTTP(w, r)
	}))
	t.Cleanup(ts.Close)
	return ts.URL, failList
}
