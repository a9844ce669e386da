package otelmcp

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.opentelemetry.io/otel/trace"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/upstream"
)

// wireLog is what an upstream received, read off its wire: the id of each
// request, by the traceparent in its _meta.
type wireLog struct {
	mu   sync.Mutex
	byTP map[string]string
}

// note reads one message as the upstream received it.
func (w *wireLog) note(b []byte) {
	var m struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
		Params struct {
			Meta map[string]any `json:"_meta"`
		} `json:"params"`
	}
	if json.Unmarshal(b, &m) != nil || m.Method == "" || len(m.ID) == 0 {
		return
	}
	tp, _ := m.Params.Meta["traceparent"].(string)
	id := string(m.ID)
	var s string
	if json.Unmarshal(m.ID, &s) == nil {
		id = s
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.byTP == nil {
		w.byTP = map[string]string{}
	}
	w.byTP[tp] = id
}

func (w *wireLog) id(traceparent string) (string, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	id, ok := w.byTP[traceparent]
	return id, ok
}

// teedStdio runs the iconserver over stdio behind a tee of its stdin.
func teedStdio(t *testing.T) (launch.ResolvedServer, string, func() *wireLog) {
	log := filepath.Join(t.TempDir(), "stdin.jsonl")
	srv := launch.ResolvedServer{Name: "icons", Transport: launch.Stdio, Command: "/bin/sh",
		Args: []string{"-c", `tee "$0" | exec "$1"`, log, testupstream.IconServer(t)}}
	return srv, "plain", func() *wireLog {
		b, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		w := &wireLog{}
		for _, line := range bytes.Split(b, []byte("\n")) {
			w.note(line)
		}
		return w
	}
}

// teedHTTP runs a go-sdk server over streamable HTTP that reads every POST
// body as it arrives.
func teedHTTP(t *testing.T) (launch.ResolvedServer, string, func() *wireLog) {
	s := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "1"}, nil)
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "result"}}}, nil
	})
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	w := &wireLog{}
	hs := httptest.NewServer(http.HandlerFunc(func(rw http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			b, err := io.ReadAll(r.Body)
			if err != nil {
				http.Error(rw, err.Error(), http.StatusBadRequest)
				return
			}
			w.note(b)
			r.Body = io.NopCloser(bytes.NewReader(b))
		}
		h.ServeHTTP(rw, r)
	}))
	t.Cleanup(hs.Close)
	return launch.ResolvedServer{Name: "echo", Transport: launch.StreamableHTTP, URL: hs.URL}, "echo", func() *wireLog { return w }
}

// Every CLIENT span carries the jsonrpc.request.id the upstream received
// the request with (the request found by the span's traceparent), over
// both transports, for the gateway's own requests and for calls, small or
// with arguments far longer than the part of a body read for the id.
func TestClientSpansCarryTheUpstreamsRequestID(t *testing.T) {
	big := json.RawMessage(fmt.Sprintf(`{"text":%q}`, strings.Repeat("x", 200<<10)))
	for _, tt := range []struct {
		name  string
		start func(*testing.T) (launch.ResolvedServer, string, func() *wireLog)
	}{
		{"stdio", teedStdio},
		{"streamable HTTP", teedHTTP},
	} {
		t.Run(tt.name, func(t *testing.T) {
			e, spans, _ := newTestExporter(t)
			srv, tool, received := tt.start(t)
			ctx := context.Background()
			set, err := upstream.StartSet(ctx, &launch.Resolved{Version: 1, Servers: []launch.ResolvedServer{srv}}, upstream.SetOptions{
				RequireAll: true,
				Client:     upstream.Options{SendingMiddleware: e.UpstreamMiddleware(), OnRequestID: e.UpstreamRequestID},
			})
			if err != nil {
				t.Fatal(err)
			}
			defer set.Close()
			if _, err := set.ListTools(ctx); err != nil {
				t.Fatal(err)
			}
			for _, args := range []json.RawMessage{json.RawMessage(`{}`), json.RawMessage(`{"a":1}`), big} {
				if _, err := set.CallTool(ctx, &mcp.CallToolParamsRaw{Name: tool, Arguments: args}); err != nil {
					t.Fatalf("call %s: %v", tool, err)
				}
			}
			got := flushed(t, e, spans)
			wire := received()
			checked := map[string]int{}
			for _, s := range got {
				if s.SpanKind != trace.SpanKindClient {
					continue
				}
				tp := fmt.Sprintf("00-%s-%s-01", s.SpanContext.TraceID(), s.SpanContext.SpanID())
				want, ok := wire.id(tp)
				if !ok {
					t.Errorf("%s: the upstream received no request with the span's traceparent %s", s.Name, tp)
					continue
				}
				if id, ok := attrs(s)[AttrRequestID]; !ok || id != want {
					t.Errorf("%s: %s = %q (set: %v), want %q, the id the upstream received", s.Name, AttrRequestID, id, ok, want)
				}
				checked[attrs(s)[AttrMethodName]]++
			}
			if checked["initialize"] != 1 || checked["tools/list"] < 1 || checked["tools/call"] != 3 {
				t.Errorf("checked client spans by method %v: want initialize, tools/list and 3 tools/call", checked)
			}
		})
	}
}

// A resource URI can hold a secret in its userinfo, query or fragment, and
// in its path too (a webhook's, a bot token's), which no stripping can
// tell from the rest: no span carries the URI in any form. The secret here
// comes from the environment, through the upstream that lists the URI.
func TestResourceURIsReachNoSpan(t *testing.T) {
	t.Setenv("TOOLPROF_TEST_URI_SECRET", "uri-secret-5d1c")
	secret := os.Getenv("TOOLPROF_TEST_URI_SECRET")
	uri := "https://hook:" + secret + "@hooks.example.com/services/" + secret + "?token=" + secret + "#" + secret
	s := mcp.NewServer(&mcp.Implementation{Name: "meta", Version: "1"}, &mcp.ServerOptions{
		SubscribeHandler:   func(context.Context, *mcp.SubscribeRequest) error { return nil },
		UnsubscribeHandler: func(context.Context, *mcp.UnsubscribeRequest) error { return nil },
	})
	s.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	s.AddResource(&mcp.Resource{URI: uri, Name: "hook"}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
		return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: uri, Text: "text"}}}, nil
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(hs.Close)
	e, spans, _ := newTestExporter(t)
	cs := connect(t, observedGateway(t, &metaUpstream{url: hs.URL}, e))
	ctx := context.Background()
	if _, err := cs.ListResources(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	got := flushed(t, e, spans)
	for _, method := range []string{"resources/read", "resources/subscribe", "resources/unsubscribe"} {
		findSpan(t, got, method, trace.SpanKindServer)
		findSpan(t, got, method, trace.SpanKindClient)
	}
	for _, s := range got {
		b, err := json.Marshal(s)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(b), secret) {
			t.Errorf("%s %s span holds the secret: %s", s.SpanKind, s.Name, b)
		}
	}
}

// The request id hook sets the id on the CLIENT span in its context, a
// string id bounded as tool names are, and leaves any other span alone.
func TestUpstreamRequestIDSetsOnlyClientSpans(t *testing.T) {
	e, spans, _ := newTestExporter(t)
	ctx, server := e.tracer.Start(context.Background(), "tools/call", e.serverKind...)
	num, _ := jsonrpc.MakeID(float64(3))
	e.UpstreamRequestID(ctx, num)
	cctx, client := e.tracer.Start(ctx, "tools/call", e.clientKind...)
	e.UpstreamRequestID(cctx, num)
	long, _ := jsonrpc.MakeID(strings.Repeat("i", 2*maxTarget))
	sctx, strClient := e.tracer.Start(ctx, "tools/list", e.clientKind...)
	e.UpstreamRequestID(sctx, long)
	for _, s := range []trace.Span{strClient, client, server} {
		s.End()
	}
	got := flushed(t, e, spans)
	if id, ok := attrs(findSpan(t, got, "tools/call", trace.SpanKindServer))[AttrRequestID]; ok {
		t.Errorf("server span %s = %q: want none from the upstream hook", AttrRequestID, id)
	}
	if id := attrs(findSpan(t, got, "tools/call", trace.SpanKindClient))[AttrRequestID]; id != "3" {
		t.Errorf("client span %s = %q, want 3", AttrRequestID, id)
	}
	if id := attrs(findSpan(t, got, "tools/list", trace.SpanKindClient))[AttrRequestID]; id != strings.Repeat("i", maxTarget) {
		t.Errorf("client span %s = %q, want the id bounded to %d bytes", AttrRequestID, id, maxTarget)
	}
}
