package main

import (
	"context"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"runtime"
	"runtime/metrics"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
)

// heldStackEnv marks the child process TestHTTPHeldStreamStack runs its
// measurement in.
const heldStackEnv = "TOOLPROF_TEST_HELD_STACK"

// The standalone SSE stream of an open session holds its connection's
// goroutine for as long as the session, with the hardening's and the
// gateway's handler frames under the SDK's. The runtime halves a stack only
// while less than a quarter of it is in use, so frames that are there only
// to route the request would keep that goroutine at twice the stack the
// SDK's own handler leaves it. Measured against the SDK's handler behind
// the same hardening, serving the same sessions in the same process: the
// gateway's stacks per open session may exceed it by its own session
// watcher, not by a doubled stack.
func TestHTTPHeldStreamStack(t *testing.T) {
	if os.Getenv(heldStackEnv) == "" {
		// In a child without adaptive starting stacks: every goroutine
		// then starts at the minimum, so the difference is the frames'.
		cmd := exec.Command(os.Args[0], "-test.run=^TestHTTPHeldStreamStack$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), heldStackEnv+"=1", "GODEBUG=adaptivestackstart=0")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		t.Logf("child:\n%s", out)
		return
	}
	const sessions = 100
	open := func(t *testing.T, h http.Handler) float64 {
		srv := httptest.NewServer(h)
		t.Cleanup(srv.Close) // after the sessions' own cleanups
		client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 2 * sessions}}
		t.Cleanup(client.CloseIdleConnections)
		connect := func(n int) {
			for range n {
				cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(context.Background(),
					&mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp", HTTPClient: client, MaxRetries: -1},
					&mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { cs.Close() })
			}
		}
		connect(5)
		before := stackBytes()
		connect(sessions)
		return float64(stackBytes()-before) / sessions
	}
	tool := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}
	hardened := func(h http.Handler, openSessions func() int) http.Handler {
		hard := &hardening{maxBodyBytes: defaultMaxBodyBytes, maxSessions: defaultMaxSessions, openSessions: openSessions}
		return hard.handler(h)
	}
	floor := mcp.NewServer(&mcp.Implementation{Name: "floor", Version: "1"}, nil)
	floor.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{}, nil
	})
	sdk := open(t, hardened(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return floor }, nil),
		func() int { return 0 }))
	g, err := gateway.New(context.Background(), gateway.Options{Upstream: gateway.NewCatalogUpstream(&catalog.Catalog{Tools: []*mcp.Tool{tool}})})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	ours := open(t, hardened(g.HTTPHandler(), g.OpenSessions))
	// The gateway's session watcher is an idle goroutine; a doubled held
	// stack would add at least as much again.
	idle := idleStack()
	if extra := ours - sdk; extra >= 2*idle {
		t.Errorf("stack per open session: gateway %.0f B, the SDK's handler %.0f B: %.0f B more, want under %.0f B (the session watcher's, an idle goroutine's %.0f B, only)", ours, sdk, extra, 2*idle, idle)
	}
	t.Logf("stack per open session: gateway %.0f B, the SDK's handler %.0f B, an idle goroutine %.0f B", ours, sdk, idle)
}

// idleStack is the stack an idle goroutine holds (the minimum, larger
// under the race detector).
func idleStack() float64 {
	const n = 100
	before := stackBytes()
	stop := make(chan struct{})
	defer close(stop)
	for range n {
		go func() { <-stop }()
	}
	return float64(stackBytes()-before) / n
}

// stackBytes is the goroutine stack memory in use once collections have
// shrunk what they can (each halves a stack at most once).
func stackBytes() uint64 {
	for range 6 {
		runtime.GC()
	}
	s := []metrics.Sample{{Name: "/memory/classes/heap/stacks:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}
