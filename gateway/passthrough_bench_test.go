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
// Read as the ratio gateway/set in one run. "stdio-sdk" and "stdio-fast"
// are the same call as the go-sdk client sends it at 2026-07-28, over a
// pipe to ServeStdio, through the SDK's dispatch and through the fast
// path (fastcall.go); read as the ratio stdio-fast/stdio-sdk.
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
	for _, fast := range []bool{false, true} {
		name := "stdio-sdk"
		if fast {
			name = "stdio-fast"
		}
		rc := serveRaw(b, g, "", fast)
		for _, s := range handshake(protocolSessionless) {
			rc.send(s.line)
			if s.await != "" {
				rc.await(s.await)
			}
		}
		id := 0
		b.Run(name, func(b *testing.B) {
			for b.Loop() {
				id++
				s := call(protocolSessionless, id, "test_simple_text", `{}`)
				rc.send(s.line)
				rc.await(s.await)
			}
		})
		rc.close()
	}
	cs := connectWith(b, g, nil)
	b.Run("gateway", func(b *testing.B) {
		for b.Loop() {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
				b.Fatal(err)
			}
		}
	})
}
