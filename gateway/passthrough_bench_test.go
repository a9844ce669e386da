package gateway

import (
	"context"
	"os"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/internal/testupstream"
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

// BenchmarkStdioCall prices a tools/call through the gateway over stdio
// as a client makes it: the go-sdk client (2026-07-28, its _meta on every
// call) over OS pipes to the gateway, which relays to the
// everything-server on stdio, against the same client calling another
// everything-server directly. Each iteration makes one call on every
// side, in a rotating order; read the medians' ratios, fast-x-direct
// (the fast path) and sdk-x-direct (the SDK's dispatch), and run with
// -cpuprofile to see the gateway's share.
func BenchmarkStdioCall(b *testing.B) {
	g := relayGateway(b)
	ctx := context.Background()
	client := func(tr mcp.Transport) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx, tr, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		return cs
	}
	served := func(fast bool) *mcp.ClientSession {
		inR, inW, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		outR, outW, err := os.Pipe()
		if err != nil {
			b.Fatal(err)
		}
		done := make(chan struct{})
		go func() {
			defer close(done)
			g.serveStdio(ctx, "", &jsonrpcwire.Transport{Reader: inR, Writer: outW}, fast)
			inR.Close()
			outW.Close()
		}()
		b.Cleanup(func() { <-done })
		return client(&mcp.IOTransport{Reader: outR, Writer: inW})
	}
	names := []string{"direct", "fast", "sdk"}
	sides := []*mcp.ClientSession{client(&mcp.CommandTransport{Command: exec.Command(testupstream.EverythingServer(b))}), served(true), served(false)}
	times := make([][]float64, len(sides))
	call := func(i int) {
		t0 := time.Now()
		if _, err := sides[i].CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
			b.Fatalf("%s: %v", names[i], err)
		}
		times[i] = append(times[i], float64(time.Since(t0)))
	}
	for range 20 { // warm every side up
		for i := range sides {
			call(i)
		}
	}
	clear(times)
	n := 0
	for b.Loop() {
		for j := range sides {
			call((n + j) % len(sides))
		}
		n++
	}
	med := make([]float64, len(sides))
	for i := range sides {
		slices.Sort(times[i])
		med[i] = times[i][len(times[i])/2]
		b.ReportMetric(med[i], names[i]+"-ns/call")
	}
	b.ReportMetric(med[1]/med[0], "fast-x-direct")
	b.ReportMetric(med[2]/med[0], "sdk-x-direct")
}
