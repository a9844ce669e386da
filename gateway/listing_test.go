package gateway

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// hangingListServer is a real MCP server over streamable HTTP offering the
// everything-server's tool names, whose tools/list, once hang is set, is
// never answered: inFlight receives a value when one arrives, and it waits
// until release is closed or it is cancelled.
func hangingListServer(t *testing.T) (url string, hang *atomic.Bool, inFlight <-chan struct{}, release chan struct{}) {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "hang", Version: "1"}, nil)
	for _, name := range testupstream.EverythingTools {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
	}
	hang = &atomic.Bool{}
	arrived := make(chan struct{}, 1)
	release = make(chan struct{})
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" && hang.Load() {
				select {
				case arrived <- struct{}{}:
				default:
				}
				select {
				case <-release:
				case <-ctx.Done():
					return nil, ctx.Err()
				}
			}
			return next(ctx, method, req)
		}
	})
	ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	t.Cleanup(ts.Close)
	return ts.URL, hang, arrived, release
}

// TestProfileReloadTakesEffectWhileAListingHangs: an upstream stops
// answering tools/list while the gateway lists after a change; a reload
// that narrows a profile is applied to the tools last listed at once: the
// next session does not list the tool removed, and calling it is refused.
func TestProfileReloadTakesEffectWhileAListingHangs(t *testing.T) {
	url, hang, inFlight, release := hangingListServer(t)
	defer close(release)
	doc := &launch.Resolved{Version: launch.Version, Servers: []launch.ResolvedServer{{Name: "hang", Transport: launch.StreamableHTTP, URL: url}}}
	// The listing must still hang when the reload comes: its bound is far off.
	set, err := upstream.StartSet(context.Background(), doc, upstream.SetOptions{RequireAll: true, Client: upstream.Options{ConnectTimeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	tools, err := set.ListTools(context.Background())
	if err != nil {
		set.Close()
		t.Fatal(err)
	}
	const generated = "version = 1\ndefault = \"p\"\n\n[[profile]]\nname = \"p\"\ntools = [%s]\n"
	wide := writeProfiles(t, tools, strings.Replace(generated, "%s", `"test_audio_content", "test_simple_text"`, 1), "version = 1\n")
	narrow := writeProfiles(t, tools, strings.Replace(generated, "%s", `"test_simple_text"`, 1), "version = 1\n")
	var inForce atomic.Pointer[profiles.Resolved]
	inForce.Store(wide)
	g := newGateway(t, Options{Upstream: set, Tools: tools, Profiles: wide,
		Resolve: func([]*mcp.Tool) (*profiles.Resolved, error) { return inForce.Load(), nil }})
	if got := listedNames(t, connect(t, g, "p")); !slices.Contains(got, "test_audio_content") {
		t.Fatalf("setup: profile p lists %v, want test_audio_content among them", got)
	}

	hang.Store(true)
	listing, stopListing := context.WithCancel(context.Background())
	defer stopListing()
	listed := make(chan struct{})
	go func() { g.ToolsChanged(listing, "hang"); close(listed) }()
	defer func() { stopListing(); <-listed }()
	<-inFlight

	inForce.Store(narrow) // profiles.toml edited: test_audio_content removed from p
	reloaded := make(chan struct{})
	go func() { g.ProfilesChanged("profiles"); close(reloaded) }()
	select {
	case <-reloaded:
	case <-time.After(30 * time.Second): // a guard against a hang, not a measure
		t.Fatal("the profile reload is waiting on the listing of an upstream that does not answer")
	}
	cs := connect(t, g, "p")
	if got := listedNames(t, cs); slices.Contains(got, "test_audio_content") {
		t.Errorf("a session opened after the narrowing reload lists %v, want test_audio_content left out", got)
	}
	if env := callEnvelope(t, cs, "test_audio_content", map[string]any{}); env.Code != CodeToolNotInProfile {
		t.Errorf("call of the tool the reload removed: envelope %+v, want %s", env, CodeToolNotInProfile)
	}
}

// TestToolsChangedGivesUpWaitingForAHungListing: a change heard while an
// earlier listing waits on an upstream waits for it only as long as its
// own context, and keeps the catalog.
func TestToolsChangedGivesUpWaitingForAHungListing(t *testing.T) {
	url, hang, inFlight, release := hangingListServer(t)
	defer close(release)
	doc := &launch.Resolved{Version: launch.Version, Servers: []launch.ResolvedServer{{Name: "hang", Transport: launch.StreamableHTTP, URL: url}}}
	set, err := upstream.StartSet(context.Background(), doc, upstream.SetOptions{RequireAll: true, Client: upstream.Options{ConnectTimeout: time.Hour}})
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, Options{Upstream: set})
	before := g.cat()
	hang.Store(true)
	first, stopFirst := context.WithCancel(context.Background())
	firstDone := make(chan struct{})
	go func() { g.ToolsChanged(first, "hang"); close(firstDone) }()
	defer func() { stopFirst(); <-firstDone }()
	<-inFlight
	second, stopSecond := context.WithCancel(context.Background())
	stopSecond()
	secondDone := make(chan struct{})
	go func() { g.ToolsChanged(second, "hang"); close(secondDone) }()
	select {
	case <-secondDone:
	case <-time.After(30 * time.Second): // a guard against a hang, not a measure
		t.Fatal("a change whose context has ended is still waiting for the earlier listing")
	}
	if g.cat() != before {
		t.Error("a change whose wait was given up replaced the catalog")
	}
}
