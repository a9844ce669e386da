package bench_test

import (
	"context"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// TestMeasureSearchProfile: a profile served with search lists find_tools
// and call_tool, and the bench prices them as served: in its model measure
// and in its session cost, where a session costs it their entries more
// than the same tools without search.
func TestMeasureSearchProfile(t *testing.T) {
	cat, err := catalog.Load(filepath.Join("testdata", "tiny-catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	f, err := profiles.DecodeFile(strings.NewReader(`version = 1
default = "plain"

[[profile]]
name = "plain"
tools = ["read_note"]

[[profile]]
name = "searching"
tools = ["read_note"]
search = true
`), "profiles.generated.toml")
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := (&profiles.Set{File: f}).Resolve(cat.Tools)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(context.Background(), gateway.Options{Upstream: gateway.NewCatalogUpstream(cat), Profiles: resolved, ServerName: "toolprof", ServerVersion: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	session, err := price.NewSession([]string{"read_note"}, nil, 0) // two turns
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bench.MeasureProfiles(context.Background(), resolved, g.Server, counter,
		bench.MeasureOptions{Sessions: []price.Session{session}, Cache: price.DefaultCache()})
	if err != nil {
		t.Fatal(err)
	}
	plain, searching := rep.Profile("plain"), rep.Profile("searching")
	for _, name := range []string{toolsearch.FindToolsName, toolsearch.CallToolName} {
		if !slices.Contains(searching.ToolNames, name) || slices.Contains(plain.ToolNames, name) {
			t.Errorf("%s: listed by searching %v, by plain %v; want only by searching", name, searching.ToolNames, plain.ToolNames)
		}
	}
	entries := searching.EntryTokens()
	extra := entries[toolsearch.FindToolsName] + entries[toolsearch.CallToolName]
	if entries[toolsearch.FindToolsName] == 0 || entries[toolsearch.CallToolName] == 0 {
		t.Fatalf("search tools unpriced: %v", entries)
	}
	if d := searching.Model[price.DefaultFamily][price.O200kBase] - plain.Model[price.DefaultFamily][price.O200kBase]; d < extra {
		t.Errorf("model measure grows %d tokens with search, less than its two entries (%d)", d, extra)
	}
	got := searching.SessionCost.Mean - plain.SessionCost.Mean
	if want := (1.25 + 0.1) * float64(extra); math.Abs(got-want) > 0.02 {
		t.Errorf("session costs %v more with search, want %v (written, then read, %d tokens)", got, want, extra)
	}
}
