package otelmcp

import (
	"context"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/toolprof/toolprof/gateway"
)

// sinkCollector is a real OTLP/HTTP traces endpoint that decodes and
// discards what it is sent.
func sinkCollector(b *testing.B) string {
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err := req.UnmarshalProto(body); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Write(resp)
	}))
	b.Cleanup(hs.Close)
	return hs.Listener.Addr().String()
}

// downCollector is an address nothing listens on.
func downCollector(b *testing.B) string {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

func otlpExporter(b *testing.B, addr string) *Exporter {
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(addr), otlptracehttp.WithInsecure())
	if err != nil {
		b.Fatal(err)
	}
	e, err := New(ctx, Config{SpanExporter: exp, MetricReader: sdkmetric.NewManualReader()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		e.Shutdown(ctx)
	})
	return e
}

// BenchmarkToolsCallExport times tools/call through three gateways in
// front of one upstream, in turn within each iteration in a shuffled
// order: export off, on with the collector up, and on with it down. It reports the p50 of "up"
// over "off" and the p99 of "down" over "up".
func BenchmarkToolsCallExport(b *testing.B) {
	u := startMetaUpstream(b)
	modes := []struct {
		name string
		e    *Exporter
	}{
		{"off", nil},
		{"up", otlpExporter(b, sinkCollector(b))},
		{"down", otlpExporter(b, downCollector(b))},
	}
	sessions := make([]*mcp.ClientSession, len(modes))
	for i, m := range modes {
		sessions[i] = connect(b, observedGateway(b, u, m.e))
	}
	ctx := context.Background()
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}, Meta: mcp.Meta{"traceparent": clientTraceparent}}
	times := make([][]time.Duration, len(modes))
	b.ResetTimer()
	order := []int{0, 1, 2}
	for b.Loop() {
		// In a new order each time: what a call leaves running (its spans
		// are ended on goroutines of their own) lands on any mode's next
		// call alike, not always on the same one.
		rand.Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
		for _, i := range order {
			start := time.Now()
			if _, err := sessions[i].CallTool(ctx, params); err != nil {
				b.Fatal(err)
			}
			times[i] = append(times[i], time.Since(start))
		}
	}
	b.StopTimer()
	q := func(d []time.Duration, p float64) float64 {
		s := slices.Clone(d)
		slices.Sort(s)
		return float64(s[int(p*float64(len(s)-1))])
	}
	b.ReportMetric(q(times[1], 0.5)/q(times[0], 0.5), "p50-up/off")
	b.ReportMetric(q(times[2], 0.5)/q(times[1], 0.5), "p50-down/up")
	b.ReportMetric(q(times[2], 0.99)/q(times[1], 0.99), "p99-down/up")
	b.ReportMetric(q(times[0], 0.5)/1e3, "p50-off-µs")
}

// discardSpans is a span exporter that keeps nothing: the benchmarks
// below time the request path, not the collector.
type discardSpans struct{}

func (discardSpans) ExportSpans(context.Context, []sdktrace.ReadOnlySpan) error { return nil }
func (discardSpans) Shutdown(context.Context) error                             { return nil }

// BenchmarkObserveToolsCall is what export adds to one tools/call on the
// request path: the SERVER span and its metric, and the CLIENT span of the
// upstream call with its _meta and metric.
func BenchmarkObserveToolsCall(b *testing.B) {
	ctx := context.Background()
	e, err := New(ctx, Config{SpanExporter: discardSpans{}, MetricReader: sdkmetric.NewManualReader()})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { e.Shutdown(ctx) })
	upstream := e.UpstreamMiddleware()(func(context.Context, string, mcp.Request) (mcp.Result, error) {
		return &mcp.CallToolResult{}, nil
	})
	meta := mcp.Meta{"traceparent": clientTraceparent}
	b.ReportAllocs()
	for b.Loop() {
		r := &gateway.Served{Method: "tools/call", Transport: "http", Meta: meta, MCPSession: "SESSION1234", RequestID: "7"}
		sctx, end := e.Serve(ctx, r)
		req := &mcp.ClientRequest[*mcp.CallToolParams]{Params: &mcp.CallToolParams{Name: "echo", Meta: mcp.Meta{"traceparent": clientTraceparent}}}
		upstream(sctx, "tools/call", req)
		r.Tool, r.Profile, r.UsageSession, r.ProtocolVersion, r.Outcome, r.ReachedBy = "echo", "core", "u-1", testProtocol, "ok", gateway.ReachedListed
		end(r)
	}
}
