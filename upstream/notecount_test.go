package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
)

// TestCallToolReturnsAfterItsNotifications: the log messages and progress
// notifications a stdio server writes before answering a call have been
// handled (OnLog, OnProgress returned) when CallTool returns, on the
// relayed path and on the SDK's.
func TestCallToolReturnsAfterItsNotifications(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	cases := []struct {
		name     string
		sdkCalls bool
		tool     string
		token    bool
		perCall  int64 // notifications the tool sends before answering
		calls    int
	}{
		{name: "log, relayed", tool: "test_logging_tool", perCall: 1, calls: 60},
		{name: "log, SDK", sdkCalls: true, tool: "test_logging_tool", perCall: 1, calls: 60},
		{name: "progress, relayed", tool: "test_tool_with_progress", token: true, perCall: 3, calls: 4},
		{name: "progress, SDK", sdkCalls: true, tool: "test_tool_with_progress", token: true, perCall: 3, calls: 4},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var handled atomic.Int64
			opts := Options{
				ProtocolVersion: "2025-11-25",
				sdkCalls:        tc.sdkCalls,
				OnLog:           func(context.Context, string, *mcp.LoggingMessageParams) { handled.Add(1) },
				OnProgress:      func(context.Context, string, *mcp.ProgressNotificationParams) { handled.Add(1) },
			}
			s := startSet(t, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`}}`, nil, SetOptions{Client: opts})
			c, ok := s.Client("a")
			if !ok {
				t.Fatal("no client a")
			}
			ctx := context.Background()
			if err := c.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
			late := 0
			for i := range tc.calls {
				before := handled.Load()
				p := &mcp.CallToolParamsRaw{Name: tc.tool}
				if tc.token {
					p.Meta = mcp.Meta{"progressToken": fmt.Sprintf("tok-%d", i)}
				}
				res, err := c.CallTool(ctx, p)
				if err != nil || res.IsError {
					t.Fatalf("call %d: %+v, %v", i, res, err)
				}
				if handled.Load()-before < tc.perCall {
					late++
				}
			}
			if late > 0 {
				t.Errorf("%d of %d calls returned before the notifications their server sent first were handled", late, tc.calls)
			}
		})
	}
}

// TestNoteCountWait: an answered call's wait ends when the notifications
// read before the answer are handled, when its context ends, or at the
// bound; at the bound, notifications nobody is handling are given up for
// lost (the SDK refused them before its middleware), so that later calls
// do not wait for them, while one in hand is not.
func TestNoteCountWait(t *testing.T) {
	logMsg := &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"x"}`)}
	cases := []struct {
		name        string
		read        []jsonrpc.Message
		handled     int  // end()s before the wait
		inHand      bool // a begin() with no end()
		cancelled   bool
		wantHandled uint64
	}{
		{name: "all handled", read: []jsonrpc.Message{logMsg, logMsg}, handled: 2, wantHandled: 2},
		{name: "refused before the middleware", read: []jsonrpc.Message{logMsg, logMsg}, handled: 1, wantHandled: 2},
		{name: "one in hand", read: []jsonrpc.Message{logMsg, logMsg}, handled: 1, inHand: true, wantHandled: 1},
		{name: "context ended", read: []jsonrpc.Message{logMsg}, cancelled: true, wantHandled: 0},
		{name: "not counted", read: []jsonrpc.Message{
			&jsonrpc.Request{Method: "notifications/message"},                                   // no params: refused by the SDK
			&jsonrpc.Request{Method: "notifications/progress", Params: json.RawMessage(`null`)}, // likewise
			&jsonrpc.Request{Method: "notifications/resources/updated", Params: json.RawMessage(`{"uri":"x"}`)},
			&jsonrpc.Request{Method: "notifications/roots/list_changed"},                               // not the SDK client's: refused
			&jsonrpc.Request{Method: "notifications/tools/list_changed", Params: json.RawMessage(`5`)}, // params not an object: refused
			&jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`[]`)},           // likewise
			&jsonrpc.Response{},
		}, wantHandled: 0},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var n noteCount
			var target uint64
			for _, m := range tc.read {
				target = n.readOne(m)
			}
			for range tc.handled {
				n.begin()
				n.end()
			}
			if tc.inHand {
				n.begin()
			}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.cancelled {
				cancel()
			}
			n.wait(ctx, target)
			n.mu.Lock()
			got := n.handled
			n.mu.Unlock()
			if got != tc.wantHandled {
				t.Errorf("handled after the wait = %d, want %d (read %d)", got, tc.wantHandled, target)
			}
		})
	}
}

// TestNoteCountWaitWritesOffWhileOthersAreHandled: a notification lost
// before the middleware is written off at the bound even when the call's
// own notification was handled during the wait, so the next call, whose
// notifications are all handled, does not wait for it again.
func TestNoteCountWaitWritesOffWhileOthersAreHandled(t *testing.T) {
	logMsg := &jsonrpc.Request{Method: "notifications/message", Params: json.RawMessage(`{"level":"info","data":"x"}`)}
	var n noteCount
	n.readOne(logMsg) // lost: never handled
	target := n.readOne(logMsg)
	go func() {
		for { // handle the call's own once the call waits
			n.mu.Lock()
			waiting := n.changed != nil
			n.mu.Unlock()
			if waiting {
				break
			}
			runtime.Gosched()
		}
		n.begin()
		n.end()
	}()
	n.wait(context.Background(), target)
	n.mu.Lock()
	got, handling := n.handled, n.handling
	n.mu.Unlock()
	if got < target || handling != 0 {
		t.Errorf("after the wait: handled %d, in hand %d; want %d handled, none in hand", got, handling, target)
	}
}

// TestHTTPCallToolReturnsAfterItsNotifications is
// TestCallToolReturnsAfterItsNotifications for an HTTP server, whose log
// message comes on the call's SSE stream just before its result.
func TestHTTPCallToolReturnsAfterItsNotifications(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "logs"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "log_once"}, func(ctx context.Context, req *mcp.CallToolRequest, _ struct{}) (*mcp.CallToolResult, any, error) {
		if err := req.Session.Log(ctx, &mcp.LoggingMessageParams{Level: "info", Data: "once"}); err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "logged"}}}, nil, nil
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	doc := launch.Document{Servers: []launch.Server{{Name: "logs", Transport: launch.StreamableHTTP, URL: ts.URL, Source: "x.mcp.json:1"}}}
	r, err := doc.Resolve(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	var handled atomic.Int64
	c := NewClient(r.Servers[0], Options{
		ConnectTimeout:  5 * time.Second,
		ProtocolVersion: "2025-11-25",
		OnLog:           func(context.Context, string, *mcp.LoggingMessageParams) { handled.Add(1) },
	})
	t.Cleanup(func() { c.Close() })
	ctx := context.Background()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	if err := c.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
		t.Fatal(err)
	}
	const calls = 60
	late := 0
	for i := range calls {
		before := handled.Load()
		res, err := c.CallTool(ctx, &mcp.CallToolParamsRaw{Name: "log_once", Arguments: json.RawMessage(`{}`)})
		if err != nil || res.IsError {
			t.Fatalf("call %d: %+v, %v", i, res, err)
		}
		if handled.Load() == before {
			late++
		}
	}
	if late > 0 {
		t.Errorf("%d of %d calls returned before the log message their server sent first was handled", late, calls)
	}
}
