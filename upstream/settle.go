package upstream

// Ordering of a call's notifications and its result.
//
// The SDK's connection hands a response to the waiting caller as soon as
// it is read, while notifications read before it wait in a queue for the
// handler goroutine. So a log message or progress notification an upstream
// sent just before its result may reach OnLog/OnProgress after CallTool has
// returned, and the gateway would then answer its client before relaying
// the notification (which is lost: the client's request stream is closed).
// On a stdio connection the order is kept exactly (notecount.go). An HTTP
// server's connection is the SDK's, and cannot be wrapped without losing
// its own optional interfaces, so a call to one settles:
// when the call saw relayed notifications, it waits until none has been
// handled for settleQuiet since the answer (at most settleMax). A call that saw none
// returns at once. This is a bound on a race, not a proof of order: a
// notification the upstream sent in the last instant, with none before it,
// can still come after the result.

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const (
	settleQuiet = 20 * time.Millisecond
	settleMax   = 250 * time.Millisecond
)

// notes tracks the handling of relayed notifications.
type notes struct {
	mu       sync.Mutex
	handling int       // notifications being handled now
	last     time.Time // when the last one finished
}

// relayed reports whether method is a notification relayed to the caller of
// a call in flight.
func relayed(method string) bool {
	return method == "notifications/message" || method == "notifications/progress" || strings.HasSuffix(method, "/list_changed")
}

// trackNotes is receiving middleware recording when relayed notifications
// are handled, and counting them on their connection (notecount.go).
func (c *Client) trackNotes(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		if !relayed(method) {
			return next(ctx, method, req)
		}
		if n, ok := ctx.Value(notesKey{}).(*noteCount); ok {
			n.begin()
			defer n.end()
		}
		c.notes.mu.Lock()
		c.notes.handling++
		c.notes.mu.Unlock()
		defer func() {
			c.notes.mu.Lock()
			c.notes.handling--
			c.notes.last = time.Now()
			c.notes.mu.Unlock()
		}()
		return next(ctx, method, req)
	}
}

// settle waits, after a call that began at began, until relayed
// notifications have been quiet for settleQuiet (see the file comment).
func (c *Client) settle(ctx context.Context, began time.Time) {
	answered := time.Now()
	deadline := answered.Add(settleMax)
	for {
		c.notes.mu.Lock()
		handling, last := c.notes.handling, c.notes.last
		c.notes.mu.Unlock()
		if handling == 0 && last.Before(began) {
			return // the call saw no relayed notification
		}
		// Quiet since the later of the last notification handled and the
		// answer: one queued just before the answer has had time to start.
		quietSince := answered
		if last.After(quietSince) {
			quietSince = last
		}
		if handling == 0 && time.Since(quietSince) >= settleQuiet {
			return
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// elicitAsIs hands an upstream's elicitation/create to OnElicit before the
// SDK's client checks its schema: the SDK refuses schemas that MCP clients
// accept (an array of anyOf-titled strings, SEP-1330), and the gateway
// must not hide from its client a request that client can answer. The
// downstream client judges the schema.
func (c *Client) elicitAsIs(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		r, ok := req.(*mcp.ElicitRequest)
		if method != "elicitation/create" || !ok || r.Params == nil {
			return next(ctx, method, req)
		}
		return c.opts.OnElicit(ctx, c.srv.Name, r.Params)
	}
}
