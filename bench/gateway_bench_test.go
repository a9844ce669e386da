package bench_test

// Gateway benchmarks. Each measures the gateway and its baseline in the same
// loop, interleaved, and reports their ratio, so the figure holds across
// machines:
//
//	go test ./bench -run '^$' -bench 'ToolsList|ToolsCall|Gate|TelemetryOnOff'

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// syntheticTools returns n tools shaped like real ones: a sentence of
// description and a three-property object schema.
func syntheticTools(n int) []*mcp.Tool {
	tools := make([]*mcp.Tool, n)
	for i := range tools {
		tools[i] = &mcp.Tool{
			Name:        fmt.Sprintf("tool_%03d", i),
			Description: fmt.Sprintf("Tool number %d: looks up an item by id and returns its fields, optionally filtered by a query.", i),
			InputSchema: map[string]any{
				"type": "object",
				"properties": map[string]any{
					"id":    map[string]any{"type": "string", "description": "Item id"},
					"query": map[string]any{"type": "string", "description": "Optional filter"},
					"limit": map[string]any{"type": "integer", "minimum": 1},
				},
				"required": []any{"id"},
			},
		}
	}
	return tools
}

// resolveProfile resolves one profile "p" holding the first n tools.
func resolveProfile(tb testing.TB, tools []*mcp.Tool, n int) *profiles.Resolved {
	tb.Helper()
	names := make([]string, n)
	for i := range names {
		names[i] = tools[i].Name
	}
	set := &profiles.Set{File: &profiles.File{Version: profiles.Version, Default: "p",
		Profiles: []profiles.Profile{{Name: "p", Tools: names}}}}
	r, err := set.Resolve(tools)
	if err != nil {
		tb.Fatal(err)
	}
	return r
}

// echoServer is the go-sdk's own server with tools added: each answers "ok".
func echoServer(tools []*mcp.Tool) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-baseline", Version: "1"}, nil)
	for _, t := range tools {
		s.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	return s
}

// connect opens a client session to srv over an in-memory transport.
func connect(tb testing.TB, srv *mcp.Server) *mcp.ClientSession {
	tb.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		tb.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		cs.Close()
		ss.Wait()
	})
	return cs
}

// newGateway serves resolved from up.
func newGateway(tb testing.TB, up gateway.Upstream, resolved *profiles.Resolved, rec gateway.Recorder) *gateway.Gateway {
	tb.Helper()
	g, err := gateway.New(context.Background(), gateway.Options{Upstream: up, Profiles: resolved, Recorder: rec, ServerName: "toolprof"})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { g.Close() })
	return g
}

// gatewaySession connects a client to profile p of g.
func gatewaySession(tb testing.TB, g *gateway.Gateway) *mcp.ClientSession {
	tb.Helper()
	srv, err := g.Server("p")
	if err != nil {
		tb.Fatal(err)
	}
	return connect(tb, srv)
}

// pair times a and its baseline base alternately, and reports the median
// of each (as metrics aName and baseName, in ns) and the median of the
// per-iteration ratios, x-baseline. Medians of interleaved pairs keep a burst
// of load on a shared machine from landing on one side only. The
// benchmark's own ns/op is the two together.
func pair(b *testing.B, aName, baseName string, a, base func() error) {
	b.Helper()
	var ta, tbase, ratios []float64
	for b.Loop() {
		t0 := time.Now()
		if err := a(); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if err := base(); err != nil {
			b.Fatal(err)
		}
		da, dbase := float64(t1.Sub(t0)), float64(time.Since(t1))
		ta, tbase = append(ta, da), append(tbase, dbase)
		if dbase > 0 {
			ratios = append(ratios, da/dbase)
		}
	}
	b.ReportMetric(median(ta), aName)
	b.ReportMetric(median(tbase), baseName)
	b.ReportMetric(median(ratios), "x-baseline")
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Clone(xs)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// BenchmarkToolsList: one tools/list of a profile of n tools (out of 500)
// through the gateway, against the go-sdk listing the same n tools itself.
func BenchmarkToolsList(b *testing.B) {
	ctx := context.Background()
	all := syntheticTools(500)
	for _, n := range []int{5, 20, 100, 500} {
		b.Run(fmt.Sprintf("tools=%d", n), func(b *testing.B) {
			g := newGateway(b, gateway.NewCatalogUpstream(&catalog.Catalog{Tools: all}), resolveProfile(b, all, n), nil)
			gw := gatewaySession(b, g)
			sdk := connect(b, echoServer(all[:n]))
			list := func(cs *mcp.ClientSession) func() error {
				return func() error {
					res, err := cs.ListTools(ctx, nil)
					if err == nil && len(res.Tools) != n {
						err = fmt.Errorf("listed %d tools, want %d", len(res.Tools), n)
					}
					return err
				}
			}
			pair(b, "gateway-ns/list", "sdk-ns/list", list(gw), list(sdk))
		})
	}
}

// inProcessUpstream serves tools from the go-sdk's own server, reached by the
// gateway through a real MCP client session over an in-memory transport.
func inProcessUpstream(b *testing.B, tools []*mcp.Tool) gateway.Upstream {
	b.Helper()
	ctx := context.Background()
	ct, st := mcp.NewInMemoryTransports()
	ss, err := echoServer(tools).Connect(ctx, st, nil)
	if err != nil {
		b.Fatal(err)
	}
	up, err := gateway.NewClientUpstream(ctx, ct)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		up.Close()
		ss.Wait()
	})
	return up
}

// BenchmarkToolsCall: the proxy's overhead. One tools/call of the real
// everything-server's test_simple_text through the gateway, against the same
// call made directly to another instance of it, both over stdio.
func BenchmarkToolsCall(b *testing.B) {
	ctx := context.Background()
	server := testupstream.EverythingServer(b)
	start := func() *exec.Cmd { return exec.Command(server) }
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench-client", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: start()}, nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { direct.Close() })
	up, err := gateway.NewClientUpstream(ctx, &mcp.CommandTransport{Command: start()})
	if err != nil {
		b.Fatal(err)
	}
	tools, err := up.ListTools(ctx)
	if err != nil {
		b.Fatal(err)
	}
	resolved := profiles.Full(tools)
	resolved.Profiles["p"] = resolved.Profiles[profiles.FullProfile]
	gw := gatewaySession(b, newGateway(b, up, resolved, nil))
	call := func(cs *mcp.ClientSession) func() error {
		return func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"})
			if err == nil && res.IsError {
				err = fmt.Errorf("test_simple_text failed: %v", res.Content)
			}
			return err
		}
	}
	pair(b, "gateway-ns/call", "direct-ns/call", call(gw), call(direct))
}

// BenchmarkGate: the per-call profile check. The gate (Resolved.Allowed on
// a 100-tool profile of 500) against a map lookup of the same names, and the
// gate's share of a whole tools/call through the gateway.
func BenchmarkGate(b *testing.B) {
	ctx := context.Background()
	all := syntheticTools(500)
	resolved := resolveProfile(b, all, 100)
	members := map[string]bool{}
	for _, t := range resolved.Profiles["p"].Tools {
		members[t] = true
	}
	probe := make([]string, 64)
	for i := range probe {
		probe[i] = all[(i*37)%len(all)].Name
	}
	// Checks are timed in batches: a single one is shorter than the clock
	// reading around it.
	const batch = 1000
	checks := func(check func(string) bool) func() error {
		return func() error {
			n := 0
			for i := range batch {
				if check(probe[i%len(probe)]) {
					n++
				}
			}
			if n == 0 {
				return fmt.Errorf("no probe is in the profile")
			}
			return nil
		}
	}
	gate := checks(func(t string) bool { return resolved.Allowed("p", t) })
	b.Run("Allowed-vs-map", func(b *testing.B) {
		pair(b, "gate-ns/1000-checks", "map-ns/1000-checks", gate, checks(func(t string) bool { return members[t] }))
	})
	b.Run("Allowed-vs-call", func(b *testing.B) {
		gw := gatewaySession(b, newGateway(b, inProcessUpstream(b, all), resolved, nil))
		pair(b, "gate-ns/1000-checks", "gateway-call-ns/call", gate,
			func() error {
				res, err := gw.CallTool(ctx, &mcp.CallToolParams{Name: "tool_001", Arguments: map[string]any{"id": "x"}})
				if err == nil && res.IsError {
					err = fmt.Errorf("tool_001 failed: %v", res.Content)
				}
				return err
			})
	})
}

// BenchmarkTelemetryOnOff: one tools/call through a gateway recording to a
// real bbolt telemetry directory, against the same call through a gateway
// recording nothing, over the same in-process upstream.
func BenchmarkTelemetryOnOff(b *testing.B) {
	ctx := context.Background()
	all := syntheticTools(20)
	resolved := resolveProfile(b, all, 20)
	rec, err := telemetry.OpenRecorder(b.TempDir(), telemetry.RecorderOptions{
		Replica: "bench", Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
	if err != nil {
		b.Fatal(err)
	}
	up := inProcessUpstream(b, all)
	on := gatewaySession(b, newGateway(b, up, resolved, rec))
	off := gatewaySession(b, newGateway(b, up, resolved, nil))
	b.Cleanup(func() {
		if err := rec.Close(); err != nil {
			b.Error(err)
		}
	})
	call := func(cs *mcp.ClientSession) func() error {
		return func() error {
			res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool_003", Arguments: map[string]any{"id": "x"}})
			if err == nil && res.IsError {
				err = fmt.Errorf("tool_003 failed: %s", strings.TrimSpace(fmt.Sprint(res.Content)))
			}
			return err
		}
	}
	pair(b, "telemetry-on-ns/call", "telemetry-off-ns/call", call(on), call(off))
}
