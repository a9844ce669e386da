package otelmcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/toolprof/toolprof/telemetry"
)

// fileCollector is a real OTLP/HTTP traces endpoint that writes each
// request as one line of OTLP JSON, as the collector's file exporter does.
type fileCollector struct {
	mu   sync.Mutex
	path string
}

func startFileCollector(t *testing.T) (*fileCollector, string) {
	t.Helper()
	c := &fileCollector{path: filepath.Join(t.TempDir(), "traces.jsonl")}
	hs := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		req := ptraceotlp.NewExportRequest()
		if err == nil {
			err = req.UnmarshalProto(body)
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		var m ptrace.JSONMarshaler
		line, err := m.MarshalTraces(req.Traces())
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		c.mu.Lock()
		defer c.mu.Unlock()
		f, err := os.OpenFile(c.path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
		if err == nil {
			_, err = f.Write(append(line, '\n'))
			f.Close()
		}
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/x-protobuf")
		resp, _ := ptraceotlp.NewExportResponse().MarshalProto()
		w.Write(resp)
	}))
	t.Cleanup(hs.Close)
	return c, hs.Listener.Addr().String()
}

func TestImportReadsExportedCalls(t *testing.T) {
	u := startMetaUpstream(t)
	col, addr := startFileCollector(t)
	ctx := context.Background()
	exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpoint(addr), otlptracehttp.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	e, err := New(ctx, Config{SpanExporter: exp, MetricReader: sdkmetric.NewManualReader()})
	if err != nil {
		t.Fatal(err)
	}
	g := observedGateway(t, u, e)
	want := map[string][]string{} // usage session -> outcomes
	for range 2 {
		cs := connect(t, g)
		cs.ListTools(ctx, nil)
		for _, tool := range []string{"echo", "hidden", "echo"} {
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: map[string]any{"a": secretArg}}); err != nil {
				t.Fatal(err)
			}
		}
		cs.Close()
	}
	if err := e.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	_ = want

	b, _ := os.ReadFile(col.path)
	if strings.Contains(string(b), secretArg) {
		t.Fatal("an argument value reached the collector")
	}
	sessions, stats, err := ReadFiles([]string{col.path})
	if err != nil {
		t.Fatal(err)
	}
	if stats.Calls != 6 || stats.Sessions != 2 || stats.Skipped != stats.Spans-6 || stats.Skipped == 0 {
		t.Errorf("stats %+v: want 6 calls in 2 sessions, the other spans skipped", stats)
	}
	for _, s := range sessions {
		var got []string
		for _, c := range s.Calls {
			got = append(got, c.Tool+":"+c.Outcome)
		}
		if strings.Join(got, " ") != "echo:ok hidden:denied echo:ok" || s.Profile != "core" || s.Started == nil {
			t.Errorf("session %s (profile %q) calls %v: want echo:ok hidden:denied echo:ok in profile core", s.Session, s.Profile, got)
		}
	}

	// Stored like any import, and read back as usage.
	dir := t.TempDir()
	res, err := telemetry.Import(ctx, dir, sessions, sessions[0].Started.Add(0))
	if err != nil || res.Calls != 6 || res.Sessions != 2 {
		t.Fatalf("import = %+v, %v", res, err)
	}
	// Importing the same traces again adds nothing.
	again, _, err := ReadFiles([]string{col.path, col.path})
	if err != nil {
		t.Fatal(err)
	}
	res, err = telemetry.Import(ctx, dir, again, *again[0].Started)
	if err != nil || res.Sessions != 0 || len(res.Skipped) != 2 {
		t.Errorf("re-import = %+v, %v: want both sessions skipped", res, err)
	}
}

// otlpSpan is one OTLP JSON traces object holding one span.
func otlpSpan(traceID, kind string, attrs string) string {
	return `{"resourceSpans":[{"resource":{},"scopeSpans":[{"scope":{},"spans":[{"traceId":"` + traceID +
		`","spanId":"00f067aa0ba902b7","name":"x","kind":` + kind + `,"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000000100000000","attributes":[` + attrs + `]}]}]}]}`
}

func attr(k, v string) string { return `{"key":"` + k + `","value":{"stringValue":"` + v + `"}}` }

func TestReadFiles(t *testing.T) {
	call := attr(AttrMethodName, "tools/call") + "," + attr(AttrToolName, "get-weather")
	tests := []struct {
		name     string
		content  string
		calls    int
		skipped  int
		session  string
		outcome  string
		errParts []string
	}{
		{"collector line, grouped by trace", otlpSpan("4bf92f3577b34da6a3ce929d0e0e4736", "2", call), 1, 0, "trace/4bf92f3577b34da6a3ce929d0e0e4736", "ok", nil},
		{"jaeger v3 wrapper", `{"result":` + otlpSpan("4bf92f3577b34da6a3ce929d0e0e4736", "2", call+","+attr(AttrSessionID, "abc")+","+attr(AttrErrorType, "tool_error")) + `}`, 1, 0, "mcp/abc", "tool_error", nil},
		{"error code is an upstream error", otlpSpan("4bf92f3577b34da6a3ce929d0e0e4736", "2", call+","+attr(AttrErrorType, "-32603")), 1, 0, "", "upstream_error", nil},
		{"client span skipped", otlpSpan("4bf92f3577b34da6a3ce929d0e0e4736", "3", call), 0, 1, "", "", nil},
		{"other method skipped", otlpSpan("4bf92f3577b34da6a3ce929d0e0e4736", "2", attr(AttrMethodName, "tools/list")), 0, 1, "", "", nil},
		{"not JSON", "hello", 0, 0, "", "", []string{"bad.json", "object 1", "not OTLP JSON"}},
		{"wrong field", `{"spans": []}`, 0, 0, "", "", []string{"bad.json", `field "spans"`}},
		{"bad span field", `{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"nothex"}]}]}]}`, 0, 0, "", "", []string{"bad.json", "traceId"}},
		{"empty", "", 0, 0, "", "", []string{"bad.json", "empty"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "bad.json")
			if err := os.WriteFile(path, []byte(tt.content), 0o644); err != nil {
				t.Fatal(err)
			}
			sessions, stats, err := ReadFiles([]string{path})
			if tt.errParts != nil {
				for _, p := range tt.errParts {
					if err == nil || !strings.Contains(err.Error(), p) {
						t.Errorf("err = %v, want one containing %q", err, p)
					}
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if stats.Calls != tt.calls || stats.Skipped != tt.skipped {
				t.Errorf("stats %+v: want %d calls, %d skipped", stats, tt.calls, tt.skipped)
			}
			if tt.calls > 0 {
				if sessions[0].Session != tt.session && tt.session != "" {
					t.Errorf("session %q, want %q", sessions[0].Session, tt.session)
				}
				if c := sessions[0].Calls[0]; c.Tool != "get-weather" || c.Outcome != tt.outcome {
					t.Errorf("call %+v: want get-weather with outcome %s", c, tt.outcome)
				}
			}
		})
	}
}

// TestReadFilesSearch: a call span marked reached by search is imported as
// a call made through call_tool; any other is not.
func TestReadFilesSearch(t *testing.T) {
	call := attr(AttrMethodName, "tools/call") + "," + attr(AttrToolName, "get-weather")
	for _, tt := range []struct {
		name   string
		attrs  string
		search bool
	}{
		{"reached by search", call + "," + attr(AttrReachedBy, "search"), true},
		{"listed", call + "," + attr(AttrReachedBy, "listed"), false},
		{"switched on", call + "," + attr(AttrReachedBy, "group"), false},
		{"refused: no reached_by", call + "," + attr(AttrOutcome, "denied"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "spans.json")
			if err := os.WriteFile(path, []byte(otlpSpan("4bf92f3577b34da6a3ce929d0e0e4736", "2", tt.attrs)), 0o644); err != nil {
				t.Fatal(err)
			}
			sessions, _, err := ReadFiles([]string{path})
			if err != nil {
				t.Fatal(err)
			}
			if len(sessions) != 1 || len(sessions[0].Calls) != 1 || sessions[0].Calls[0].Search != tt.search {
				t.Fatalf("sessions %+v: want one call, search %v", sessions, tt.search)
			}
		})
	}
}
