package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireOrder is a client transport that notes, for each response it reads,
// how many log and progress notifications it had read before it: what
// the client was sent, in the order sent, before its own handlers run.
type wireOrder struct {
	mcp.Transport
	mu     sync.Mutex
	notes  int            // notifications/message and notifications/progress read so far
	before map[string]int // by response id: notes read before it
}

func (w *wireOrder) Connect(ctx context.Context) (mcp.Connection, error) {
	conn, err := w.Transport.Connect(ctx)
	if err != nil {
		return nil, err
	}
	return wireOrderConn{conn, w}, nil
}

type wireOrderConn struct {
	mcp.Connection
	w *wireOrder
}

func (c wireOrderConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err != nil {
		return msg, err
	}
	c.w.mu.Lock()
	defer c.w.mu.Unlock()
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if m.Method == "notifications/message" || m.Method == "notifications/progress" {
			c.w.notes++
		}
	case *jsonrpc.Response:
		if c.w.before == nil {
			c.w.before = map[string]int{}
		}
		c.w.before[fmt.Sprint(m.ID.Raw())] = c.w.notes
	}
	return msg, nil
}

// notesBefore is how many notifications the client read before its latest
// response, and whether it read one.
func (w *wireOrder) notesBefore(latest func(map[string]int) (int, bool)) (int, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return latest(w.before)
}

// TestRelayDeliversNotificationsBeforeTheAnswer: a log message or progress
// notification an upstream writes just before its answer reaches the
// caller before the answer, and none
// goes unrouted.
func TestRelayDeliversNotificationsBeforeTheAnswer(t *testing.T) {
	const calls = 40
	cases := []struct {
		name    string
		tool    string
		token   bool
		perCall int // notifications the tool sends before answering
		calls   int
	}{
		{name: "log", tool: "test_logging_tool", perCall: 1, calls: calls},
		{name: "progress", tool: "test_tool_with_progress", token: true, perCall: 3, calls: 6},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := relayGateway(t)
			s, err := g.Server("")
			if err != nil {
				t.Fatal(err)
			}
			st, ct := mcp.NewInMemoryTransports()
			ctx := context.Background()
			if _, err := s.Connect(ctx, st, nil); err != nil {
				t.Fatal(err)
			}
			wire := &wireOrder{Transport: ct}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "order-test", Version: "0"}, &mcp.ClientOptions{
				LoggingMessageHandler:       func(context.Context, *mcp.LoggingMessageRequest) {},
				ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {},
			}).Connect(ctx, wire, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
				t.Fatal(err)
			}
			late, prev := 0, 0
			for i := range tc.calls {
				p := &mcp.CallToolParams{Name: tc.tool, Arguments: map[string]any{}}
				if tc.token {
					p.Meta = mcp.Meta{"progressToken": fmt.Sprintf("tok-%d", i)}
				}
				res, err := cs.CallTool(ctx, p)
				if err != nil || res.IsError {
					t.Fatalf("call %d: %+v, %v", i, res, err)
				}
				// The SDK numbers the client's requests; the latest
				// response read is this call's.
				got, ok := wire.notesBefore(func(before map[string]int) (int, bool) {
					best, n := int64(-1), 0
					for id, c := range before {
						var v int64
						if _, err := fmt.Sscan(id, &v); err == nil && v > best {
							best, n = v, c
						}
					}
					return n, best >= 0
				})
				if !ok {
					t.Fatal("no response read")
				}
				if got-prev < tc.perCall {
					late++
				}
				prev = got
			}
			if late > 0 {
				t.Errorf("%d of %d calls answered before the notifications their upstream sent first", late, tc.calls)
			}
			if n := g.relay.logsUnrouted.Load(); n != 0 {
				t.Errorf("logs_unrouted = %d, want 0", n)
			}
			if n := g.relay.progressDropped.Load(); n != 0 {
				t.Errorf("progress dropped = %d, want 0", n)
			}
		})
	}
}
