package main

import (
	"context"
	nethttp "net/http"
	"net/http/httptest"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
)

// BenchmarkHTTPCall prices the hardening wrapper (token check, body limit
// and checks, session cap, disconnect watcher) on one tools/call over streamable HTTP on loopback:
// "plain" is the gateway's handler alone, the baseline of the same run.
// The upstream is a recorded catalog, so the call is the gateway's own
// upstream_unavailable answer and the figure is the gateway's path only.
func BenchmarkHTTPCall(b *testing.B) {
	cat := &catalog.Catalog{Tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}}
	for _, arm := range []struct {
		name   string
		harden bool
	}{{"plain", false}, {"hardened", true}} {
		b.Run(arm.name, func(b *testing.B) {
			g, err := gateway.New(context.Background(), gateway.Options{Upstream: gateway.NewCatalogUpstream(cat)})
			if err != nil {
				b.Fatal(err)
			}
			defer g.Close()
			var h nethttp.Handler = g.HTTPHandler()
			client := nethttp.DefaultClient
			if arm.harden {
				// The session cap is on, as by default: it reads
				// every POST without a session.
				hard := &hardening{token: []byte("bench-token"), maxBodyBytes: defaultMaxBodyBytes,
					maxSessions: defaultMaxSessions, openSessions: g.OpenSessions}
				h = hard.handler(h)
				client = &nethttp.Client{Transport: bearer{"bench-token"}}
			}
			srv := httptest.NewServer(h)
			defer srv.Close()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(),
				&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: client, MaxRetries: -1}, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer cs.Close()
			args := map[string]any{"a": 1}
			b.ResetTimer()
			for b.Loop() {
				if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "t", Arguments: args}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
