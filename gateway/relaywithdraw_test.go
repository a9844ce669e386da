package gateway

import (
	"context"
	"errors"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
)

// askingFakeUpstream is a fake upstream whose one tool asks the caller (an
// elicitation or a sampling request relayed by the gateway), withdraws the
// question itself once the caller has it (as an upstream does when it no
// longer needs the answer) and answers the call at once. The real
// everything-server never withdraws a question while its call goes on.
type askingFakeUpstream struct {
	g      atomic.Pointer[Gateway]
	kind   string          // "elicitation" or "sampling"
	asked  <-chan struct{} // the caller's handler has the question
	result chan error      // how the relayed request ended
}

func (u *askingFakeUpstream) ListTools(context.Context) ([]*mcp.Tool, error) {
	return []*mcp.Tool{{Name: "ask", InputSchema: map[string]any{"type": "object"}}}, nil
}

func (u *askingFakeUpstream) CallTool(ctx context.Context, _ *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	qctx, withdraw := context.WithCancel(ctx)
	go func() {
		select {
		case <-u.asked:
		case <-ctx.Done():
		}
		withdraw()
	}()
	var err error
	if u.kind == "sampling" {
		_, err = u.g.Load().CreateMessage(qctx, "", &mcp.CreateMessageParams{MaxTokens: 1, Messages: []*mcp.SamplingMessage{{Role: "user", Content: &mcp.TextContent{Text: "hi"}}}})
	} else {
		_, err = u.g.Load().Elicit(qctx, "", &mcp.ElicitParams{Message: "name?", RequestedSchema: map[string]any{"type": "object"}})
	}
	u.result <- err
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done without an answer"}}}, nil
}

// TestRelayedRequestWithdrawn: when a call waiting on an elicitation or a
// sampling request that the gateway relayed to the client ends (the client
// cancels it, the gateway's --call-timeout cuts it, or the upstream
// withdraws its question and answers), the client's handler for the relayed
// request is cancelled (it receives notifications/cancelled for it), over
// streamable HTTP and over an in-memory (stdio-like) transport.
//
// Over HTTP the SDK sends that cancellation after the relayed call has
// returned, on the stream of the downstream request, which the call's
// answer closes: without routing it elsewhere once the call is ending, it
// was lost whenever the answer won that race.
func TestRelayedRequestWithdrawn(t *testing.T) {
	type kind struct{ name, tool string }
	kinds := []kind{{"elicitation", "test_elicitation"}, {"sampling", "test_sampling"}}
	triggers := []string{"client cancels", "call timeout", "upstream withdraws"}
	for _, transport := range []string{"http", "in-memory"} {
		for _, k := range kinds {
			for _, trigger := range triggers {
				t.Run(transport+"/"+k.name+"/"+trigger, func(t *testing.T) {
					t.Parallel()
					asked := make(chan struct{}, 1)
					ended := make(chan error, 1)
					release := make(chan struct{})
					defer close(release)
					toUpstream := make(chan struct{}, 1) // the fake upstream's signal
					wait := func(ctx context.Context) {
						asked <- struct{}{}
						toUpstream <- struct{}{}
						select {
						case <-ctx.Done():
							ended <- ctx.Err()
						case <-release:
						}
					}
					copts := &mcp.ClientOptions{
						ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
							wait(ctx)
							return nil, errors.New("no answer")
						},
						CreateMessageHandler: func(ctx context.Context, _ *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
							wait(ctx)
							return nil, errors.New("no answer")
						},
					}
					var g *Gateway
					var fake *askingFakeUpstream
					tool := k.tool
					switch trigger {
					case "upstream withdraws":
						fake = &askingFakeUpstream{kind: k.name, asked: toUpstream, result: make(chan error, 1)}
						g = newGateway(t, Options{Upstream: fake})
						fake.g.Store(g)
						tool = "ask"
					case "call timeout":
						g = relayGatewayOpts(t, Options{CallTimeout: 300 * time.Millisecond}, testupstream.EverythingServer(t))
					default:
						g = relayGateway(t)
					}
					var cs *mcp.ClientSession
					if transport == "http" {
						srv := httptest.NewServer(g.HTTPHandler())
						t.Cleanup(srv.Close)
						var err error
						cs, err = mcp.NewClient(&mcp.Implementation{Name: "t", Version: "0"}, copts).Connect(context.Background(),
							&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
						if err != nil {
							t.Fatal(err)
						}
						t.Cleanup(func() { cs.Close() })
					} else {
						cs = connectWith(t, g, copts)
					}
					ctx, cancel := context.WithCancel(context.Background())
					defer cancel()
					args := map[string]any{"message": "name?"}
					if k.name == "sampling" {
						args = map[string]any{"prompt": "hi"}
					}
					called := make(chan error, 1)
					go func() {
						_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: tool, Arguments: args})
						called <- err
					}()
					select {
					case <-asked:
					case err := <-called:
						// Both may be ready when the upstream withdraws at
						// once: then the handler had the question first.
						select {
						case <-asked:
							called <- err
						default:
							t.Fatalf("the call ended (%v) before its relayed %s reached the client", err, k.name)
						}
					case <-time.After(10 * time.Second):
						t.Fatalf("the relayed %s never reached the client", k.name)
					}
					if trigger == "client cancels" {
						cancel()
					}
					select {
					case <-ended:
					case <-time.After(10 * time.Second):
						t.Fatalf("the client's %s handler is still waiting 10 s after the call ended: the relayed request was not withdrawn", k.name)
					}
					if err := <-called; (err != nil) != (trigger == "client cancels") {
						t.Errorf("call: %v, want an error only when the client cancelled", err)
					}
					if fake != nil {
						if err := <-fake.result; err == nil {
							t.Errorf("the withdrawn relayed %s ended without an error", k.name)
						}
					}
				})
			}
		}
	}
}
