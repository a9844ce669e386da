package upstream

import (
	"context"
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
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
