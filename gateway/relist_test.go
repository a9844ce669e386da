package gateway

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// relistTestBackoff keeps the retried listings of these tests close
// together.
var relistTestBackoff = upstream.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond}

// gatedDoc resolves a launch document of gatedserver upstreams, each
// given its args; "${GATE}" in them resolves to gate, a value scrubbed
// from whatever the server's errors carry.
func gatedDoc(t *testing.T, bin, gate string, servers map[string][]string) *launch.Resolved {
	t.Helper()
	doc := launch.Document{Version: launch.Version}
	for name, args := range servers {
		doc.Servers = append(doc.Servers, launch.Server{Name: name, Transport: launch.Stdio, Command: bin, Args: args, Source: "test.mcp.json:1"})
	}
	r, err := doc.Resolve(func(k string) (string, bool) { return gate, k == "GATE" })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// listings counts the tools/list requests a gatedserver run with
// -list-count file received.
func listings(t *testing.T, file string) int {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil && !os.IsNotExist(err) {
		t.Fatal(err)
	}
	return strings.Count(string(b), "\n")
}

// killUpstream kills server's process and waits for its next session.
func killUpstream(t *testing.T, set *upstream.Set, server string) {
	t.Helper()
	var pid int
	for _, u := range set.Health() {
		if u.Name == server {
			pid = u.PID
		}
	}
	if pid == 0 {
		t.Fatalf("%s has no process to kill", server)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, server+" restarted", func() bool {
		return slices.ContainsFunc(set.Health(), func(u upstream.Health) bool {
			return u.Name == server && u.PID != pid && u.State == upstream.StateReady
		})
	})
}

func upstreamHealth(h Health, server string) upstream.Health {
	for _, u := range h.Upstreams {
		if u.Name == server {
			return u
		}
	}
	return upstream.Health{}
}

// TestFailedListingIsRetried: when the listing after b reconnects fails
// (tools/list answers an error, or is not answered within the connect
// timeout) while b is up, the gateway lists again with backoff, without
// any tools/list_changed from b: b joins (ready, its tools listed,
// serving) once a listing succeeds, and then no more listings are made.
// Each retry is logged once, naming b and its error with resolved values
// scrubbed, and health counts the retries while they go on.
func TestFailedListingIsRetried(t *testing.T) {
	bin := testupstream.GatedServer(t)
	for _, tt := range []struct {
		name  string
		gate  string // the gatedserver flag the gate file is given to
		other bool   // a second upstream, ready throughout
		// changed lists b again as its tools/list_changed would, on the
		// session the catalog holds, instead of b reconnecting: b stays
		// ready (its last listing served) while the listing fails.
		changed bool
		want    string // in b's list_error
	}{
		{"fails", "-list-fail", false, false, "tools/list refused while " + launch.Redaction + " exists"},
		{"fails behind two", "-list-fail", true, false, "tools/list refused while " + launch.Redaction + " exists"},
		{"times out behind two", "-list-hold", true, false, "not answered within"},
		{"fails after a change", "-list-fail", true, true, "tools/list refused while " + launch.Redaction + " exists"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			gate, count := filepath.Join(dir, "gate"), filepath.Join(dir, "count")
			servers := map[string][]string{"b": {"-tools", "write,edit", "-list-count", count, tt.gate, "${GATE}"}}
			if tt.other {
				servers["a"] = []string{"-tools", "read"}
			}
			var log syncbuf.Buffer
			var ref atomic.Pointer[Gateway]
			set, err := upstream.StartSet(context.Background(), gatedDoc(t, bin, gate, servers), upstream.SetOptions{StartWait: 30 * time.Second, Client: upstream.Options{
				Backoff:        upstream.Backoff{Initial: 10 * time.Millisecond, Max: 100 * time.Millisecond},
				ConnectTimeout: 2 * time.Second,
				OnToolsChanged: func(server string) {
					if g := ref.Load(); g != nil {
						g.ToolsChanged(context.Background(), server)
					}
				},
			}})
			if err != nil {
				t.Fatal(err)
			}
			g := newGateway(t, Options{Upstream: set, RelistBackoff: relistTestBackoff, Logger: slog.New(slog.NewTextHandler(&log, nil)),
				Resolve: func(tools []*mcp.Tool) (*profiles.Resolved, error) { return profiles.Full(tools), nil }})
			ref.Store(g)
			cs := connect(t, g, "")
			bTools := []string{set.Name("b", "edit"), set.Name("b", "write")}
			serving := func() bool {
				listed := listedNames(t, cs)
				return g.Health().Upstream.State == "serving" && !slices.ContainsFunc(bTools, func(n string) bool { return !slices.Contains(listed, n) })
			}
			waitUntil(t, "serving at start", serving)

			// b reconnects, or its tools change, and the listing fails.
			if err := os.WriteFile(gate, nil, 0o600); err != nil {
				t.Fatal(err)
			}
			wantState, wantOverall := upstream.StateJoining, "joining"
			if tt.changed {
				wantState, wantOverall = upstream.StateReady, "serving"
				g.ToolsChanged(context.Background(), "b")
			} else {
				killUpstream(t, set, "b")
			}
			waitUntil(t, "b's list_error", func() bool { return upstreamHealth(g.Health(), "b").ListError != "" })
			if u := upstreamHealth(g.Health(), "b"); u.State != wantState || !strings.Contains(u.ListError, tt.want) {
				t.Errorf("after the failed listing b is %s with list_error %q; want %s, with %q", u.State, u.ListError, wantState, tt.want)
			}
			failed := listings(t, count)
			waitUntil(t, "the failed listing retried", func() bool { return listings(t, count) > failed })
			if h := g.Health(); h.Upstream.ListRetries == 0 || h.Upstream.State != wantOverall {
				t.Errorf("while retrying: upstream.state %s, list_retries %d; want %s and at least 1", h.Upstream.State, h.Upstream.ListRetries, wantOverall)
			}

			// The upstream answers again; b sends no list_changed.
			if err := os.Remove(gate); err != nil {
				t.Fatal(err)
			}
			waitUntil(t, "b listed by a retried listing", func() bool { return serving() && upstreamHealth(g.Health(), "b").ListError == "" })
			if u := upstreamHealth(g.Health(), "b"); u.State != upstream.StateReady || u.ListError != "" {
				t.Errorf("after joining b is %s with list_error %q; want ready, none", u.State, u.ListError)
			}

			// The retries stop: the retrier ends, and no listing follows
			// within ten of its longest waits.
			waitUntil(t, "list_retries back to 0", func() bool { return g.Health().Upstream.ListRetries == 0 })
			after := listings(t, count)
			time.Sleep(10 * relistTestBackoff.Max)
			if n := listings(t, count); n != after {
				t.Errorf("%d more tools/list sent to b after it joined; want none", n-after)
			}

			retried := regexp.MustCompile(`msg="upstream's tools could not be listed while it is up; listing again" server=b error="((?:[^"\\]|\\.)*)" retry=(\d+)`)
			seen := map[string]bool{}
			for _, line := range strings.Split(log.String(), "\n") {
				if !strings.Contains(line, "listing again") {
					continue
				}
				m := retried.FindStringSubmatch(line)
				switch {
				case m == nil:
					t.Errorf("retry logged as %q; want the server b, its error and the retry", line)
				case seen[m[2]]:
					t.Errorf("retry %s logged twice: %q", m[2], line)
				case !strings.Contains(m[1], tt.want) || strings.Contains(line, gate):
					t.Errorf("retry logged with error %q; want %q, the gate's path scrubbed", m[1], tt.want)
				}
				if m != nil {
					seen[m[2]] = true
				}
			}
			if len(seen) == 0 {
				t.Errorf("no retry logged; log:\n%s", log.String())
			}
		})
	}
}

// TestCloseEndsRelistBackoff: Close while the retrier waits out its
// backoff (an hour) returns at once and leaves no goroutine behind.
func TestCloseEndsRelistBackoff(t *testing.T) {
	bin := testupstream.GatedServer(t)
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	gate := filepath.Join(t.TempDir(), "gate")
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	doc := gatedDoc(t, bin, gate, map[string][]string{
		"a": {"-tools", "read"},
		"b": {"-tools", "write", "-list-fail", "${GATE}"},
	})
	set, err := upstream.StartSet(context.Background(), doc, upstream.SetOptions{StartWait: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(context.Background(), Options{Upstream: set, RelistBackoff: upstream.Backoff{Initial: time.Hour}})
	if err != nil {
		set.Close()
		t.Fatal(err)
	}
	if u := upstreamHealth(g.Health(), "b"); u.State != upstream.StateJoining || u.ListError == "" {
		g.Close()
		t.Fatalf("b is %s with list_error %q after New's listing failed; want joining, with one", u.State, u.ListError)
	}
	g.relist.mu.Lock()
	running := g.relist.running
	g.relist.mu.Unlock()
	if !running {
		g.Close()
		t.Fatal("no retrier runs after New's listing left b joining")
	}
	closed := make(chan error, 1)
	go func() { closed <- g.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Close did not return within 30 s while the retry waited out an hour's backoff")
	}
}
