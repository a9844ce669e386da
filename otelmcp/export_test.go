package otelmcp

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// secretArg is an argument value that must appear in no span.
const secretArg = "s3cr3t-argument-value"

// metaUpstream is a real MCP server over streamable HTTP, with tools, a
// resource, a resource template, a prompt and completion, that records
// the traceparent each request arrived with.
type metaUpstream struct {
	url string
	mu  sync.Mutex
	got map[string][]string // method -> traceparent of each request, in order
}

func startMetaUpstream(t testing.TB) *metaUpstream {
	t.Helper()
	u := &metaUpstream{got: map[string][]string{}}
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
		CompletionHandler: func(context.Context, *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
			return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{"a"}}}, nil
		},
	})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			var tp string
			if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() {
				tp, _ = p.GetMeta()["traceparent"].(string)
			}
			u.mu.Lock()
			u.got[method] = append(u.got[method], tp)
			u.mu.Unlock()
			return next(ctx, method, req)
		}
	})
	for _, name := range []string{"echo", "hidden"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "result"}}}, nil
		})
	}
	s.AddResource(&mcp.Resource{URI: "meta://doc", Name: "doc"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "meta://doc", Text: "text"}}}, nil
	})
	s.AddResourceTemplate(&mcp.ResourceTemplate{URITemplate: "meta://doc/{n}", Name: "docs"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return nil, mcp.ResourceNotFoundError("meta://doc/x")
	})
	s.AddPrompt(&mcp.Prompt{Name: "greet"}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
		return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	u.url = hs.URL
	return u
}

// traceparents are those of the method's requests, in order.
func (u *metaUpstream) traceparents(method string) []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return append([]string(nil), u.got[method]...)
}

// observedGateway serves u's tools under a profile "core" holding only
// echo, observed by e.
func observedGateway(t testing.TB, u *metaUpstream, e *Exporter) *gateway.Gateway {
	t.Helper()
	ctx := context.Background()
	doc := &launch.Resolved{Version: 1, Servers: []launch.ResolvedServer{{Name: "meta", Transport: launch.StreamableHTTP, URL: u.url}}}
	opts := upstream.SetOptions{RequireAll: true}
	if e != nil {
		opts.Client.SendingMiddleware = e.UpstreamMiddleware()
		opts.Client.OnRequestID = e.UpstreamRequestID
	}
	set, err := upstream.StartSet(ctx, doc, opts)
	if err != nil {
		t.Fatal(err)
	}
	tools, err := set.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	file, err := profiles.DecodeFile(strings.NewReader("version = 1\ndefault = \"core\"\n\n[[profile]]\nname = \"core\"\ntools = [\"echo\"]\n"), "profiles.generated.toml")
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := (&profiles.Set{File: file}).Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	gopts := gateway.Options{Upstream: set, Tools: tools, Profiles: resolved}
	if e != nil {
		gopts.Observer = e
	}
	g, err := gateway.New(ctx, gopts)
	if err != nil {
		set.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// connect opens a client session on g's default profile over in-memory
// transports (recorded as stdio).
func connect(t testing.TB, g *gateway.Gateway) *mcp.ClientSession {
	t.Helper()
	s, err := g.Server("")
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := s.Connect(context.Background(), st, nil)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: testProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close(); ss.Wait() })
	return cs
}

func newTestExporter(t *testing.T) (*Exporter, *tracetest.InMemoryExporter, *sdkmetric.ManualReader) {
	t.Helper()
	spans := tracetest.NewInMemoryExporter()
	reader := sdkmetric.NewManualReader()
	e, err := New(context.Background(), Config{SpanExporter: spans, MetricReader: reader, ServiceName: "gw-test"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { e.Shutdown(context.Background()) })
	return e, spans, reader
}

// flushed returns the spans exported so far.
func flushed(t *testing.T, e *Exporter, spans *tracetest.InMemoryExporter) tracetest.SpanStubs {
	t.Helper()
	e.ends.wait(context.Background())
	if err := e.tp.ForceFlush(context.Background()); err != nil {
		t.Fatal(err)
	}
	return spans.GetSpans()
}

func attrs(s tracetest.SpanStub) map[string]string {
	m := map[string]string{}
	for _, kv := range s.Attributes {
		m[string(kv.Key)] = kv.Value.Emit()
	}
	return m
}

func findSpan(t *testing.T, spans tracetest.SpanStubs, name string, kind trace.SpanKind) tracetest.SpanStub {
	t.Helper()
	var names []string
	for _, s := range spans {
		if s.Name == name && s.SpanKind == kind {
			return s
		}
		names = append(names, s.Name+"/"+s.SpanKind.String())
	}
	t.Fatalf("no %s span %q among %v", kind, name, names)
	return tracetest.SpanStub{}
}

const testProtocol = "2025-11-25"

const clientTraceparent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func TestSpansFollowTheConventions(t *testing.T) {
	u := startMetaUpstream(t)
	e, spans, reader := newTestExporter(t)
	g := observedGateway(t, u, e)
	cs := connect(t, g)
	ctx := context.Background()
	if _, err := cs.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{
		Meta:      mcp.Meta{"traceparent": clientTraceparent, "tracestate": "rojo=00f067aa0ba902b7"},
		Name:      "echo",
		Arguments: map[string]any{"text": secretArg},
	})
	if err != nil || res.IsError {
		t.Fatalf("tools/call echo = %+v, %v", res, err)
	}
	got := flushed(t, e, spans)

	server := findSpan(t, got, "tools/call echo", trace.SpanKindServer)
	client := findSpan(t, got, "tools/call echo", trace.SpanKindClient)
	if tid := server.SpanContext.TraceID().String(); tid != "4bf92f3577b34da6a3ce929d0e0e4736" {
		t.Errorf("server span trace %s: want the client's traceparent's", tid)
	}
	if p := server.Parent.SpanID().String(); p != "00f067aa0ba902b7" || !server.Parent.IsRemote() {
		t.Errorf("server span parent %s (remote %v): want the client's span 00f067aa0ba902b7", p, server.Parent.IsRemote())
	}
	if client.Parent.SpanID() != server.SpanContext.SpanID() || client.SpanContext.TraceID() != server.SpanContext.TraceID() {
		t.Errorf("client span parent %s: want the server span %s", client.Parent.SpanID(), server.SpanContext.SpanID())
	}
	want := fmt.Sprintf("00-%s-%s-01", client.SpanContext.TraceID(), client.SpanContext.SpanID())
	if tps := u.traceparents("tools/call"); len(tps) != 1 || tps[0] != want {
		t.Errorf("upstream received traceparent %q: want the client span's %q", tps, want)
	}
	sa := attrs(server)
	for k, v := range map[string]string{
		AttrMethodName: "tools/call", AttrToolName: "echo", AttrOperationName: "execute_tool",
		AttrNetworkTransport: "pipe", AttrProfile: "core", AttrOutcome: "ok", AttrReachedBy: "listed",
		AttrProtocolVersion: testProtocol,
	} {
		if sa[k] != v {
			t.Errorf("server span %s = %q, want %q", k, sa[k], v)
		}
	}
	if sa[AttrUsageSession] == "" {
		t.Errorf("server span has no %s: %v", AttrUsageSession, sa)
	}
	if _, ok := sa[AttrErrorType]; ok {
		t.Errorf("a successful call has error.type %q", sa[AttrErrorType])
	}
	list := findSpan(t, got, "tools/list", trace.SpanKindServer)
	if n := attrs(list)[AttrToolDefinitionsBytes]; n == "" || n == "0" {
		t.Errorf("tools/list span %s = %q: want the listing's size", AttrToolDefinitionsBytes, n)
	}
	findSpan(t, got, "initialize", trace.SpanKindServer)
	b, _ := json.Marshal(got)
	if strings.Contains(string(b), secretArg) || strings.Contains(string(b), "result") && strings.Contains(string(b), `"Value":"result"`) {
		t.Errorf("an argument value or a result is in the spans")
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	metrics := map[string]metricdata.Aggregation{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics[m.Name] = m.Data
		}
	}
	for _, name := range []string{MetricServerOperationDuration, MetricClientOperationDuration, MetricToolDefinitionsTokens} {
		if _, ok := metrics[name]; !ok {
			t.Errorf("no metric %s among %v", name, metrics)
		}
	}
	cs.Close()
	for deadline := time.Now().Add(10 * time.Second); metrics[MetricServerSessionDuration] == nil; time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("no %s after the session ended", MetricServerSessionDuration)
		}
		if err := reader.Collect(ctx, &rm); err != nil {
			t.Fatal(err)
		}
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				metrics[m.Name] = m.Data
			}
		}
	}
	if h, ok := metrics[MetricServerOperationDuration].(metricdata.Histogram[float64]); ok {
		if b := h.DataPoints[0].Bounds; len(b) != len(durationBuckets) || b[0] != 0.01 || b[len(b)-1] != 300 {
			t.Errorf("%s bounds %v: want the conventions' %v", MetricServerOperationDuration, b, durationBuckets)
		}
	}
}

// TestToolDefinitionsTokensAreTheModelMeasure: the tokens a tools/list
// span and metric report for a profile are the model measure package
// exchange takes of the same profile's listing (the handshake budget's).
func TestToolDefinitionsTokensAreTheModelMeasure(t *testing.T) {
	u := startMetaUpstream(t)
	ctx := context.Background()
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := observedGateway(t, u, nil).Server("")
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exchange.Measure(ctx, srv, exchange.Options{Counter: counter})
	if err != nil {
		t.Fatal(err)
	}
	model, err := exchange.ModelMeasure(ex, counter)
	if err != nil {
		t.Fatal(err)
	}
	want := model[price.DefaultFamily].Tools[price.O200kBase]
	if want == 0 {
		t.Fatal("the model measure of profile core is 0 tokens")
	}

	e, spans, reader := newTestExporter(t)
	cs := connect(t, observedGateway(t, u, e))
	for range 2 { // the second listing is measured from the cache
		if _, err := cs.ListTools(ctx, nil); err != nil {
			t.Fatal(err)
		}
	}
	list := findSpan(t, flushed(t, e, spans), "tools/list", trace.SpanKindServer)
	if got := attrs(list)[AttrToolDefinitionsTokens]; got != strconv.Itoa(want) {
		t.Errorf("tools/list span %s = %q, want the model measure %d", AttrToolDefinitionsTokens, got, want)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	var points []metricdata.HistogramDataPoint[int64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[int64]); ok && m.Name == MetricToolDefinitionsTokens {
				points = append(points, h.DataPoints...)
			}
		}
	}
	if len(points) != 1 {
		t.Fatalf("%s has %d data points, want 1 (profile core)", MetricToolDefinitionsTokens, len(points))
	}
	p := points[0]
	if v, _ := p.Attributes.Value(AttrProfile); v.AsString() != "core" {
		t.Errorf("data point profile %q, want core", v.AsString())
	}
	min, _ := p.Min.Value()
	max, _ := p.Max.Value()
	if p.Count != 2 || min != int64(want) || max != int64(want) || p.Sum != 2*int64(want) {
		t.Errorf("%s: count %d min %d max %d sum %d; want 2 listings of %d tokens", MetricToolDefinitionsTokens, p.Count, min, max, p.Sum, want)
	}
}

func TestRefusedCallsAreAttributed(t *testing.T) {
	u := startMetaUpstream(t)
	e, spans, _ := newTestExporter(t)
	g := observedGateway(t, u, e)
	cs := connect(t, g)
	ctx := context.Background()
	long := strings.Repeat("x", 500)
	tests := []struct {
		name, tool, span, outcome, errType string
	}{
		{"outside the profile", "hidden", "tools/call hidden", "denied", "tool_error"},
		{"unknown, bounded", long, "", "unknown_tool", "-32602"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			spans.Reset()
			cs.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool, Arguments: map[string]any{"a": secretArg}})
			got := flushed(t, e, spans)
			var s tracetest.SpanStub
			for _, c := range got {
				if c.SpanKind == trace.SpanKindClient && attrs(c)[AttrMethodName] == "tools/call" {
					t.Errorf("a refused call was sent upstream (%s)", c.Name)
				}
				if c.SpanKind == trace.SpanKindServer && attrs(c)[AttrMethodName] == "tools/call" {
					s = c
				}
			}
			a := attrs(s)
			if tt.span != "" && s.Name != tt.span {
				t.Errorf("span name %q, want %q", s.Name, tt.span)
			}
			if len(s.Name) >= len(long) || len(a[AttrToolName]) >= len(long) {
				t.Errorf("unbounded tool name in span %q (%d bytes)", s.Name, len(a[AttrToolName]))
			}
			if a[AttrOutcome] != tt.outcome || a[AttrErrorType] != tt.errType || a[AttrReachedBy] != "" {
				t.Errorf("outcome %q error.type %q reached_by %q: want %q %q none", a[AttrOutcome], a[AttrErrorType], a[AttrReachedBy], tt.outcome, tt.errType)
			}
			if s.Status.Code.String() != "Error" || strings.Contains(s.Status.Description, secretArg) {
				t.Errorf("status %+v: want Error described by its type", s.Status)
			}
		})
	}
}

// hungCollector is a real HTTP endpoint that accepts OTLP requests and
// never answers them, until the test ends.
func hungCollector(t *testing.T) string {
	t.Helper()
	release := make(chan struct{})
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	t.Cleanup(func() { close(release); hs.Close() })
	return hs.Listener.Addr().String()
}

func TestHungCollectorDropsSpansAndFailsNoCall(t *testing.T) {
	u := startMetaUpstream(t)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(hungCollector(t)), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, Config{SpanExporter: exp, MetricReader: sdkmetric.NewManualReader(), MaxQueue: 4})
	if err != nil {
		t.Fatal(err)
	}
	g := observedGateway(t, u, e)
	cs := connect(t, g)
	const calls = 20
	for i := range calls {
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}})
		if err != nil || res.IsError {
			t.Fatalf("call %d with the collector hung: %+v, %v", i, res, err)
		}
	}
	e.ends.wait(ctx)
	h := g.Health().OTel
	if h == nil {
		t.Fatal("health has no otel counts")
	}
	// Two spans a call, at most 4 queued and one batch of 4 in the hung
	// export: the rest dropped.
	if h.Dropped < 2*calls-8 {
		t.Errorf("health otel %+v: want at least %d dropped", *h, 2*calls-8)
	}
	sctx, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	e.Shutdown(sctx) // gives up on the hung export
}

func TestEnabled(t *testing.T) {
	tests := []struct {
		name string
		flag bool
		env  map[string]string
		want bool
	}{
		{"off by default", false, nil, false},
		{"flag", true, nil, true},
		{"endpoint", false, map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}, true},
		{"traces endpoint", false, map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://127.0.0.1:4318/v1/traces"}, true},
		{"sdk disabled", true, map[string]string{"OTEL_SDK_DISABLED": "true"}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Enabled(tt.flag, func(k string) string { return tt.env[k] }); got != tt.want {
				t.Errorf("Enabled = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestBadQueueSizeIsRefused(t *testing.T) {
	_, err := New(context.Background(), Config{
		SpanExporter: tracetest.NewInMemoryExporter(), MetricReader: sdkmetric.NewManualReader(),
		Getenv: func(k string) string { return map[string]string{"OTEL_BSP_MAX_QUEUE_SIZE": "lots"}[k] },
	})
	if err == nil || !strings.Contains(err.Error(), `OTEL_BSP_MAX_QUEUE_SIZE="lots"`) {
		t.Errorf("err = %v, want one naming the variable and its value", err)
	}
}

var (
	_ gateway.Observer       = (*Exporter)(nil)
	_ sdktrace.SpanProcessor = (*gate)(nil)
)

// TestEveryUpstreamRequestIsAClientSpan: each request the gateway sends
// upstream while answering one is a CLIENT span named by the conventions,
// child of the SERVER span, and its trace context, not the client's, is
// what the upstream receives in params._meta.
func TestEveryUpstreamRequestIsAClientSpan(t *testing.T) {
	u := startMetaUpstream(t)
	e, spans, _ := newTestExporter(t)
	cs := connect(t, observedGateway(t, u, e))
	ctx := context.Background()
	meta := func() mcp.Meta { return mcp.Meta{"traceparent": clientTraceparent} }
	tests := []struct {
		method, span string
		call         func() error
	}{
		{"tools/call", "tools/call echo", func() error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta(), Name: "echo", Arguments: map[string]any{}})
			return err
		}},
		{"resources/list", "resources/list", func() error {
			_, err := cs.ListResources(ctx, &mcp.ListResourcesParams{Meta: meta()})
			return err
		}},
		{"resources/templates/list", "resources/templates/list", func() error {
			_, err := cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Meta: meta()})
			return err
		}},
		{"resources/read", "resources/read", func() error {
			_, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{Meta: meta(), URI: "meta://doc"})
			return err
		}},
		{"resources/subscribe", "resources/subscribe", func() error {
			return cs.Subscribe(ctx, &mcp.SubscribeParams{Meta: meta(), URI: "meta://doc"})
		}},
		{"resources/unsubscribe", "resources/unsubscribe", func() error {
			return cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{Meta: meta(), URI: "meta://doc"})
		}},
		{"prompts/list", "prompts/list", func() error {
			_, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Meta: meta()})
			return err
		}},
		{"prompts/get", "prompts/get greet", func() error {
			_, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Meta: meta(), Name: "greet"})
			return err
		}},
		{"completion/complete", "completion/complete", func() error {
			_, err := cs.Complete(ctx, &mcp.CompleteParams{Meta: meta(),
				Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "greet"},
				Argument: mcp.CompleteParamsArgument{Name: "who", Value: "a"}})
			return err
		}},
		{"logging/setLevel", "logging/setLevel", func() error {
			return cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Meta: meta(), Level: "debug"})
		}},
	}
	for _, tt := range tests {
		t.Run(tt.method, func(t *testing.T) {
			flushed(t, e, spans)
			spans.Reset()
			if err := tt.call(); err != nil {
				t.Fatalf("%s: %v", tt.method, err)
			}
			got := flushed(t, e, spans)
			server := findSpan(t, got, tt.span, trace.SpanKindServer)
			client := findSpan(t, got, tt.span, trace.SpanKindClient)
			if tid := server.SpanContext.TraceID().String(); tid != "4bf92f3577b34da6a3ce929d0e0e4736" {
				t.Errorf("server span trace %s: want the client's", tid)
			}
			if client.Parent.SpanID() != server.SpanContext.SpanID() || client.SpanContext.TraceID() != server.SpanContext.TraceID() {
				t.Errorf("client span parent %s: want the server span %s", client.Parent.SpanID(), server.SpanContext.SpanID())
			}
			if m := attrs(client)[AttrMethodName]; m != tt.method {
				t.Errorf("client span %s = %q, want %q", AttrMethodName, m, tt.method)
			}
			want := fmt.Sprintf("00-%s-%s-01", client.SpanContext.TraceID(), client.SpanContext.SpanID())
			if tps := u.traceparents(tt.method); len(tps) == 0 || tps[len(tps)-1] != want {
				t.Errorf("upstream received %s with traceparents %q: want the client span's %q last", tt.method, tps, want)
			}
		})
	}
}

// TestGatewaysOwnRequestsAreRootClientSpans: what the gateway asks an
// upstream on its own (initialize, the tools/list of a start) is traced
// too, as a CLIENT span of a trace of its own.
func TestGatewaysOwnRequestsAreRootClientSpans(t *testing.T) {
	u := startMetaUpstream(t)
	e, spans, _ := newTestExporter(t)
	observedGateway(t, u, e)
	got := flushed(t, e, spans)
	for _, method := range []string{"initialize", "tools/list"} {
		s := findSpan(t, got, method, trace.SpanKindClient)
		if s.Parent.IsValid() {
			t.Errorf("%s client span has parent %s: want a root span", method, s.Parent.SpanID())
		}
		want := fmt.Sprintf("00-%s-%s-01", s.SpanContext.TraceID(), s.SpanContext.SpanID())
		if tps := u.traceparents(method); !slices.Contains(tps, want) {
			t.Errorf("upstream received %s with traceparents %q: want the client span's %q", method, tps, want)
		}
	}
}

// refusingCollector is a loopback address whose port was just closed:
// every connection to it is refused.
func refusingCollector(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// TestExportErrorsGoToTheLogger: exports a refusing collector fails are
// counted in health and reported on the gateway's logger, one line for
// many failures, not on the SDK's process-wide handler.
func TestExportErrorsGoToTheLogger(t *testing.T) {
	u := startMetaUpstream(t)
	ctx := context.Background()
	spans, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(refusingCollector(t)), otlptracehttp.WithInsecure(),
		otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	e, err := New(ctx, Config{SpanExporter: spans, MetricReader: sdkmetric.NewManualReader(), Logger: slog.New(slog.NewTextHandler(&log, nil))})
	if err != nil {
		t.Fatal(err)
	}
	g := observedGateway(t, u, e)
	cs := connect(t, g)
	const rounds = 3
	for i := range rounds {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{}}); err != nil || res.IsError {
			t.Fatalf("call %d with the collector refusing: %+v, %v", i, res, err)
		}
		e.ends.wait(ctx)
		if err := e.tp.ForceFlush(ctx); err != nil {
			t.Fatalf("flush %d: %v: want the failure handled, not returned", i, err)
		}
	}
	h := g.Health().OTel
	if h == nil || h.Failed < 2*rounds || h.Exported != 0 {
		t.Errorf("health otel %+v: want every span of %d calls failed", h, rounds)
	}
	lines := strings.Split(strings.TrimSpace(log.String()), "\n")
	if len(lines) != 1 || !strings.Contains(lines[0], "otel: export failed") || !strings.Contains(lines[0], "signal=traces") ||
		!strings.Contains(lines[0], "refused") {
		t.Errorf("logged %q: want one line for %d failed exports, saying the connection was refused", lines, rounds)
	}
	e.Shutdown(ctx)
}

// TestMetricExportErrorsAreCounted: a failed metric export is counted in
// health and logged, not returned to the reader.
func TestMetricExportErrorsAreCounted(t *testing.T) {
	ctx := context.Background()
	metrics, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpoint(refusingCollector(t)), otlpmetrichttp.WithInsecure(),
		otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: false}))
	if err != nil {
		t.Fatal(err)
	}
	var log syncbuf.Buffer
	l := &exportLog{logger: slog.New(slog.NewTextHandler(&log, nil))}
	m := &loggingMetricExporter{Exporter: metrics, log: l}
	for range 2 {
		if err := m.Export(ctx, &metricdata.ResourceMetrics{}); err != nil {
			t.Fatalf("export returned %v: want it handled", err)
		}
	}
	if n := l.metricsFailed.Load(); n != 2 {
		t.Errorf("%d metric exports counted failed, want 2", n)
	}
	if lines := strings.Split(strings.TrimSpace(log.String()), "\n"); len(lines) != 1 || !strings.Contains(lines[0], "signal=metrics") {
		t.Errorf("logged %q: want one line", lines)
	}
}

// TestServerSpansCarryTheRequestID: a SERVER span's jsonrpc.request.id is
// the id the client sent, over stdio and over HTTP, where a client's own
// header of that name is not believed.
func TestServerSpansCarryTheRequestID(t *testing.T) {
	u := startMetaUpstream(t)
	e, spans, _ := newTestExporter(t)
	g := observedGateway(t, u, e)
	initialize := `{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":"` + testProtocol + `","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`
	initialized := `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	call := `{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"echo","arguments":{}}}`

	t.Run("stdio", func(t *testing.T) {
		spans.Reset()
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			done <- g.ServeStdio(context.Background(), "", &jsonrpcwire.Transport{Reader: inR, Writer: outW})
		}()
		answers := bufio.NewScanner(outR)
		send := func(line string, answered bool) {
			t.Helper()
			if _, err := io.WriteString(inW, line+"\n"); err != nil {
				t.Fatal(err)
			}
			if answered && !answers.Scan() {
				t.Fatalf("no answer to %s: %v", line, answers.Err())
			}
		}
		send(fmt.Sprintf(initialize, `"init-1"`), true)
		send(initialized, false)
		send(fmt.Sprintf(call, `"call-7"`), true)
		send(fmt.Sprintf(call, `42`), true)
		inW.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		got := flushed(t, e, spans)
		if id := attrs(findSpan(t, got, "initialize", trace.SpanKindServer))[AttrRequestID]; id != "init-1" {
			t.Errorf("initialize span %s = %q, want init-1", AttrRequestID, id)
		}
		var ids []string
		for _, s := range got {
			if s.SpanKind == trace.SpanKindServer && s.Name == "tools/call echo" {
				ids = append(ids, attrs(s)[AttrRequestID])
			}
		}
		slices.Sort(ids)
		if !slices.Equal(ids, []string{"42", "call-7"}) {
			t.Errorf("tools/call spans' %s %q, want 42 and call-7", AttrRequestID, ids)
		}
	})

	t.Run("http", func(t *testing.T) {
		spans.Reset()
		hs := httptest.NewServer(g.HTTPHandler())
		t.Cleanup(hs.Close)
		session := ""
		post := func(body string) {
			t.Helper()
			req, _ := http.NewRequest(http.MethodPost, hs.URL+"/mcp", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			req.Header.Set("Accept", "application/json, text/event-stream")
			req.Header.Set(jsonrpcwire.RequestIDHeader, `"forged"`)
			if session != "" {
				req.Header.Set("Mcp-Session-Id", session)
				req.Header.Set("Mcp-Protocol-Version", testProtocol)
			}
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode >= 300 {
				t.Fatalf("POST %s: %s", body, resp.Status)
			}
			if s := resp.Header.Get("Mcp-Session-Id"); s != "" {
				session = s
			}
		}
		post(fmt.Sprintf(initialize, `"h-1"`))
		post(initialized)
		post(fmt.Sprintf(call, `"h-2"`))
		got := flushed(t, e, spans)
		for name, want := range map[string]string{"initialize": "h-1", "tools/call echo": "h-2"} {
			if id := attrs(findSpan(t, got, name, trace.SpanKindServer))[AttrRequestID]; id != want {
				t.Errorf("%s span %s = %q, want %q", name, AttrRequestID, id, want)
			}
		}
		// A member "ID" is not the SDK's id (it matches names exactly, as
		// encoding/json does not): such a message's span carries no id
		// rather than the spoofed one.
		spans.Reset()
		post(`{"jsonrpc":"2.0","id":"h-3","ID":"spoof","method":"tools/call","params":{"name":"echo","arguments":{}}}`)
		if id := attrs(findSpan(t, flushed(t, e, spans), "tools/call echo", trace.SpanKindServer))[AttrRequestID]; id != "" {
			t.Errorf("tools/call span with a member ID: %s = %q, want none", AttrRequestID, id)
		}
		for _, s := range got {
			if s.Name == "notifications/initialized" && attrs(s)[AttrRequestID] != "" {
				t.Errorf("a notification's span has %s %q: it has no id", AttrRequestID, attrs(s)[AttrRequestID])
			}
		}
	})
}

// TestShutdownWaitsForSpansBeingEnded: spans are ended off the request
// path, and Shutdown exports those still being ended.
func TestShutdownWaitsForSpansBeingEnded(t *testing.T) {
	e, _, _ := newTestExporter(t)
	ctx := context.Background()
	_, end := e.Serve(ctx, &gateway.Served{Method: "ping", Transport: "stdio"})
	release := make(chan struct{})
	e.ends.n.Add(1) // one more end in flight, held until release
	go func() {
		<-release
		end(&gateway.Served{Method: "ping", Transport: "stdio"})
		e.ends.done()
	}()
	stopped := make(chan struct{})
	go func() {
		e.Shutdown(ctx)
		close(stopped)
	}()
	select {
	case <-stopped: // too early: the span below is lost
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	<-stopped
	// Counted, since the in-memory exporter forgets its spans at shutdown.
	if h := e.Health(); h.Exported != 1 {
		t.Errorf("exported %d spans at shutdown, want the one ended during it", h.Exported)
	}
}

// TestEndsBounded: with maxPendingEnds spans being ended, the next is
// ended before its end function returns, on the request path, rather than
// on one more goroutine.
func TestEndsBounded(t *testing.T) {
	e, _, _ := newTestExporter(t)
	ctx := context.Background()
	e.ends.n.Add(maxPendingEnds) // as many ends in flight as allowed
	sctx, end := e.Serve(ctx, &gateway.Served{Method: "ping", Transport: "stdio"})
	end(&gateway.Served{Method: "ping", Transport: "stdio"})
	if span := trace.SpanFromContext(sctx); span.IsRecording() {
		t.Error("the span is still recording after end returned: ended on another goroutine past the bound")
	}
	if n := e.ends.n.Load(); n != maxPendingEnds {
		t.Errorf("%d ends pending, want %d", n, maxPendingEnds)
	}
	e.ends.n.Add(-maxPendingEnds)
}
