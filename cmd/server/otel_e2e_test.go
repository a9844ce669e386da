package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/internal/testupstream"
)

// jaegerModule is the module that pins Jaeger as a tool, apart from
// toolprof's own go.mod, whose collector modules are of another release.
const jaegerModule = "../../tools/jaeger"

func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// startJaeger builds Jaeger from the module cache and runs it with
// in-memory storage, OTLP/HTTP and its query API on loopback ports. It
// returns the OTLP endpoint and the query API's base URL.
func startJaeger(t *testing.T) (otlp, query string) {
	t.Helper()
	dir := t.TempDir()
	bin := filepath.Join(dir, "jaeger")
	build := exec.Command("go", "build", "-buildvcs=false", "-o", bin, "github.com/jaegertracing/jaeger/cmd/jaeger")
	build.Dir = jaegerModule
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build jaeger: %v\n%s", err, out)
	}
	otlpPort, queryPort, grpcPort := freePort(t), freePort(t), freePort(t)
	config := fmt.Sprintf(`service:
  extensions: [jaeger_storage, jaeger_query]
  pipelines:
    traces:
      receivers: [otlp]
      exporters: [jaeger_storage_exporter]
  telemetry:
    metrics:
      level: none
    logs:
      level: warn
extensions:
  jaeger_storage:
    backends:
      mem:
        memory:
          max_traces: 10000
  jaeger_query:
    storage:
      traces: mem
    http:
      endpoint: 127.0.0.1:%d
    grpc:
      endpoint: 127.0.0.1:%d
receivers:
  otlp:
    protocols:
      http:
        endpoint: 127.0.0.1:%d
exporters:
  jaeger_storage_exporter:
    trace_storage: mem
`, queryPort, grpcPort, otlpPort)
	cfg := filepath.Join(dir, "jaeger.yaml")
	if err := os.WriteFile(cfg, []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	cmd := exec.Command(bin, "--config", "file:"+cfg)
	cmd.Stdout, cmd.Stderr = &stderr, &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	query = fmt.Sprintf("http://127.0.0.1:%d", queryPort)
	for deadline := time.Now().Add(60 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		if resp, err := http.Get(query + "/api/v3/services"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger did not serve its API:\n%s", &stderr)
		}
	}
	return fmt.Sprintf("http://127.0.0.1:%d", otlpPort), query
}

// jaegerTraces fetches path from Jaeger's API v3 (OTLP JSON wrapped in
// {"result": ...}), waiting until it answers with every one of want spans.
func jaegerTraces(t *testing.T, query, path string, want int) []byte {
	t.Helper()
	var body []byte
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(200 * time.Millisecond) {
		resp, err := http.Get(query + path)
		if err == nil {
			body, _ = io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK && bytes.Count(body, []byte(`"spanId"`)) >= want {
				return body
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("jaeger %s: want %d spans, got:\n%s", path, want, body)
		}
	}
}

// jaegerSpan is what the test reads of a span in Jaeger's answer.
type jaegerSpan struct {
	TraceID      string `json:"traceId"`
	SpanID       string `json:"spanId"`
	ParentSpanID string `json:"parentSpanId"`
	Name         string `json:"name"`
	Kind         int    `json:"kind"`
	Attributes   []struct {
		Key   string `json:"key"`
		Value struct {
			StringValue string `json:"stringValue"`
		} `json:"value"`
	} `json:"attributes"`
}

// attr is the span's string attribute key; "" when it has none.
func (s jaegerSpan) attr(key string) string {
	for _, a := range s.Attributes {
		if a.Key == key {
			return a.Value.StringValue
		}
	}
	return ""
}

func jaegerSpans(t *testing.T, body []byte) []jaegerSpan {
	t.Helper()
	var v struct {
		Result struct {
			ResourceSpans []struct {
				ScopeSpans []struct {
					Spans []jaegerSpan `json:"spans"`
				} `json:"scopeSpans"`
			} `json:"resourceSpans"`
		} `json:"result"`
	}
	if err := json.Unmarshal(body, &v); err != nil {
		t.Fatalf("jaeger answer: %v\n%s", err, body)
	}
	var out []jaegerSpan
	for _, rs := range v.Result.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			out = append(out, ss.Spans...)
		}
	}
	return out
}

func TestOTelExportToJaegerAndImport(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs Jaeger")
	}
	otlp, query := startJaeger(t)
	profiler := filepath.Join(t.TempDir(), "profiler")
	if err := testupstream.Build("github.com/toolprof/toolprof/cmd/profiler", profiler); err != nil {
		t.Fatal(err)
	}
	const service = "toolprof-e2e"
	env := []string{
		"OTEL_EXPORTER_OTLP_ENDPOINT=" + otlp,
		"OTEL_SERVICE_NAME=" + service,
		"OTEL_METRICS_EXPORTER=none", // Jaeger takes traces only
		"OTEL_BSP_SCHEDULE_DELAY=100",
	}
	began := time.Now()
	s := startEnv(t, overHTTP, "/mcp", "2025-11-25", env, "--otel")
	const traceID, parentID = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	ctx := context.Background()
	const calls = 3
	for range calls {
		res, err := s.session.CallTool(ctx, &mcp.CallToolParams{
			Meta:      mcp.Meta{"traceparent": "00-" + traceID + "-" + parentID + "-01"},
			Name:      "test_simple_text",
			Arguments: map[string]any{},
		})
		if err != nil || res.IsError {
			t.Fatalf("tools/call: %+v, %v", res, err)
		}
	}
	if err := s.stop(); err != nil { // flushes the spans at exit
		t.Fatalf("server: %v\n%s", err, s.stderr)
	}

	body := jaegerTraces(t, query, "/api/v3/traces/"+traceID, 2*calls)
	spans := jaegerSpans(t, body)
	servers := map[string]jaegerSpan{}
	var clients []jaegerSpan
	for _, sp := range spans {
		switch {
		case sp.Name == "tools/call test_simple_text" && sp.Kind == 2:
			servers[sp.SpanID] = sp
		case sp.Name == "tools/call test_simple_text" && sp.Kind == 3:
			clients = append(clients, sp)
		}
	}
	if len(servers) != calls || len(clients) != calls {
		t.Fatalf("trace %s: %d server and %d client spans named \"tools/call test_simple_text\", want %d each:\n%s", traceID, len(servers), len(clients), calls, body)
	}
	for _, sp := range servers {
		if sp.ParentSpanID != parentID {
			t.Errorf("server span %s parent %q: want the client's span %s", sp.SpanID, sp.ParentSpanID, parentID)
		}
	}
	ids := map[string]bool{}
	for _, c := range clients {
		if _, ok := servers[c.ParentSpanID]; !ok {
			t.Errorf("client span %s parent %q: want one of the server spans", c.SpanID, c.ParentSpanID)
		}
		ids[c.attr("jsonrpc.request.id")] = true
	}
	if len(ids) != calls || ids[""] {
		t.Errorf("client spans' jsonrpc.request.id %v: want %d distinct ids", ids, calls)
	}

	// The service's traces as OTLP JSON, imported: stats counts the calls.
	q := url.Values{
		"query.service_name":   {service},
		"query.num_traces":     {"100"},
		"query.start_time_min": {began.Add(-time.Minute).UTC().Format(time.RFC3339Nano)},
		"query.start_time_max": {time.Now().Add(time.Minute).UTC().Format(time.RFC3339Nano)},
	}
	file := filepath.Join(t.TempDir(), "jaeger.json")
	if err := os.WriteFile(file, jaegerTraces(t, query, "/api/v3/traces?"+q.Encode(), 2*calls), 0o644); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join(t.TempDir(), "imported")
	run := func(args ...string) string {
		out, err := exec.Command(profiler, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("profiler %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	if out := run("import", "--otlp", "--telemetry", dir, file); !strings.Contains(out, "imported 1 sessions, "+strconv.Itoa(calls)+" calls") {
		t.Errorf("import --otlp:\n%s", out)
	}
	var stats struct {
		Calls int `json:"calls"`
	}
	out := run("stats", "--telemetry", dir, "--format", "json")
	if err := json.Unmarshal([]byte(out), &stats); err != nil || stats.Calls != calls {
		t.Errorf("stats after import: %d calls (%v), want %d:\n%s", stats.Calls, err, calls, out)
	}
}
