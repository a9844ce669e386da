package gateway

// The per-call timeout: a call the upstream does not answer
// within Options.CallTimeout is cancelled (the SDK sends the upstream
// notifications/cancelled) and answered with the upstream_timeout envelope,
// so that one hung upstream tool cannot hold a client's request forever.

import (
	"context"
	"fmt"
	"time"
)

// CodeUpstreamTimeout: the upstream did not answer within the gateway's
// per-call timeout (server --call-timeout); the call was cancelled upstream.
// Category "upstream", retryable.
const CodeUpstreamTimeout = "upstream_timeout"

// callContext bounds a forwarded call by Options.CallTimeout (0: no bound).
func (g *Gateway) callContext(ctx context.Context) (context.Context, context.CancelFunc) {
	if g.opts.CallTimeout <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, g.opts.CallTimeout)
}

// timedOut reports whether callCtx ended by the gateway's own timeout while
// the client's request (ctx) was still live.
func timedOut(ctx, callCtx context.Context) bool {
	return ctx.Err() == nil && callCtx.Err() == context.DeadlineExceeded
}

// timeoutEnvelope is the envelope for a call cut off after d.
func timeoutEnvelope(tool string, d time.Duration) Envelope {
	return Envelope{
		Code:      CodeUpstreamTimeout,
		Message:   fmt.Sprintf("tool %q did not answer within %v (the gateway's per-call timeout); the call was cancelled upstream", tool, d),
		Retryable: true,
		Category:  CategoryUpstream,
		SuggestedActions: []string{
			"retry the call, with smaller input if the tool's work grows with it",
			"ask the operator to raise server --call-timeout if the tool is expected to run this long",
		},
	}
}
