// Package otelmcp exports what the gateway serves as OpenTelemetry traces
// and metrics, named and attributed by the semantic conventions for MCP
// (gen-ai/mcp.md, status Development).
//
// An Exporter is a gateway.Observer. For every request the gateway answers
// it ends a SERVER span named "{mcp.method.name} {target}" (the tool of a
// tools/call, the prompt of a prompts/get), whose parent is the trace
// context the client sent in params._meta (traceparent, tracestate).
// UpstreamMiddleware, the upstream clients' sending middleware, makes every
// request sent upstream a CLIENT span, child of the SERVER span of the
// request that caused it, whose context replaces the client's in the _meta
// sent upstream; UpstreamRequestID, the upstream clients' request id hook,
// gives it the id the request is sent with, known only once written. Spans
// carry the conventions' attributes and the gateway's own facts as
// toolprof.* (attributes.go); never an argument value, a result or an error
// message, and only tool names bounded as telemetry bounds them. Metrics
// are the conventions' duration histograms (seconds, the conventions'
// buckets) and toolprof.tool_definitions.tokens, per profile: the model
// measure (package price) of each tools/list page served, what the
// listing costs the model, tokenized once per distinct page.
//
// Export never blocks or fails a call: a span is ended, its attributes set
// and its metrics recorded on a goroutine of its own once the answer is
// known, so that none of it delays the answer; ended spans wait in a queue
// of Config.MaxQueue spans for the SDK's batch processor, and a span that
// finds it full is dropped and counted (Health, shown in the gateway's
// health). A failed export is counted there and reported on Config.Logger,
// never on the SDK's process-wide error handler. With the default exporters
// every setting comes from the standard OTEL_* environment variables
// (endpoint, headers, protocol, service name and resource attributes, batch
// timing).
//
// ReadFiles goes the other way: it reads OTLP JSON trace files from any
// gateway that follows the conventions (the collector's file exporter,
// Jaeger's /api/v3/traces) into traced sessions that telemetry.Import
// stores, so that derive works on another gateway's traces.
package otelmcp
