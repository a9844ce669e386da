package gateway

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// The benchmarks compare a tools/call and a tools/list made through the
// gateway with the same request made directly to the upstream (the
// baseline), both over in-memory transports, so the ratio is the gateway's
// own overhead.

// benchUpstream starts an in-process SDK server with 30 tools and returns
// a transport connected to it.
func benchUpstream(b *testing.B) mcp.Transport {
	b.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "bench-upstream"}, nil)
	for _, name := range benchToolNames() {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		b.Fatal(err)
	}
	return ct
}

func benchToolNames() []string {
	var names []string
	for i := range 30 {
		names = append(names, "tool_"+string(rune('a'+i%26))+string(rune('a'+i/26)))
	}
	return names
}

func benchClient(b *testing.B, t mcp.Transport) *mcp.ClientSession {
	b.Helper()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(context.Background(), t, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cs.Close() })
	return cs
}

// sessions returns a client session straight to an upstream, and one
// through a gateway in front of another upstream of the same shape.
func sessions(b *testing.B) (direct, viaGateway *mcp.ClientSession) {
	b.Helper()
	direct = benchClient(b, benchUpstream(b))
	up, err := NewClientUpstream(context.Background(), benchUpstream(b))
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(context.Background(), Options{Upstream: up})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	s, _ := g.Server("")
	st, ct := mcp.NewInMemoryTransports()
	if _, err := s.Connect(context.Background(), st, nil); err != nil {
		b.Fatal(err)
	}
	return direct, benchClient(b, ct)
}

func BenchmarkCallTool(b *testing.B) {
	benchDirectAndGateway(b, func(cs *mcp.ClientSession) error {
		_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "tool_aa"})
		return err
	})
}

func BenchmarkListTools(b *testing.B) {
	benchDirectAndGateway(b, func(cs *mcp.ClientSession) error {
		_, err := cs.ListTools(context.Background(), nil)
		return err
	})
}

// benchDirectAndGateway runs op as the sub-benchmarks "direct" (straight to
// an upstream) and "gateway" (through a gateway), the baseline in the same
// run.
func benchDirectAndGateway(b *testing.B, op func(*mcp.ClientSession) error) {
	direct, via := sessions(b)
	for _, c := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"direct", direct}, {"gateway", via}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := op(c.cs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
