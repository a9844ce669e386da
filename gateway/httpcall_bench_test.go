package gateway

import (
	"context"
	"net"
	"net/http/httptest"
	"os/exec"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
)

// BenchmarkHTTPCall prices the HTTP fast path (httpcall.go): the go-sdk
// client's tools/call of the everything-server's test_simple_text over
// streamable HTTP on loopback, made in turn on each side of one loop:
// "direct" to an everything-server on HTTP, "sdk" through the gateway's
// handler without the fast path, "fast" through it with it (the gateway's
// upstream is the everything-server on stdio, as make perf runs it). It
// reports the median of each side and their ratios (fast/direct,
// sdk/direct, fast/sdk), which hold across machines better than times:
//
//	go test ./gateway -run '^$' -bench HTTPCall -benchtime 2000x
func BenchmarkHTTPCall(b *testing.B) {
	g := relayGateway(b)
	url := func(fp *httpFast) string {
		srv := httptest.NewServer(g.httpHandler(fp))
		b.Cleanup(srv.Close)
		return srv.URL + "/mcp"
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	cmd := exec.Command(testupstream.EverythingServer(b), "-http", addr, "-stateless=false")
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("everything-server: nothing listens on %s", addr)
		}
	}
	ctx := context.Background()
	type side struct {
		name string
		cs   *mcp.ClientSession
		ds   []time.Duration
	}
	var sides []*side
	for _, s := range []struct{ name, url string }{
		{"direct", "http://" + addr + "/"},
		{"sdk", url(nil)},
		{"fast", url(newHTTPFast(g))},
	} {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
		if err != nil {
			b.Fatal(err)
		}
		b.Cleanup(func() { cs.Close() })
		sides = append(sides, &side{name: s.name, cs: cs})
	}
	call := func(cs *mcp.ClientSession) time.Duration {
		t0 := time.Now()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
		d := time.Since(t0)
		if err != nil || res.IsError {
			b.Fatalf("test_simple_text: %v %+v", err, res)
		}
		return d
	}
	for range 20 { // warm up every side (and teach the fast path its _meta)
		for _, s := range sides {
			call(s.cs)
		}
	}
	i := 0
	for b.Loop() {
		i++
		for j := range sides {
			s := sides[(i+j)%len(sides)] // rotate which side goes first
			s.ds = append(s.ds, call(s.cs))
		}
	}
	median := func(s *side) float64 {
		ds := slices.Clone(s.ds)
		slices.Sort(ds)
		return float64(ds[len(ds)/2])
	}
	direct, sdk, fast := median(sides[0]), median(sides[1]), median(sides[2])
	b.ReportMetric(direct/1e3, "direct-µs")
	b.ReportMetric(sdk/1e3, "sdk-µs")
	b.ReportMetric(fast/1e3, "fast-µs")
	b.ReportMetric(fast/direct, "fast/direct")
	b.ReportMetric(sdk/direct, "sdk/direct")
	b.ReportMetric(fast/sdk, "fast/sdk")
}
