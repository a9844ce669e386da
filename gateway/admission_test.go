package gateway

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// hold starts n calls of cs that the hanging upstream keeps in flight
// until the test ends.
func hold(t *testing.T, cs *mcp.ClientSession, up *hangingFakeUpstream, n int) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel) // runs before cs's cleanup, which waits for the calls
	for range n {
		go cs.CallTool(ctx, &mcp.CallToolParams{Name: "save"})
		<-up.started
	}
}

func TestCallsInFlightBounded(t *testing.T) {
	tests := []struct {
		name                      string
		perSession, all           int
		heldA, heldB              int    // calls held in sessions A and B first
		busyIn                    string // session ("A" or "B") whose next call is answered busy
		mention                   string
		otherSessionStillAdmitted bool
	}{
		{"per session", 2, 100, 2, 0, "A", "--max-session-calls", true},
		{"per gateway", 100, 3, 2, 1, "B", "--max-calls", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := effectTools()
			up := &hangingFakeUpstream{tools: cat.Tools, started: make(chan struct{}, 1)}
			g := newGateway(t, Options{Upstream: up, MaxSessionCalls: tt.perSession, MaxCalls: tt.all})
			a, b := connect(t, g, FullProfile), connect(t, g, FullProfile)
			hold(t, a, up, tt.heldA)
			hold(t, b, up, tt.heldB)
			cs := map[string]*mcp.ClientSession{"A": a, "B": b}[tt.busyIn]
			env := callEnvelope(t, cs, "save", nil)
			if env.Code != CodeBusy || !env.Retryable || env.Category != CategoryCapacity || !strings.Contains(env.Message, tt.mention) {
				t.Fatalf("envelope %+v, want retryable busy naming %s", env, tt.mention)
			}
			if got := g.Health().Calls; got.Busy != 1 || got.InFlight != tt.heldA+tt.heldB {
				t.Errorf("health calls %+v, want 1 busy and %d in flight", got, tt.heldA+tt.heldB)
			}
			if tt.otherSessionStillAdmitted {
				hold(t, b, up, 1) // the bound is A's alone: B's call reaches the upstream
			}
		})
	}
}

// A progress notification naming a call that has ended is counted, and
// health warns of it; a log message with no call in flight is counted apart
// (by design it goes to no session) and does not warn.
func TestUnrelayedNotificationsCounted(t *testing.T) {
	g := newGateway(t, Options{Upstream: &hangingFakeUpstream{tools: effectTools().Tools}})
	ctx := context.Background()
	g.Progress(ctx, "up", &mcp.ProgressNotificationParams{ProgressToken: progressPrefix + "7", Progress: 1})
	g.Progress(ctx, "up", &mcp.ProgressNotificationParams{ProgressToken: "not-ours", Progress: 1})
	g.Log(ctx, "up", &mcp.LoggingMessageParams{Level: "info", Data: "x"})
	h := g.Health()
	if h.Notifications != (NotificationsHealth{ProgressDropped: 1, LogsUnrouted: 1}) {
		t.Errorf("notifications %+v, want 1 progress dropped and 1 log unrouted", h.Notifications)
	}
	if !slices.ContainsFunc(h.Warnings, func(w string) bool { return strings.Contains(w, "1 progress notifications dropped") }) {
		t.Errorf("warnings %q: want the dropped progress", h.Warnings)
	}
}
