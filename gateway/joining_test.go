package gateway

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// TestHealthServesNoUpstreamBeforeItsToolsJoin: an upstream whose
// current session's tools the gateway does not serve yet is joining, not
// ready, and the gateway is not serving: when it connects after StartSet
// stopped waiting, when it reconnects offering the same tools, and when the
// listing after a reconnection fails. Its initialize and tools/list wait on
// files (gatedserver), so each step is held open while health is read;
// whenever health says ready or serving, a tools/list through the gateway
// holds the upstream's tools. Behind one upstream and behind two.
func TestHealthServesNoUpstreamBeforeItsToolsJoin(t *testing.T) {
	bin := testupstream.GatedServer(t)
	for _, tt := range []struct {
		name  string
		other bool // a second upstream, ready from the start
	}{
		{"single", false},
		{"many", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			initGate, hold, fail := filepath.Join(dir, "init"), filepath.Join(dir, "hold"), filepath.Join(dir, "fail")
			doc := &launch.Resolved{Version: launch.Version, Servers: []launch.ResolvedServer{
				{Name: "b", Transport: launch.Stdio, Command: bin, Args: []string{"-tools", "write,edit", "-init-gate", initGate, "-list-hold", hold, "-list-fail", fail}},
			}}
			if tt.other {
				doc.Servers = append(doc.Servers, launch.ResolvedServer{Name: "a", Transport: launch.Stdio, Command: bin, Args: []string{"-tools", "read"}})
			}
			var ref atomic.Pointer[Gateway]
			set, err := upstream.StartSet(context.Background(), doc, upstream.SetOptions{StartWait: 10 * time.Millisecond, Client: upstream.Options{
				Backoff: upstream.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
				OnToolsChanged: func(server string) {
					if g := ref.Load(); g != nil {
						g.ToolsChanged(context.Background(), server)
					}
				},
			}})
			if err != nil {
				t.Fatal(err)
			}
			// As cmd/server starts: b is held in initialize, so the first
			// listing cannot hold it; with none listed, no tools.
			l, err := set.List(context.Background())
			if err != nil {
				l = &upstream.Listing{Tools: []*mcp.Tool{}}
			}
			g := newGateway(t, Options{Upstream: set, Tools: l.Tools, Connections: l.Connections,
				Resolve: func(tools []*mcp.Tool) (*profiles.Resolved, error) { return profiles.Full(tools), nil }})
			ref.Store(g)
			g.ToolsChanged(context.Background(), "start") // a, had it connected after the listing
			cs := connect(t, g, "")
			bTools := []string{set.Name("b", "edit"), set.Name("b", "write")}
			tools := map[string][]string{"b": bTools, "a": {set.Name("a", "read")}}

			// agrees checks that health claims no tools the gateway does not
			// list, and returns b's state and the overall one.
			agrees := func(step string) (upstream.State, string) {
				t.Helper()
				h := g.Health()
				listed := listedNames(t, cs)
				var b upstream.State
				for _, u := range h.Upstreams {
					if u.Name == "b" {
						b = u.State
					}
					if u.State != upstream.StateReady && h.Upstream.State != "serving" {
						continue
					}
					for _, name := range tools[u.Name] {
						if !slices.Contains(listed, name) {
							t.Errorf("%s: health says %s is %s (overall %s) but tools/list lacks its %s: %v", step, u.Name, u.State, h.Upstream.State, name, listed)
						}
					}
				}
				return b, h.Upstream.State
			}
			joining := func(step string) {
				t.Helper()
				if b, overall := agrees(step); b != upstream.StateJoining || overall != "joining" {
					t.Errorf("%s: health says b is %s, overall %s; want b joining, overall joining", step, b, overall)
				}
			}
			joined := func(step string) {
				t.Helper()
				waitUntil(t, step+": serving", func() bool { _, overall := agrees(step); return overall == "serving" })
			}
			touch := func(f string) {
				t.Helper()
				if err := os.WriteFile(f, nil, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			remove := func(f string) {
				t.Helper()
				if err := os.Remove(f); err != nil {
					t.Fatal(err)
				}
			}
			held := func(step string) {
				t.Helper()
				waitUntil(t, step+": b's tools/list held", func() bool { _, err := os.Stat(hold + ".arrived"); return err == nil })
				remove(hold + ".arrived")
			}
			kill := func() {
				t.Helper()
				var pid int
				for _, u := range set.Health() {
					if u.Name == "b" {
						pid = u.PID
					}
				}
				if pid == 0 {
					t.Fatal("b has no process to kill")
				}
				if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
					t.Fatal(err)
				}
				waitUntil(t, "b restarted", func() bool {
					for _, u := range set.Health() {
						if u.Name == "b" && u.PID != pid && u.State == upstream.StateReady {
							return true
						}
					}
					return false
				})
			}

			if tt.other {
				waitUntil(t, "a ready", func() bool {
					return slices.ContainsFunc(g.Health().Upstreams, func(u upstream.Health) bool { return u.Name == "a" && u.State == upstream.StateReady })
				})
			}
			if b, _ := agrees("connecting"); b != upstream.StateConnecting {
				t.Fatalf("b is %s before its initialize is answered, want connecting", b)
			}
			// b connects after StartSet stopped waiting; the listing that
			// announces it is held.
			touch(hold)
			touch(initGate)
			held("first connection")
			joining("first connection, listing held")
			remove(hold)
			joined("first connection")

			// b reconnects offering the same tools: still listed again.
			touch(hold)
			kill()
			held("reconnection")
			joining("reconnection, listing held")
			if err := g.ProfilesChanged("profiles.toml"); err != nil {
				t.Fatal(err)
			}
			joining("reconnection, profiles reloaded")
			remove(hold)
			joined("reconnection")
			if err := g.ProfilesChanged("profiles.toml"); err != nil {
				t.Fatal(err)
			}
			if _, overall := agrees("reload after joining"); overall != "serving" {
				t.Errorf("a profile reload after b joined: overall %s, want serving", overall)
			}

			// The listing after a reconnection fails: the tools served are
			// the earlier session's.
			touch(fail)
			kill()
			waitUntil(t, "b's list_error", func() bool {
				for _, u := range set.Health() {
					if u.Name == "b" && u.ListError != "" {
						return true
					}
				}
				return false
			})
			joining("reconnection, listing failed")
			remove(fail)
			g.ToolsChanged(context.Background(), "test")
			if b, overall := agrees("listed again"); b != upstream.StateReady || overall != "serving" {
				t.Errorf("listed again: b %s, overall %s; want ready, serving", b, overall)
			}
		})
	}
}

// waitUntil polls cond until it holds; the guard fails a test that hangs
// and measures nothing.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); !cond(); {
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within 30 s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// TestUpstreamsState: the overall state for every mix of upstream states.
func TestUpstreamsState(t *testing.T) {
	const (
		ready      = upstream.StateReady
		joining    = upstream.StateJoining
		down       = upstream.StateDown
		connecting = upstream.StateConnecting
		needsLogin = upstream.StateNeedsLogin
	)
	for _, tt := range []struct {
		states []upstream.State
		want   string
	}{
		{nil, "serving"},
		{[]upstream.State{ready}, "serving"},
		{[]upstream.State{ready, ready}, "serving"},
		{[]upstream.State{joining}, "joining"},
		{[]upstream.State{ready, joining}, "joining"},
		{[]upstream.State{joining, joining}, "joining"},
		{[]upstream.State{ready, down}, "degraded"},
		{[]upstream.State{joining, down}, "degraded"},
		{[]upstream.State{ready, connecting}, "degraded"},
		{[]upstream.State{ready, needsLogin}, "degraded"},
		{[]upstream.State{down}, "down"},
		{[]upstream.State{down, connecting, needsLogin}, "down"},
	} {
		var ups []upstream.Health
		for i, s := range tt.states {
			ups = append(ups, upstream.Health{Name: strconv.Itoa(i), State: s})
		}
		if got := upstreamsState(ups); got != tt.want {
			t.Errorf("upstreamsState(%v) = %q, want %q", tt.states, got, tt.want)
		}
	}
}

// TestMarkJoining: a ready server is joining unless the catalog holds the
// tools of its current session; other states are left as they are.
func TestMarkJoining(t *testing.T) {
	for _, tt := range []struct {
		name   string
		state  upstream.State
		conn   uint64
		joined map[string]uint64
		want   upstream.State
	}{
		{"listed on this session", upstream.StateReady, 2, map[string]uint64{"s": 2}, upstream.StateReady},
		{"listed on an earlier session", upstream.StateReady, 3, map[string]uint64{"s": 2}, upstream.StateJoining},
		{"never listed", upstream.StateReady, 1, map[string]uint64{"other": 1}, upstream.StateJoining},
		{"no listing recorded", upstream.StateReady, 1, nil, upstream.StateJoining},
		{"down", upstream.StateDown, 2, map[string]uint64{"s": 1}, upstream.StateDown},
		{"connecting", upstream.StateConnecting, 0, nil, upstream.StateConnecting},
		{"needs login", upstream.StateNeedsLogin, 1, nil, upstream.StateNeedsLogin},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ups := []upstream.Health{{Name: "s", State: tt.state, Connection: tt.conn}}
			markJoining(ups, tt.joined)
			if ups[0].State != tt.want {
				t.Errorf("state %s on session %d with %v joined: %s, want %s", tt.state, tt.conn, tt.joined, ups[0].State, tt.want)
			}
		})
	}
}
