package gateway

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/telemetry"
)

// hangingFakeUpstream is a fake upstream whose tools never answer: each call
// waits for its context and reports how it ended on cancelled. (The real
// everything-server, cut off by a short --call-timeout, is in cmd/server's
// TestCallTimeoutCancelsUpstream.)
type hangingFakeUpstream struct {
	tools     []*mcp.Tool
	started   chan struct{} // receives once per call, when set
	cancelled chan error    // receives how each call ended, when set
}

func (u *hangingFakeUpstream) ListTools(context.Context) ([]*mcp.Tool, error) {
	return slices.Clone(u.tools), nil
}

func (u *hangingFakeUpstream) CallTool(ctx context.Context, _ *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	if u.started != nil {
		u.started <- struct{}{}
	}
	<-ctx.Done()
	if u.cancelled != nil {
		u.cancelled <- ctx.Err()
	}
	return nil, ctx.Err()
}

func TestCallTimeout(t *testing.T) {
	cat := effectTools()
	t.Run("timeout: envelope, upstream call cancelled, recorded", func(t *testing.T) {
		rec, read := recorder(t)
		up := &hangingFakeUpstream{tools: cat.Tools, cancelled: make(chan error, 1)}
		g := newGateway(t, Options{Upstream: up, CallTimeout: 30 * time.Millisecond, Recorder: rec})
		env := callEnvelope(t, connect(t, g, FullProfile), "save", nil)
		if env.Code != CodeUpstreamTimeout || env.Category != CategoryUpstream || !env.Retryable {
			t.Fatalf("envelope %+v, want retryable upstream_timeout", env)
		}
		if err := <-up.cancelled; !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("upstream call ended by %v, want the deadline", err)
		}
		g.Close()
		_, calls := read()
		if len(calls) != 1 || calls[0].Outcome != telemetry.OutcomeUpstreamError {
			t.Errorf("calls %+v, want one upstream_error", calls)
		}
	})
	t.Run("client cancels first: cancelled, not a timeout", func(t *testing.T) {
		rec, read := recorder(t)
		up := &hangingFakeUpstream{tools: cat.Tools, started: make(chan struct{}, 1), cancelled: make(chan error, 1)}
		g := newGateway(t, Options{Upstream: up, CallTimeout: time.Hour, Recorder: rec})
		cs := connect(t, g, FullProfile)
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "save"})
			done <- err
		}()
		<-up.started
		cancel()
		if err := <-done; !errors.Is(err, context.Canceled) {
			t.Fatalf("call: %v, want cancelled", err)
		}
		if err := <-up.cancelled; !errors.Is(err, context.Canceled) {
			t.Errorf("upstream call ended by %v, want the client's cancellation", err)
		}
		g.Close()
		_, calls := read()
		if len(calls) != 1 || calls[0].Outcome != telemetry.OutcomeCancelled {
			t.Errorf("calls %+v, want one cancelled", calls)
		}
	})
	t.Run("no timeout set: the call is not cut off", func(t *testing.T) {
		g := newGateway(t, Options{Upstream: &hangingFakeUpstream{tools: cat.Tools}})
		callCtx, cancel := g.callContext(context.Background())
		defer cancel()
		if _, ok := callCtx.Deadline(); ok {
			t.Error("CallTimeout 0 gave the call a deadline")
		}
	})
}
