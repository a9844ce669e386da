package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"maps"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/golden"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// tinyGateway serves the fixed three-tool catalog under the test profiles
// with the gateway's own code, as profiler bench --catalog does.
func tinyGateway(t testing.TB, pageSize int) (*gateway.Gateway, *profiles.Resolved, *profiles.Set, *catalog.Catalog) {
	t.Helper()
	cat, err := catalog.Load(filepath.Join("testdata", "tiny-catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	set, err := profiles.Load(filepath.Join("testdata", "profiles.generated.toml"))
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := set.Resolve(cat.Tools)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(context.Background(), gateway.Options{
		Upstream:      gateway.NewCatalogUpstream(cat),
		Profiles:      resolved,
		PageSize:      pageSize,
		ServerName:    "toolprof",
		ServerVersion: "test",
		CursorKey:     []byte("fixed cursor key for golden files"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g, resolved, set, cat
}

// TestGatewayExchangeGolden captures the exchange of each served profile of
// the tiny catalog and compares it byte for byte with testdata.
func TestGatewayExchangeGolden(t *testing.T) {
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	g, resolved, _, _ := tinyGateway(t, 2)
	for _, tc := range []struct {
		profile  string
		paginate bool
		golden   string
		tools    []string
	}{
		{"notes", false, "exchange-notes.golden", []string{"read_note", "write_note"}},
		{"reader", false, "exchange-reader.golden", []string{"read_note"}},
		{"full", false, "exchange-full.golden", []string{"delete_note", "read_note", "write_note"}},
		{"full", true, "exchange-full-paged.golden", []string{"delete_note", "read_note", "write_note"}},
	} {
		t.Run(tc.golden, func(t *testing.T) {
			srv, err := g.Server(tc.profile)
			if err != nil {
				t.Fatal(err)
			}
			ex, err := exchange.Measure(context.Background(), srv, exchange.Options{
				Counter: c, Paginate: tc.paginate, FirstCursor: gateway.StartCursor})
			if err != nil {
				t.Fatal(err)
			}
			golden.Assert(t, filepath.Join("testdata", tc.golden), bench.Transcript(ex))
			var names []string
			for _, tool := range ex.Tools {
				names = append(names, tool.Name)
			}
			if !slices.Equal(names, tc.tools) {
				t.Errorf("listed %v, want %v", names, tc.tools)
			}
			if want := resolved.Profiles[tc.profile].Instructions; ex.Instructions != want {
				t.Errorf("instructions %q, want the profile's %q", ex.Instructions, want)
			}
			wantPages := 1
			if tc.paginate {
				wantPages = 2 // three tools, two a page
			}
			if ex.Pages != wantPages || ex.NextCursor != "" {
				t.Errorf("pages %d (cursor left %q), want %d", ex.Pages, ex.NextCursor, wantPages)
			}
		})
	}
}

// TestMeasureProfilesReportsMissingTools: a profile naming a tool the
// catalog lacks is measured without it and reported, not a failure.
func TestMeasureProfilesReportsMissingTools(t *testing.T) {
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	g, resolved, set, cat := tinyGateway(t, 20)
	r, err := bench.MeasureProfiles(context.Background(), resolved, g.Server, c,
		bench.MeasureOptions{Missing: bench.MissingTools(set, cat.Tools)})
	if err != nil {
		t.Fatal(err)
	}
	if got := r.Missing["notes"]; !slices.Equal(got, []string{"vanished_tool"}) {
		t.Errorf("missing for notes = %v, want [vanished_tool]", got)
	}
	if len(r.Missing) != 1 {
		t.Errorf("missing = %v, want only notes", r.Missing)
	}
	var names []string
	for _, p := range r.Profiles {
		names = append(names, p.Name)
	}
	if !slices.Equal(names, []string{"notes", "reader", "full"}) {
		t.Errorf("profiles %v, want file order then full", names)
	}
	notes, full := r.Profile("notes"), r.Profile("full")
	if notes.Tools != 2 || full.Tools != 3 || full.ShareOfFull != 1 {
		t.Errorf("notes tools %d, full tools %d share %v", notes.Tools, full.Tools, full.ShareOfFull)
	}
	if notes.Coverage == nil || *notes.Coverage != 0.95 || notes.HoldoutCoverage == nil || *notes.HoldoutCoverage != 0.8 {
		t.Errorf("notes coverage figures not carried from the profiles file: %v %v", notes.Coverage, notes.HoldoutCoverage)
	}
	if r.Profile("reader").Coverage != nil {
		t.Error("reader has no measured figures; coverage should be absent")
	}
	// Rounded to four places, as the report rounds it.
	if want := math.Round(float64(notes.Tokens[price.O200kBase])/float64(full.Tokens[price.O200kBase])*1e4) / 1e4; notes.ShareOfFull != want {
		t.Errorf("share %v, want %v (%d of %d tokens)", notes.ShareOfFull, want, notes.Tokens[price.O200kBase], full.Tokens[price.O200kBase])
	}
	if notes.Effects["read"] != 1 || notes.Effects["mutate"] != 1 || notes.Effects["destructive"] != 0 || full.Effects["destructive"] != 1 {
		t.Errorf("effects notes %v full %v", notes.Effects, full.Effects)
	}
	if len(r.ToolCosts) != 3 {
		t.Errorf("%d tool costs, want one per catalog tool", len(r.ToolCosts))
	}
	var md strings.Builder
	if err := r.WriteMarkdown(&md, bench.RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(md.String(), "vanished_tool") {
		t.Errorf("markdown does not report the missing tool:\n%s", md.String())
	}
}

// TestServedToolCosts prices the entries the gateway serves, _meta and all:
// each equals the served entry's own bytes, and is dearer than the
// catalog's own definition of the tool whenever the gateway adds to it.
func TestServedToolCosts(t *testing.T) {
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	g, _, _, cat := tinyGateway(t, 20)
	srv, err := g.Server("full")
	if err != nil {
		t.Fatal(err)
	}
	served, err := exchange.ServedToolCosts(context.Background(), srv, c)
	if err != nil {
		t.Fatal(err)
	}
	rawBytes := map[string]int{}
	for _, tool := range cat.Tools {
		def, ok := cat.RawTool(tool.Name)
		if !ok {
			t.Fatalf("%s: the catalog keeps no definition", tool.Name)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, def); err != nil {
			t.Fatal(err)
		}
		rawBytes[tool.Name] = compact.Len()
	}
	ex, err := exchange.Measure(context.Background(), srv, exchange.Options{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	last := string(ex.Messages[len(ex.Messages)-1].Raw)
	if len(served) != 3 {
		t.Fatalf("%d served costs, want 3", len(served))
	}
	for i, tc := range served {
		if tc.Name != ex.Tools[i].Name {
			t.Errorf("served cost %d is %q, want %q", i, tc.Name, ex.Tools[i].Name)
		}
		if len(ex.Tools[i].Meta) > 0 && tc.Bytes <= rawBytes[tc.Name] {
			t.Errorf("%s: served with _meta %v at %d bytes, not dearer than the catalog's %d", tc.Name, ex.Tools[i].Meta, tc.Bytes, rawBytes[tc.Name])
		}
		if !strings.Contains(last, `"name":"`+tc.Name+`"`) {
			t.Errorf("%s not in the served listing", tc.Name)
		}
	}

	// A server that pages even without a cursor cannot be priced in one go.
	paged := mcp.NewServer(&mcp.Implementation{Name: "paged", Version: "1"}, &mcp.ServerOptions{PageSize: 1})
	for _, tool := range cat.Tools {
		paged.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	if _, err := exchange.ServedToolCosts(context.Background(), paged, c); err == nil || !strings.Contains(err.Error(), "paged") {
		t.Errorf("paging server: err = %v, want one saying it paged", err)
	}
}

// TestServedToolCostsAsTravelled: each served cost is its entry's bytes as
// the gateway sent them, on definitions that re-encoding would change: the
// server's \u escapes (kept, six bytes each) and its '<', '>' and '&'
// (sent as they are).
func TestServedToolCostsAsTravelled(t *testing.T) {
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Decode(strings.NewReader(`{"tools": [
  {"name": "escaped", "description": "caf\u00e9 \u83b7\u53d6", "inputSchema": {"type": "object"}},
  {"name": "arrows", "description": "(a) => <b> & c", "inputSchema": {"type": "object"}}
]}`))
	if err != nil {
		t.Fatal(err)
	}
	srv := catalogServer(t, cat)
	costs, err := exchange.ServedToolCosts(context.Background(), srv, c)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exchange.Measure(context.Background(), srv, exchange.Options{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(ex.Messages[len(ex.Messages)-1].Raw, &res); err != nil {
		t.Fatal(err)
	}
	if len(res.Result.Tools) != len(costs) {
		t.Fatalf("%d entries served, %d priced", len(res.Result.Tools), len(costs))
	}
	for i, entry := range res.Result.Tools {
		want, err := c.Count(string(entry))
		if err != nil {
			t.Fatal(err)
		}
		if costs[i].Bytes != len(entry) || !maps.Equal(costs[i].Tokens, want) {
			t.Errorf("%s: priced %d bytes %v tokens, served %d bytes %v tokens: %s", costs[i].Name, costs[i].Bytes, costs[i].Tokens, len(entry), want, entry)
		}
	}
	if s := string(ex.Messages[len(ex.Messages)-1].Raw); !strings.Contains(s, `caf\u00e9 \u83b7\u53d6`) || !strings.Contains(s, `(a) => <b> & c`) {
		t.Errorf("the listing is not the catalog's text as written: %s", s)
	}
}

// catalogServer serves cat through a gateway without profiles (every tool
// as full).
func catalogServer(t *testing.T, cat *catalog.Catalog) *mcp.Server {
	t.Helper()
	g, err := gateway.New(context.Background(), gateway.Options{Upstream: gateway.NewCatalogUpstream(cat)})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv, err := g.Server("")
	if err != nil {
		t.Fatal(err)
	}
	return srv
}
