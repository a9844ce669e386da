package gateway

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
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

// TestUpstreamToolNamesAreBounded: tool names an upstream offers that are
// too long, not UTF-8, or hold control or format characters are left out
// of the catalog, with a health warning naming the upstream and quoting a
// cut form of the name; calling one is refused as an unknown tool. The
// others are served.
func TestUpstreamToolNamesAreBounded(t *testing.T) {
	long := "x\x1b[2J\r\n" + strings.Repeat("A", 10<<10)
	bad := []string{long, strings.Repeat("a", maxToolName+1), "a\xffb", "tab\tname", "bidi\u202egnp", "zero\u200bwidth", ""}
	obj := map[string]any{"type": "object"}
	cat := &catalog.Catalog{Tools: []*mcp.Tool{{Name: "ok", InputSchema: obj}, {Name: strings.Repeat("b", maxToolName), InputSchema: obj}}}
	for _, n := range bad {
		cat.Tools = append(cat.Tools, &mcp.Tool{Name: n, InputSchema: obj})
	}
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat)})
	cs := connect(t, g, "")
	got := listedNames(t, cs)
	slices.Sort(got)
	if want := []string{strings.Repeat("b", maxToolName), "ok"}; !slices.Equal(got, want) {
		t.Errorf("listed %q, want only %q", got, want)
	}
	warnings := g.Health().Warnings
	if len(warnings) != len(bad) {
		t.Errorf("health warnings %q: want one per name left out (%d)", warnings, len(bad))
	}
	for _, w := range warnings {
		if len(w) > 300 || strings.ContainsAny(w, "\x1b\r\n\t\u202e\u200b") || !strings.Contains(w, "left out") {
			t.Errorf("warning %q: want it to say the tool was left out, quoting a cut, escaped name", w)
		}
	}
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: long, Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "unknown tool") {
		t.Errorf("call of a name left out: %+v, %v; want it refused as an unknown tool", res, err)
	}
}

// TestToolNamesOfRealServersAreServed: every tool name of the recorded
// real catalogs (and of a launch document's server__tool namespacing) is
// one the gateway serves.
func TestToolNamesOfRealServersAreServed(t *testing.T) {
	names := []string{"get_me", "search_code", "browser_navigate", "GorillaFileSystem.cd", "TwitterAPI.post_tweet",
		"github__create_pull_request", "kubernetes__pods_list_in_namespace", "resources_get", "book-flight", "a", "naïve tool"}
	dir := os.Getenv("TOOLPROF_DATA")
	if dir == "" {
		dir = "../../shared/data"
	}
	paths, _ := filepath.Glob(filepath.Join(dir, "catalogs", "*.json"))
	for _, p := range paths {
		c, err := catalog.Load(p)
		if err != nil {
			t.Fatalf("%s: %v", p, err)
		}
		for _, tl := range c.Tools {
			names = append(names, tl.Name, "server"+upstream.DefaultSeparator+tl.Name)
		}
	}
	t.Logf("%d names, %d recorded catalogs in %s", len(names), len(paths), dir)
	for _, n := range names {
		if p := toolNameProblem(n); p != "" {
			t.Errorf("tool %q refused: %s", n, p)
		}
	}
}

// TestUpstreamToolNameLeftOutNamesItsUpstream: behind a Set of two real
// servers, the warning for a name left out names the server offering it,
// and that server's other tools are served.
func TestUpstreamToolNameLeftOutNamesItsUpstream(t *testing.T) {
	serve := func(names ...string) string {
		s := mcp.NewServer(&mcp.Implementation{Name: "s", Version: "1"}, &mcp.ServerOptions{Logger: slog.New(slog.DiscardHandler)})
		for _, n := range names {
			s.AddTool(&mcp.Tool{Name: n, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
		}
		ts := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
		t.Cleanup(ts.Close)
		return ts.URL
	}
	doc := &launch.Resolved{Version: launch.Version, Servers: []launch.ResolvedServer{
		{Name: "evil", Transport: launch.StreamableHTTP, URL: serve("fine", "clear\x1b[2Jscreen")},
		{Name: "good", Transport: launch.StreamableHTTP, URL: serve("read")},
	}}
	set, err := upstream.StartSet(context.Background(), doc, upstream.SetOptions{RequireAll: true})
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, Options{Upstream: set})
	got := listedNames(t, connect(t, g, ""))
	slices.Sort(got)
	if want := []string{"evil__fine", "good__read"}; !slices.Equal(got, want) {
		t.Errorf("listed %q, want %q", got, want)
	}
	if w := g.Health().Warnings; len(w) != 1 || !strings.Contains(w[0], `upstream "evil"`) || !strings.Contains(w[0], `"evil__clear\x1b[2Jscreen"`) {
		t.Errorf("health warnings %q: want one naming upstream \"evil\" and the name quoted", w)
	}
}

// TestUpstreamToolNamesLeftOutOnRefresh: a name left out when the tools
// change is refused as at start, and profiles resolved by the caller
// against a listing with such a name are resolved again (Options.Resolve),
// or refused without it.
func TestUpstreamToolNamesLeftOutOnRefresh(t *testing.T) {
	obj := map[string]any{"type": "object"}
	cat := &catalog.Catalog{Tools: []*mcp.Tool{{Name: "ok", InputSchema: obj}, {Name: "line\nbreak", InputSchema: obj}}}
	stale := profiles.Full(cat.Tools) // lists "line\nbreak"
	if _, err := New(context.Background(), Options{Upstream: NewCatalogUpstream(cat), Tools: cat.Tools, Profiles: stale}); err == nil {
		t.Error("New with profiles resolved against a name left out and no Resolve: no error")
	}
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Tools: cat.Tools, Profiles: stale,
		Resolve: func(tools []*mcp.Tool) (*profiles.Resolved, error) { return profiles.Full(tools), nil }})
	if got := listedNames(t, connect(t, g, "")); !slices.Equal(got, []string{"ok"}) {
		t.Errorf("at start listed %q, want [ok]", got)
	}
	cat.Tools = append(cat.Tools, &mcp.Tool{Name: "new", InputSchema: obj}, &mcp.Tool{Name: "bell\a", InputSchema: obj})
	g.ToolsChanged(context.Background(), "test")
	got := listedNames(t, connect(t, g, ""))
	slices.Sort(got)
	if want := []string{"new", "ok"}; !slices.Equal(got, want) {
		t.Errorf("after the change listed %q, want %q", got, want)
	}
	if w := g.Health().Warnings; len(w) != 2 {
		t.Errorf("health warnings %q: want one per name left out (2)", w)
	}
}

// TestChangeWithoutResolveKeepsProfiles: a library caller that gives
// resolved Profiles and no Resolve keeps them across a profile reload and
// an upstream's tools change; before, either change served every tool as
// "full", the tools the profile leaves out among them.
func TestChangeWithoutResolveKeepsProfiles(t *testing.T) {
	cat := everythingCatalog()
	narrow := writeProfiles(t, cat.Tools, "version = 1\ndefault = \"p\"\n\n[[profile]]\nname = \"p\"\ntools = [\"test_simple_text\"]\n", "version = 1\n")
	for _, tt := range []struct {
		name   string
		change func(g *Gateway) error
	}{
		{"ProfilesChanged", func(g *Gateway) error { return g.ProfilesChanged("profiles.toml") }},
		{"ToolsChanged", func(g *Gateway) error { g.ToolsChanged(context.Background(), "catalog"); return nil }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Tools: cat.Tools, Profiles: narrow})
			err := tt.change(g)
			if tt.name == "ProfilesChanged" && (err == nil || !strings.Contains(err.Error(), "Options.Resolve")) {
				t.Errorf("ProfilesChanged without Resolve: %v, want an error naming Options.Resolve", err)
			}
			if got := listedNames(t, connect(t, g, "p")); !slices.Equal(got, []string{"test_simple_text"}) {
				t.Errorf("profile p lists %v after the change, want [test_simple_text]: the profiles given", got)
			}
		})
	}
}
