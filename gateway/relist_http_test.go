package gateway

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// An HTTP upstream that answers its first tools/list 503 (a load balancer
// before a warming server; the SDK keeps the session) is joining with a
// list_error, and the gateway lists it again until it answers: it sends
// no tools/list_changed for it. The 503 is a fake's, in front of a real
// SDK server.
func TestTransientListFailureIsRetried(t *testing.T) {
	url, failList := testupstream.WarmingServer(t, "warming")
	failList.Store(true)
	doc := launch.Document{Servers: []launch.Server{{Name: "h", Transport: launch.StreamableHTTP, URL: url, Source: "x.mcp.json:1"}}}
	r, err := doc.Resolve(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	set, err := upstream.StartSet(context.Background(), r, upstream.SetOptions{StartWait: 10 * time.Second, Client: upstream.Options{ConnectTimeout: 5 * time.Second}})
	if err != nil {
		t.Fatal(err)
	}
	list, err := set.List(context.Background())
	if err == nil {
		t.Fatalf("listing succeeded while tools/list answers 503: %v", list.Tools)
	}
	g := newGateway(t, Options{Upstream: set, Tools: []*mcp.Tool{}, RelistBackoff: relistTestBackoff,
		Resolve: func(tools []*mcp.Tool) (*profiles.Resolved, error) { return profiles.Full(tools), nil }})
	if u := upstreamHealth(g.Health(), "h"); u.State != upstream.StateJoining || u.ListError == "" {
		t.Errorf("after a 503 to tools/list h is %s with list_error %q; want joining, with one", u.State, u.ListError)
	}
	failList.Store(false)
	cs := connect(t, g, "")
	waitUntil(t, "h listed by a retried listing", func() bool {
		return g.Health().Upstream.State == "serving" && slices.Contains(listedNames(t, cs), set.Name("h", "one"))
	})
}
