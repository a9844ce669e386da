package otelmcp

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/telemetry"
)

// DefaultMaxQueue is the number of ended spans that may wait for export
// before further ones are dropped (the SDK's own default).
const DefaultMaxQueue = 2048

// durationBuckets are the conventions' bucket boundaries, in seconds, for
// every MCP duration histogram.
var durationBuckets = []float64{0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300}

// Config configures an Exporter. Zero values take the defaults.
type Config struct {
	// SpanExporter receives the spans; nil: OTLP over HTTP, configured by
	// the OTEL_EXPORTER_OTLP_* variables (no traces with
	// OTEL_TRACES_EXPORTER=none).
	SpanExporter sdktrace.SpanExporter
	// MetricReader collects the metrics; nil: a periodic OTLP/HTTP
	// export, configured by the OTEL_EXPORTER_OTLP_* and
	// OTEL_METRIC_EXPORT_* variables (no metrics with
	// OTEL_METRICS_EXPORTER=none).
	MetricReader sdkmetric.Reader
	// MaxQueue bounds the spans waiting for export: past it spans are
	// dropped and counted, never waited for. 0: $OTEL_BSP_MAX_QUEUE_SIZE,
	// else DefaultMaxQueue.
	MaxQueue int
	// ServiceName and ServiceVersion name the service in the resource;
	// OTEL_SERVICE_NAME and OTEL_RESOURCE_ATTRIBUTES override them.
	ServiceName, ServiceVersion string
	// Getenv reads the environment; nil: no variable is set.
	Getenv func(string) string
	// Logger receives failed exports (the SDK would send them to its
	// process-wide error handler), at most one line per ErrorLogEvery
	// saying how many failed since the last; nil discards them. They are
	// counted in Health either way.
	Logger *slog.Logger
}

// ErrorLogEvery spaces the lines that report failed exports: a collector
// that is down fails every export, and one line a minute says so.
const ErrorLogEvery = time.Minute

// Exporter is a gateway.Observer that exports OpenTelemetry spans and
// metrics. Its methods never block on the collector: ended spans go to a
// bounded queue, and metrics are aggregated in memory until collected.
type Exporter struct {
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider // nil with metrics off
	tracer trace.Tracer
	prop   propagation.TextMapPropagator

	serverDuration   metric.Float64Histogram
	clientDuration   metric.Float64Histogram
	sessionDuration  metric.Float64Histogram
	definitionTokens metric.Int64Histogram

	measure *listingMeasure
	gate    *gate
	log     *exportLog
	sets    attributeSets
	ends    pending // spans being ended, off the request path
	// The span kinds' start options, made once: an option is an
	// allocation. Spans take their own timestamps; the durations are
	// measured apart, which costs less than passing the times in.
	serverKind, clientKind []trace.SpanStartOption
}

// Enabled reports whether export is switched on: by the --otel flag, or by
// an OTLP endpoint in the environment, unless OTEL_SDK_DISABLED is true.
func Enabled(flag bool, getenv func(string) string) bool {
	if v, _ := strconv.ParseBool(getenv("OTEL_SDK_DISABLED")); v {
		return false
	}
	return flag || getenv("OTEL_EXPORTER_OTLP_ENDPOINT") != "" || getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") != ""
}

// New starts an Exporter. It contacts no collector: an unreachable one
// shows later, as failed exports in Health.
func New(ctx context.Context, cfg Config) (*Exporter, error) {
	getenv := cfg.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	max := cfg.MaxQueue
	if max == 0 {
		max = DefaultMaxQueue
		if v := getenv("OTEL_BSP_MAX_QUEUE_SIZE"); v != "" {
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 {
				return nil, fmt.Errorf("otel: OTEL_BSP_MAX_QUEUE_SIZE=%q: want a positive number of spans", v)
			}
			max = n
		}
	}
	if max < 0 {
		return nil, fmt.Errorf("otel: max queue %d: must be positive", max)
	}
	name := cfg.ServiceName
	if name == "" {
		name = "toolprof"
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", name)}
	if cfg.ServiceVersion != "" {
		attrs = append(attrs, attribute.String("service.version", cfg.ServiceVersion))
	}
	res, err := resource.New(ctx, resource.WithAttributes(attrs...), resource.WithFromEnv(), resource.WithTelemetrySDK())
	if err != nil {
		return nil, fmt.Errorf("otel: resource (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES): %w", err)
	}

	measure, err := newListingMeasure()
	if err != nil {
		return nil, err
	}
	logger := cfg.Logger
	if logger == nil {
		logger = slog.New(slog.DiscardHandler)
	}
	e := &Exporter{
		prop: propagation.TraceContext{}, measure: measure, log: &exportLog{logger: logger},
		serverKind: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindServer)},
		clientKind: []trace.SpanStartOption{trace.WithSpanKind(trace.SpanKindClient)},
	}
	spans := cfg.SpanExporter
	if spans == nil && getenv("OTEL_TRACES_EXPORTER") != "none" {
		if spans, err = otlptracehttp.New(ctx); err != nil {
			return nil, fmt.Errorf("otel: trace exporter (OTEL_EXPORTER_OTLP_*): %w", err)
		}
	}
	topts := []sdktrace.TracerProviderOption{sdktrace.WithResource(res)}
	if spans != nil {
		e.gate = &gate{max: int64(max)}
		counted := &countingExporter{SpanExporter: spans, gate: e.gate, log: e.log}
		e.gate.SpanProcessor = sdktrace.NewBatchSpanProcessor(counted, sdktrace.WithMaxQueueSize(max))
		topts = append(topts, sdktrace.WithSpanProcessor(e.gate))
	}
	e.tp = sdktrace.NewTracerProvider(topts...)
	e.tracer = e.tp.Tracer("github.com/toolprof/toolprof/otelmcp")

	reader := cfg.MetricReader
	if reader == nil && getenv("OTEL_METRICS_EXPORTER") != "none" {
		exp, err := otlpmetrichttp.New(ctx)
		if err != nil {
			e.tp.Shutdown(ctx)
			return nil, fmt.Errorf("otel: metric exporter (OTEL_EXPORTER_OTLP_*): %w", err)
		}
		reader = sdkmetric.NewPeriodicReader(&loggingMetricExporter{Exporter: exp, log: e.log})
	}
	var meter metric.Meter = noop.NewMeterProvider().Meter("")
	if reader != nil {
		e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res), sdkmetric.WithReader(reader))
		meter = e.mp.Meter("github.com/toolprof/toolprof/otelmcp")
	}
	if err := e.instruments(meter); err != nil {
		e.Shutdown(ctx)
		return nil, err
	}
	return e, nil
}

func (e *Exporter) instruments(m metric.Meter) error {
	var err error
	hist := func(name, desc string) metric.Float64Histogram {
		h, herr := m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc), metric.WithExplicitBucketBoundaries(durationBuckets...))
		err = errors.Join(err, herr)
		return h
	}
	e.serverDuration = hist(MetricServerOperationDuration, "MCP request duration as observed on the gateway, from receipt until the answer is sent.")
	e.clientDuration = hist(MetricClientOperationDuration, "MCP request duration as observed by the gateway calling its upstream.")
	e.sessionDuration = hist(MetricServerSessionDuration, "The duration of the MCP session as observed on the gateway.")
	b, berr := m.Int64Histogram(MetricToolDefinitionsTokens, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of the tool definitions one tools/list page served, per profile, in the model measure (the tools array a client forwards to the model, o200k_base)."),
		metric.WithExplicitBucketBoundaries(250, 1000, 2500, 5000, 10000, 25000, 50000, 100000))
	e.definitionTokens = b
	if err = errors.Join(err, berr); err != nil {
		return fmt.Errorf("otel: instruments: %w", err)
	}
	return nil
}

// Shutdown flushes what is queued, the spans still being ended included,
// within ctx, and stops exporting.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.ends.wait(ctx)
	err := e.tp.Shutdown(ctx)
	if e.mp != nil {
		err = errors.Join(err, e.mp.Shutdown(ctx))
	}
	return err
}

// Health counts the spans exported, dropped and failed, and the metric
// exports that failed.
func (e *Exporter) Health() gateway.ObserverHealth {
	h := gateway.ObserverHealth{MetricExportsFailed: e.log.metricsFailed.Load()}
	if e.gate != nil {
		h.Exported, h.Dropped, h.Failed = e.gate.exported.Load(), e.gate.dropped.Load(), e.gate.failed.Load()
	}
	return h
}

// metaCarrier reads and writes the trace context keys of an MCP _meta.
type metaCarrier map[string]any

func (m metaCarrier) Get(key string) string {
	s, _ := m[key].(string)
	return s
}

func (m metaCarrier) Set(key, value string) { m[key] = value }

func (m metaCarrier) Keys() []string {
	var keys []string
	for k, v := range m {
		if _, ok := v.(string); ok {
			keys = append(keys, k)
		}
	}
	return keys
}

// Serve starts the SERVER span of a request, its parent the trace context
// in the request's _meta.
func (e *Exporter) Serve(ctx context.Context, r *gateway.Served) (context.Context, func(*gateway.Served)) {
	if r.Meta != nil {
		ctx = e.prop.Extract(ctx, metaCarrier(r.Meta))
	}
	start := time.Now()
	ctx, span := e.tracer.Start(ctx, r.Method, e.serverKind...)
	return ctx, func(r *gateway.Served) {
		end := time.Now()
		e.ends.run(func() { e.endServer(span, r, start, end) })
	}
}

// endServer ends a SERVER span, off the request path: attributes, the
// span's hand-over to the batch processor and the metrics would otherwise
// delay the answer.
func (e *Exporter) endServer(span trace.Span, r *gateway.Served, start, end time.Time) {
	{
		attrs := servedAttributes(r)
		errType := errorType(r.Err, r.ToolError)
		if errType != "" {
			attrs = append(attrs, attribute.String(AttrErrorType, errType))
			var rpc *jsonrpc.Error
			if errors.As(r.Err, &rpc) {
				attrs = append(attrs, attribute.String(AttrRPCStatusCode, strconv.FormatInt(rpc.Code, 10)))
			}
			// The type, not the message: a message may quote arguments.
			span.SetStatus(codes.Error, errType)
		}
		if r.Method == methodListTools && r.Err == nil {
			attrs = append(attrs, attribute.Int(AttrToolDefinitionsBytes, r.ToolDefinitionBytes))
			// A page that cannot be measured (a definition that is not
			// JSON) goes without the figure rather than with a wrong one.
			if n, err := e.measure.tokens(r.ToolDefinitions); err == nil {
				attrs = append(attrs, attribute.Int(AttrToolDefinitionsTokens, n))
				e.definitionTokens.Record(context.Background(), int64(n), metric.WithAttributes(attribute.String(AttrProfile, r.Profile)))
			}
		}
		span.SetName(spanName(r.Method, target(r)))
		span.SetAttributes(attrs...)
		span.End(trace.WithTimestamp(end))
		key := metricKey{method: r.Method, transport: r.Transport, tool: r.Tool, prompt: r.Prompt, version: r.ProtocolVersion, errType: errType, profile: r.Profile, outcome: string(r.Outcome)}
		e.serverDuration.Record(context.Background(), end.Sub(start).Seconds(), e.sets.option(key, func() []attribute.KeyValue { return metricAttributes(r, errType) }))
	}
}

// UpstreamMiddleware is the sending middleware of the gateway's upstream
// clients (upstream.Options.SendingMiddleware). Every request sent
// upstream gets a CLIENT span named "{mcp.method.name} {target}" (the
// upstream's tool or prompt name), child of the span in the request's
// context: the SERVER span of the request that caused it, none for the
// gateway's own requests (initialize, the tools/list of a start or a
// reload). The span's trace context replaces any the client sent in the
// request's _meta, which the upstream client owns. Notifications pass
// untraced. The span's jsonrpc.request.id comes from UpstreamRequestID.
func (e *Exporter) UpstreamMiddleware() mcp.Middleware {
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if strings.HasPrefix(method, "notifications/") {
				return next(ctx, method, req)
			}
			return e.send(ctx, method, req, next)
		}
	}
}

// UpstreamRequestID is the upstream clients' request id hook
// (upstream.Options.OnRequestID): it sets jsonrpc.request.id on the CLIENT
// span in ctx, the one UpstreamMiddleware started for the request, which
// the SDK numbers only after the middleware ran. A context without a
// CLIENT span (the middleware not installed) is left alone.
func (e *Exporter) UpstreamRequestID(ctx context.Context, id jsonrpc.ID) {
	span := trace.SpanFromContext(ctx)
	if s, ok := span.(sdktrace.ReadOnlySpan); !ok || s.SpanKind() != trace.SpanKindClient {
		return
	}
	switch v := id.Raw().(type) {
	case int64:
		span.SetAttributes(attribute.String(AttrRequestID, strconv.FormatInt(v, 10)))
	case string:
		span.SetAttributes(attribute.String(AttrRequestID, bound(v)))
	}
}

// send traces one request sent upstream. Its frame stays small, since it
// is on the stack for the whole upstream call: what it needs before is
// done apart, and the span is ended off the path of the answer.
func (e *Exporter) send(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler) (mcp.Result, error) {
	ctx, c := e.startClient(ctx, method, req)
	res, err := next(ctx, method, req)
	c.end = time.Now()
	r, _ := res.(*mcp.CallToolResult)
	c.errType = errorType(err, err == nil && r != nil && r.IsError)
	if cs, ok := req.GetSession().(*mcp.ClientSession); ok && cs != nil {
		c.session = cs.ID()
	}
	e.ends.run(func() { e.endClient(c, method) })
	return res, err
}

// clientCall is a CLIENT span in progress.
type clientCall struct {
	span         trace.Span
	tool, prompt string
	start, end   time.Time
	// Known once answered; the answer itself is the caller's again.
	errType, session string
}

func (e *Exporter) startClient(ctx context.Context, method string, req mcp.Request) (context.Context, clientCall) {
	params := req.GetParams()
	if v := reflect.ValueOf(params); !v.IsValid() || v.Kind() == reflect.Pointer && v.IsNil() {
		params = nil
	}
	var c clientCall
	switch p := params.(type) {
	case *mcp.CallToolParams:
		c.tool = bound(p.Name)
	case *mcp.GetPromptParams:
		c.prompt = bound(p.Name)
	}
	c.start = time.Now()
	ctx, c.span = e.tracer.Start(ctx, spanName(method, c.tool+c.prompt), e.clientKind...)
	if params != nil {
		old := params.GetMeta()
		meta := make(map[string]any, len(old)+2)
		for k, v := range old {
			if k != "traceparent" && k != "tracestate" {
				meta[k] = v
			}
		}
		e.prop.Inject(ctx, metaCarrier(meta))
		params.SetMeta(meta)
	}
	return ctx, c
}

// endClient ends a CLIENT span, off the request path.
func (e *Exporter) endClient(c clientCall, method string) {
	attrs := clientAttributes(method, c.tool, c.prompt, c.errType, make([]attribute.KeyValue, 0, 6))
	if c.errType != "" {
		c.span.SetStatus(codes.Error, c.errType)
	}
	if c.session != "" {
		attrs = append(attrs, attribute.String(AttrSessionID, c.session))
	}
	c.span.SetAttributes(attrs...)
	c.span.End(trace.WithTimestamp(c.end))
	key := metricKey{method: method, tool: c.tool, prompt: c.prompt, errType: c.errType}
	e.clientDuration.Record(context.Background(), c.end.Sub(c.start).Seconds(), e.sets.option(key, func() []attribute.KeyValue {
		return clientAttributes(method, c.tool, c.prompt, c.errType, nil)
	}))
}

// clientAttributes are a CLIENT span's bounded attributes, appended to
// attrs: its operation duration's too.
func clientAttributes(method, tool, prompt, errType string, attrs []attribute.KeyValue) []attribute.KeyValue {
	attrs = append(attrs, attribute.String(AttrMethodName, method))
	if tool != "" {
		attrs = append(attrs, attribute.String(AttrToolName, tool), attribute.String(AttrOperationName, "execute_tool"))
	}
	if prompt != "" {
		attrs = append(attrs, attribute.String(AttrPromptName, prompt))
	}
	if errType != "" {
		attrs = append(attrs, attribute.String(AttrErrorType, errType))
	}
	return attrs
}

// maxTarget bounds a tool or prompt name in a CLIENT span, as the gateway
// bounds the names no upstream offers: a prompts/get passes the client's
// name through.
const maxTarget = 128

func bound(name string) string {
	if len(name) <= maxTarget {
		return name
	}
	return strings.ToValidUTF8(name[:maxTarget], "")
}

// SessionEnded records the session's duration.
func (e *Exporter) SessionEnded(s telemetry.Session) {
	if s.End.IsZero() {
		return
	}
	attrs := []attribute.KeyValue{
		attribute.String(AttrNetworkTransport, networkTransport(s.Transport)),
		attribute.String(AttrProfile, s.Profile),
	}
	if s.ProtocolVersion != "" {
		attrs = append(attrs, attribute.String(AttrProtocolVersion, s.ProtocolVersion))
	}
	e.sessionDuration.Record(context.Background(), s.End.Sub(s.Start).Seconds(), metric.WithAttributes(attrs...))
}

// target is the low-cardinality part of a span name: the tool or prompt.
func target(r *gateway.Served) string {
	if r.Tool != "" {
		return r.Tool
	}
	return r.Prompt
}

func spanName(method, target string) string {
	if target == "" {
		return method
	}
	return method + " " + target
}

// servedAttributes are a SERVER span's attributes, error.type aside.
func servedAttributes(r *gateway.Served) []attribute.KeyValue {
	attrs := make([]attribute.KeyValue, 0, 16) // room for all, error.type included
	attrs = append(attrs,
		attribute.String(AttrMethodName, r.Method),
		attribute.String(AttrNetworkTransport, networkTransport(r.Transport)))
	if r.Transport == telemetry.TransportHTTP {
		attrs = append(attrs, attribute.String(AttrNetworkProtocolName, "http"))
	}
	add := func(key, v string) {
		if v != "" {
			attrs = append(attrs, attribute.String(key, v))
		}
	}
	add(AttrToolName, r.Tool)
	if r.Method == methodCallTool {
		add(AttrOperationName, "execute_tool")
	}
	add(AttrPromptName, r.Prompt)
	add(AttrSessionID, r.MCPSession)
	add(AttrRequestID, bound(r.RequestID))
	add(AttrProtocolVersion, r.ProtocolVersion)
	add(AttrProfile, r.Profile)
	add(AttrUsageSession, r.UsageSession)
	add(AttrOutcome, string(r.Outcome))
	add(AttrReachedBy, r.ReachedBy)
	return attrs
}

// pending counts the spans being ended on goroutines of their own, so that
// Shutdown exports them too. Its zero value is ready.
type pending struct{ n atomic.Int64 }

func (p *pending) done() { p.n.Add(-1) }

// maxPendingEnds bounds the spans being ended off the request path: past
// it a span is ended on the request path, so that a burst of requests
// holds no more goroutines than this.
const maxPendingEnds = 1024

// run runs end on a goroutine of its own, or, with maxPendingEnds
// already being ended, before it returns.
func (p *pending) run(end func()) {
	if p.n.Add(1) > maxPendingEnds {
		end()
		p.n.Add(-1)
		return
	}
	go func() {
		defer p.done()
		end()
	}()
}

// wait returns when none is pending, or when ctx is done. It polls: only
// Shutdown waits, and a channel per span would cost every call.
func (p *pending) wait(ctx context.Context) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for p.n.Load() > 0 {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// metricKey is what a duration's attributes are made of.
type metricKey struct {
	method, transport, tool, prompt, version, errType, profile, outcome string
}

// maxAttributeSets bounds the attribute sets kept: past it a set is built
// for each measurement, as without the cache.
const maxAttributeSets = 4096

// attributeSets keeps the attribute set of each metricKey: a duration's
// attributes repeat from call to call, and building a set sorts and
// copies them. Its zero value is ready.
type attributeSets struct {
	m sync.Map // metricKey -> metric.MeasurementOption
	n atomic.Int64
}

func (c *attributeSets) option(k metricKey, attrs func() []attribute.KeyValue) metric.MeasurementOption {
	if o, ok := c.m.Load(k); ok {
		return o.(metric.MeasurementOption)
	}
	o := metric.WithAttributeSet(attribute.NewSet(attrs()...))
	if c.n.Load() < maxAttributeSets {
		if _, loaded := c.m.LoadOrStore(k, o); !loaded {
			c.n.Add(1)
		}
	}
	return o
}

// metricAttributes are the operation duration's attributes: the bounded
// ones only (no session IDs).
func metricAttributes(r *gateway.Served, errType string) []attribute.KeyValue {
	attrs := []attribute.KeyValue{
		attribute.String(AttrMethodName, r.Method),
		attribute.String(AttrNetworkTransport, networkTransport(r.Transport)),
	}
	for _, kv := range [][2]string{
		{AttrToolName, r.Tool}, {AttrPromptName, r.Prompt}, {AttrProtocolVersion, r.ProtocolVersion},
		{AttrErrorType, errType}, {AttrProfile, r.Profile}, {AttrOutcome, string(r.Outcome)},
	} {
		if kv[1] != "" {
			attrs = append(attrs, attribute.String(kv[0], kv[1]))
		}
	}
	return attrs
}

// errorType is the conventions' error.type: the JSON-RPC error code,
// tool_error for a result with isError, _OTHER for any other failure.
func errorType(err error, toolError bool) string {
	if err == nil { // before errors.As, whose target would escape
		if toolError {
			return "tool_error"
		}
		return ""
	}
	var rpc *jsonrpc.Error
	switch {
	case errors.As(err, &rpc):
		return strconv.FormatInt(rpc.Code, 10)
	case errors.Is(err, context.Canceled):
		return "cancelled"
	case errors.Is(err, context.DeadlineExceeded):
		return "timeout"
	case err != nil:
		return "_OTHER"
	case toolError:
		return "tool_error"
	}
	return ""
}

// networkTransport is network.transport for a telemetry transport name.
func networkTransport(t string) string {
	if t == telemetry.TransportHTTP {
		return "tcp"
	}
	return "pipe"
}

// gate is the span processor in front of the SDK's batch processor: it
// drops (and counts) an ended span when MaxQueue spans already wait, so
// the batch processor's own queue never fills and nothing waits for it.
type gate struct {
	sdktrace.SpanProcessor
	max      int64
	queued   atomic.Int64 // handed to the batch processor, not yet exported
	dropped  atomic.Uint64
	exported atomic.Uint64
	failed   atomic.Uint64
}

func (g *gate) OnEnd(s sdktrace.ReadOnlySpan) {
	if !s.SpanContext().IsSampled() {
		return
	}
	if g.queued.Add(1) > g.max {
		g.queued.Add(-1)
		g.dropped.Add(1)
		return
	}
	g.SpanProcessor.OnEnd(s)
}

// countingExporter counts what the batch processor hands on, and reports
// a failed export itself: returned, the error would go to the SDK's
// process-wide handler, which prints it to stderr on every export.
type countingExporter struct {
	sdktrace.SpanExporter
	gate *gate
	log  *exportLog
}

func (c *countingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	n := int64(len(spans))
	c.gate.queued.Add(-n) // out of the queue: room for as many more
	err := c.SpanExporter.ExportSpans(ctx, spans)
	if err != nil {
		c.gate.failed.Add(uint64(n))
		c.log.failed("traces", err)
		return nil // the batch is dropped either way: the processor never retries
	}
	c.gate.exported.Add(uint64(n))
	return nil
}

// loggingMetricExporter is countingExporter's counterpart for metrics.
type loggingMetricExporter struct {
	sdkmetric.Exporter
	log *exportLog
}

func (m *loggingMetricExporter) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := m.Exporter.Export(ctx, rm); err != nil {
		m.log.metricsFailed.Add(1)
		m.log.failed("metrics", err)
	}
	return nil
}

// exportLog reports failed exports on the gateway's logger, at most one
// line per ErrorLogEvery.
type exportLog struct {
	logger        *slog.Logger
	metricsFailed atomic.Uint64

	mu       sync.Mutex
	last     time.Time // of the last line; zero before the first
	unlogged int       // failed exports since the last line
}

func (l *exportLog) failed(signal string, err error) {
	l.mu.Lock()
	l.unlogged++
	now := time.Now()
	if !l.last.IsZero() && now.Sub(l.last) < ErrorLogEvery {
		l.mu.Unlock()
		return
	}
	n := l.unlogged
	l.last, l.unlogged = now, 0
	l.mu.Unlock()
	l.logger.Warn("otel: export failed, its data dropped (counted under otel in the health report)",
		"signal", signal, "failed_exports", n, "error", err)
}
