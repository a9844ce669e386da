package upstream

import (
	"context"
	"encoding/json"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// A tools/call result is forwarded as its server sent it: the gateway
// passes the bytes on rather than encoding the SDK's parsed result again.
// The SDK's client still parses the result (ClientSession.CallTool has no
// raw form), so the gateway knows its isError; what it saves is the
// second encoding and the allocations of a copy. Like rawTools, only stdio
// connections are read.

// resultCapture receives the result of the tools/call made with the
// context carrying it.
type resultCapture struct {
	mu   sync.Mutex
	raw  json.RawMessage
	regs []*rawCalls // the connections it was registered with
}

type resultCaptureKey struct{}

// CaptureResult returns ctx carrying a capture for a tools/call made with
// it, and take, which returns the call's result as its server sent it and
// forgets the call. Take returns nil when no result was captured: the
// server is not a stdio one, the call failed or never reached a server.
// A call retried by the SDK (an input_required result answered) is the
// last result received.
func CaptureResult(ctx context.Context) (_ context.Context, take func() json.RawMessage) {
	rc := &resultCapture{}
	return context.WithValue(ctx, resultCaptureKey{}, rc), rc.take
}

func (rc *resultCapture) take() json.RawMessage {
	rc.mu.Lock()
	raw, regs := rc.raw, rc.regs
	rc.regs = nil
	rc.mu.Unlock()
	for _, r := range regs {
		r.forget(rc)
	}
	return raw
}

// rawCalls are the tools/call requests of one connection whose result is
// captured, by request id (ids are the connection's own).
type rawCalls struct {
	mu   sync.Mutex
	byID map[jsonrpc.ID]*resultCapture
}

// sent registers req when it is a tools/call made with a capture.
func (r *rawCalls) sent(ctx context.Context, req *jsonrpc.Request) {
	if req.Method != "tools/call" || !req.IsCall() {
		return
	}
	rc, ok := ctx.Value(resultCaptureKey{}).(*resultCapture)
	if !ok {
		return
	}
	r.mu.Lock()
	if r.byID == nil {
		r.byID = map[jsonrpc.ID]*resultCapture{}
	}
	r.byID[req.ID] = rc
	r.mu.Unlock()
	rc.mu.Lock()
	rc.regs = append(rc.regs, r)
	rc.mu.Unlock()
}

// received gives a registered call's result to its capture. The bytes are
// the message's own (decoding copies them), which the SDK only reads.
func (r *rawCalls) received(resp *jsonrpc.Response) {
	r.mu.Lock()
	rc, ok := r.byID[resp.ID]
	delete(r.byID, resp.ID)
	r.mu.Unlock()
	if !ok {
		return
	}
	rc.mu.Lock()
	rc.raw = nil
	if resp.Error == nil {
		rc.raw = resp.Result
	}
	rc.mu.Unlock()
}

// forget drops what is left of rc's registrations (a call that was never
// answered: cancelled, timed out).
func (r *rawCalls) forget(rc *resultCapture) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for id, v := range r.byID {
		if v == rc {
			delete(r.byID, id)
		}
	}
}
