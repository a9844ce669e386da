package upstream

import (
	"context"
	"maps"
	"syscall"
	"testing"
	"time"
)

// TestListingNamesItsSession: each session a server opens has the next
// number in Health.Connection, and a listing names, per server, the
// session its tools were listed on, so that a caller can tell a server
// that reconnected since (the gateway's joining).
func TestListingNamesItsSession(t *testing.T) {
	ctx := context.Background()
	s := startSet(t, `{"mcpServers": {"a": `+helperEntry(t, "a", "x", 0)+`, "b": `+helperEntry(t, "b", "y", 0)+`}}`, nil,
		SetOptions{RequireAll: true, Client: Options{Backoff: Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}}})
	list := func(want map[string]uint64) {
		t.Helper()
		l, err := s.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if !maps.Equal(l.Connections, want) {
			t.Errorf("listing's connections %v, want %v", l.Connections, want)
		}
	}
	if a, b := health(s, "a"), health(s, "b"); a.Connection != 1 || b.Connection != 1 {
		t.Fatalf("first sessions numbered %d and %d, want 1", a.Connection, b.Connection)
	}
	list(map[string]uint64{"a": 1, "b": 1})

	pid := health(s, "b").PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "b restarted", func() bool { h := health(s, "b"); return h.State == StateReady && h.PID != pid })
	if a, b := health(s, "a"), health(s, "b"); a.Connection != 1 || b.Connection != 2 {
		t.Errorf("after b restarted: sessions %d and %d, want 1 and 2", a.Connection, b.Connection)
	}
	list(map[string]uint64{"a": 1, "b": 2})
}
