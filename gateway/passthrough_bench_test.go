package gateway

import (
	"context"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/upstream"
)

// BenchmarkRelayedCall prices the gateway's pass-through on a call: the
// same tools/call on the everything-server, straight through upstream.Set
// ("set") and through a gateway session in front of it ("gateway", which
// adds the in-memory client hop, the middleware and the in-flight record).
// Read as the ratio gateway/set in one run.
func BenchmarkRelayedCall(b *testing.B) {
	g := relayGateway(b)
	set := g.opts.Upstream.(*upstream.Set)
	ctx := context.Background()
	b.Run("set", func(b *testing.B) {
		for b.Loop() {
			if _, err := set.CallTool(ctx, &mcp.CallToolParamsRaw{Name: "test_simple_text"}); err != nil {
				b.Fatal(err)
			}
		}
	})
	cs := connectWith(b, g, nil)
	b.Run("gateway", func(b *testing.B) {
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
