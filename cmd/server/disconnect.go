package main

// A client that drops its HTTP connection in the middle of a request
// leaves no work running upstream. MCP lets a server keep working after a
// disconnection so that a client can resume the response stream, but the
// gateway's sessions keep no event store, so such a response can never be delivered: the work is
// wasted, and an upstream tool may keep running for minutes. So when the
// connection of a POST carrying a request closes before its answer, the
// gateway delivers notifications/cancelled for that request to the session
// itself, as the client would have. The request's context ends, the
// upstream call is cancelled (the SDK sends it notifications/cancelled) and
// the call is recorded as cancelled.

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
)

// requestID returns the id of pb when it is one JSON-RPC request (not a
// notification, a response, a batch or initialize).
func requestID(pb *jsonrpcwire.Body) (json.RawMessage, bool) {
	if pb == nil || pb.Batch || len(pb.Msgs) != 1 {
		return nil, false
	}
	msg := pb.Msgs[0]
	method, ok := msg.MethodName()
	if !ok || method == "" || method == "initialize" || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return nil, false
	}
	return msg.ID, true
}

// discardResponse is the ResponseWriter of the cancellation the gateway
// delivers itself: nobody reads its answer.
type discardResponse struct{ h http.Header }

func (d *discardResponse) Header() http.Header         { return d.h }
func (d *discardResponse) Write(b []byte) (int, error) { return len(b), nil }
func (d *discardResponse) WriteHeader(int)             {}

// serveCancelling serves r, whose body readBody read as pb, with next,
// and cancels a request of an established session whose connection closes
// before next has answered.
func serveCancelling(next http.Handler, w http.ResponseWriter, r *http.Request, pb *jsonrpcwire.Body) {
	if r.Method != http.MethodPost || r.Header.Get("Mcp-Session-Id") == "" {
		next.ServeHTTP(w, r)
		return
	}
	id, ok := requestID(pb)
	if !ok {
		next.ServeHTTP(w, r)
		return
	}
	// Delivered when the connection closed before the request was done:
	// while next still runs, or (the SDK itself returns on a closed
	// connection) just as it returns. A client that closes after
	// reading its answer at worst cancels a finished request, which the
	// session ignores.
	stop := context.AfterFunc(r.Context(), func() {
		note := fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%s,"reason":"the client's connection closed"}}`, id)
		cancel := r.Clone(context.WithoutCancel(r.Context()))
		cancel.Body = io.NopCloser(strings.NewReader(note))
		cancel.ContentLength = int64(len(note))
		next.ServeHTTP(&discardResponse{h: http.Header{}}, cancel)
	})
	next.ServeHTTP(w, r)
	// net/http ends the context only after ServeHTTP returns, unless
	// the connection closed: stopped here, it never fires for a
	// request answered on a live connection.
	stop()
}
