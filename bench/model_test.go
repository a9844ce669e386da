package bench

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// decorated is tools with everything the model is not sent: titles,
// annotations, output schemas, _meta and icons.
func decorated(bare []*mcp.Tool, iconBytes int) []*mcp.Tool {
	out := make([]*mcp.Tool, len(bare))
	for i, t := range bare {
		d := *t
		d.Title = "Title of " + t.Name
		d.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true, Title: "annotated " + t.Name}
		d.Meta = mcp.Meta{"vendor/effect": "read"}
		d.OutputSchema = map[string]any{"type": "object", "properties": map[string]any{"ok": map[string]any{"type": "boolean"}}}
		if iconBytes > 0 {
			d.Icons = []mcp.Icon{{Source: "data:image/png;base64," + strings.Repeat("iVBORw0KGgoAAAANSUhEUgAA", iconBytes/24+1), MIMEType: "image/png"}}
		}
		out[i] = &d
	}
	return out
}

// TestModelMeasureIgnoresWireOnlyFields: what the wire carries beside a
// tool's name, description and schema changes the wire measure and not the
// model measure; the icons are priced on the wire on their own.
func TestModelMeasureIgnoresWireOnlyFields(t *testing.T) {
	c := newTestCounter(t)
	bare := loadTiny(t).Tools
	opts := &mcp.ServerOptions{Instructions: "Notes live in the vault."}
	measure := func(tools []*mcp.Tool) *exchange.Exchange {
		ex, err := exchange.Measure(context.Background(), newSDKServer(tools, opts), exchange.Options{Counter: c})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	plain, rich := measure(bare), measure(decorated(bare, 2000))
	pm, err := exchange.ModelMeasure(plain, c)
	if err != nil {
		t.Fatal(err)
	}
	rm, err := exchange.ModelMeasure(rich, c)
	if err != nil {
		t.Fatal(err)
	}
	if rich.Tokens[price.O200kBase] <= plain.Tokens[price.O200kBase] {
		t.Fatalf("decorating did not grow the wire: %d vs %d", rich.Tokens[price.O200kBase], plain.Tokens[price.O200kBase])
	}
	for _, f := range price.Families() {
		for _, tok := range price.TokenizerNames() {
			if pm[f].Total[tok] != rm[f].Total[tok] || pm[f].Total[tok] == 0 {
				t.Errorf("%s %s: model measure %d plain, %d decorated; want equal, non-zero", f, tok, pm[f].Total[tok], rm[f].Total[tok])
			}
		}
		wantInstr, _ := price.EncodeInstructions(f, opts.Instructions)
		n, _ := c.Count(string(wantInstr))
		if pm[f].Instructions[price.O200kBase] != n[price.O200kBase] {
			t.Errorf("%s: instructions %d tokens, want %d", f, pm[f].Instructions[price.O200kBase], n[price.O200kBase])
		}
	}
	if pm[price.Anthropic].Total[price.O200kBase] >= plain.Tokens[price.O200kBase] {
		t.Errorf("model %d >= wire %d: the model measure should leave the JSON-RPC envelope out", pm[price.Anthropic].Total[price.O200kBase], plain.Tokens[price.O200kBase])
	}
	pi, err := exchange.IconTokens(plain, c)
	if err != nil {
		t.Fatal(err)
	}
	ri, err := exchange.IconTokens(rich, c)
	if err != nil {
		t.Fatal(err)
	}
	if pi[price.O200kBase] != 0 || ri[price.O200kBase] < 3*500 {
		t.Errorf("icon tokens: plain %d, decorated %d; want 0 and the icons' share", pi[price.O200kBase], ri[price.O200kBase])
	}
}

// TestReportNotesIconsAndToolCaps: the notes name Cursor over 40 tools,
// VS Code over 128, and icons over a quarter of the wire.
func TestReportNotesIconsAndToolCaps(t *testing.T) {
	c := newTestCounter(t)
	bare := loadTiny(t).Tools
	measure := func(tools []*mcp.Tool) *exchange.Exchange {
		ex, err := exchange.Measure(context.Background(), newSDKServer(tools, nil), exchange.Options{Counter: c})
		if err != nil {
			t.Fatal(err)
		}
		return ex
	}
	full := measure(bare)
	iconic := measure(decorated(bare, 3000))
	r, err := BuildReport([]ProfileInput{
		{Name: "forty", Exchange: exchangeOf(40, 100, 50, 50, "")},
		{Name: "cursor", Exchange: exchangeOf(41, 100, 50, 50, "")},
		{Name: "vscode", Exchange: exchangeOf(129, 100, 50, 50, "")},
		{Name: "iconic", Exchange: iconic},
		{Name: "full", Exchange: full},
	}, full, bare, c)
	if err != nil {
		t.Fatal(err)
	}
	notes := strings.Join(r.notes(RenderOptions{}), "\n")
	for _, want := range []string{
		`profile "cursor" lists 41 tools: Cursor sends only the first 40`,
		`profile "vscode" lists 129 tools: VS Code refuses more than 128`,
		`profile "iconic": icons are`,
	} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes lack %q:\n%s", want, notes)
		}
	}
	for _, absent := range []string{`"forty"`, `profile "full": icons`} {
		if strings.Contains(notes, absent) {
			t.Errorf("notes name %s:\n%s", absent, notes)
		}
	}
}

// TestAddSessionCost prices hand-made sessions on a report of the tiny
// catalog: a profile that serves them, one that refuses one, one with a
// group, against full and the floor, with exact expected figures.
func TestAddSessionCost(t *testing.T) {
	c := newTestCounter(t)
	cat := loadTiny(t)
	tool := func(names ...string) []*mcp.Tool {
		var out []*mcp.Tool
		for _, n := range names {
			for _, t := range cat.Tools {
				if t.Name == n {
					out = append(out, t)
				}
			}
		}
		return out
	}
	ex := func(names ...string) *exchange.Exchange {
		return &exchange.Exchange{Bytes: 1, Tokens: map[string]int{price.O200kBase: 1}, Tools: tool(names...)}
	}
	full := ex("read_note", "write_note", "delete_note")
	r, err := BuildReport([]ProfileInput{
		{Name: "reader", Exchange: ex("read_note")},
		{Name: "grouped", Exchange: ex("read_note"), Groups: map[string][]string{"edit": {"write_note", "delete_note"}}},
		{Name: "rw", Exchange: ex("read_note", "write_note")},
		{Name: "full", Exchange: full},
	}, full, cat.Tools, c)
	if err != nil {
		t.Fatal(err)
	}
	p := map[string]float64{}
	for _, tc := range r.ToolCosts {
		p[tc.Name] = float64(tc.Model[price.Anthropic])
	}
	read, write, del := p["read_note"], p["write_note"], p["delete_note"]
	all := read + write + del
	// s1: read, then write at turn 1 (2 turns); s2: read only, no turns
	// given (1 call: 2 turns); a call to a gateway tool is ignored.
	sessions := []price.Session{
		{Turns: 2, Calls: []price.Call{{Tool: "read_note", Turn: 0}, {Tool: "enable_tools", Turn: 1}, {Tool: "write_note", Turn: 1}}},
		{Turns: 2, Calls: []price.Call{{Tool: "read_note", Turn: 0}}},
	}
	if err := r.AddSessionCost(sessions, price.DefaultCache()); err != nil {
		t.Fatal(err)
	}
	cached := func(first, later float64) float64 { return 1.25*first + 0.1*later }
	fullMean := (cached(all, all) + cached(all, all)) / 2
	want := map[string]struct {
		mean    float64
		refused int
	}{
		"full":    {fullMean, 0},
		"rw":      {(cached(read+write, read+write) + cached(read+write, read+write)) / 2, 0},
		"reader":  {(1.25*read + 1.25*all + cached(read, read)) / 2, 1},              // s1 refused at turn 1: full from there
		"grouped": {(1.25*read + 1.25*(read+write+del) + cached(read, read)) / 2, 0}, // edit switched on at turn 1
	}
	for name, w := range want {
		sc := r.Profile(name).SessionCost
		if sc == nil {
			t.Fatalf("%s: no session cost", name)
		}
		if math.Abs(sc.Mean-round2(w.mean)) > 0.006 || sc.Refused != w.refused {
			t.Errorf("%s: mean %v refused %d, want %v and %d", name, sc.Mean, sc.Refused, round2(w.mean), w.refused)
		}
		if math.Abs(sc.ShareOfFull-round4(w.mean/fullMean)) > 1e-9 {
			t.Errorf("%s: share %v, want %v", name, sc.ShareOfFull, round4(w.mean/fullMean))
		}
	}
	floor := (cached(read+write, read+write) + cached(read, read)) / 2
	if s := r.Sessions; s.Sessions != 2 || s.IgnoredCalls != 1 || math.Abs(s.Floor.Mean-round2(floor)) > 0.006 {
		t.Errorf("summary %+v, want 2 sessions, 1 ignored call, floor mean %v", s, floor)
	}
	if err := r.AddSessionCost(nil, price.DefaultCache()); err == nil {
		t.Error("no sessions priced without error")
	}
	if err := r.AddSessionCost(sessions, price.CacheModel{Write: -1}); err == nil {
		t.Error("a negative multiplier was accepted")
	}
}

// TestMeasureProfilesPricesIconsAsServed: a profile served without icons
// (its icons = "drop", or a server dropping them for profiles that do not
// say) is priced without them on the wire, its model measure unchanged,
// and only a profile that keeps them is warned of them.
func TestMeasureProfilesPricesIconsAsServed(t *testing.T) {
	c := newTestCounter(t)
	tools := decorated(loadTiny(t).Tools, 3000)
	var names []string
	for _, tool := range tools {
		names = append(names, `"`+tool.Name+`"`)
	}
	pin := "pin = [" + strings.Join(names, ", ") + "]\nallow_destructive = true\n"
	pol, err := profiles.DecodePolicy(strings.NewReader("version = 1\n[[profile]]\nname = \"bare\"\nicons = \"drop\"\n"+pin+"[[profile]]\nname = \"iconic\"\n"+pin), "profiles.toml")
	if err != nil {
		t.Fatal(err)
	}
	set := &profiles.Set{File: &profiles.File{Version: profiles.Version, Default: profiles.FullProfile}, Policy: pol}
	resolved, err := set.Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	measure := func(dropIcons bool) (*Report, map[string]*ProfileCost) {
		g, err := gateway.New(context.Background(), gateway.Options{Upstream: gateway.NewCatalogUpstream(&catalog.Catalog{Tools: tools}), Tools: tools, Profiles: resolved, DropIcons: dropIcons})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		r, err := MeasureProfiles(context.Background(), resolved, g.Server, c, MeasureOptions{})
		if err != nil {
			t.Fatal(err)
		}
		by := map[string]*ProfileCost{}
		for i := range r.Profiles {
			by[r.Profiles[i].Name] = &r.Profiles[i]
		}
		return r, by
	}
	for _, tc := range []struct {
		serverDrops bool
		bare        []string // profiles served without icons
	}{
		{false, []string{"bare"}},
		{true, []string{"bare", "iconic", profiles.FullProfile}},
	} {
		r, by := measure(tc.serverDrops)
		notes := strings.Join(r.notes(RenderOptions{}), "\n")
		iconic := by["iconic"]
		if tc.serverDrops {
			_, kept := measure(false)
			iconic = kept["iconic"]
		}
		for _, name := range []string{"bare", "iconic", profiles.FullProfile} {
			p, dropped := by[name], slices.Contains(tc.bare, name)
			warned := strings.Contains(notes, `profile "`+name+`": icons are`)
			switch {
			case dropped && (p.IconTokens[price.O200kBase] != 0 || p.Tokens[price.O200kBase] >= iconic.Tokens[price.O200kBase] || warned):
				t.Errorf("server drops %v: %s served without icons priced %d wire tokens (%d of icons, warned %v), with them %d", tc.serverDrops, name, p.Tokens[price.O200kBase], p.IconTokens[price.O200kBase], warned, iconic.Tokens[price.O200kBase])
			case !dropped && (p.IconTokens[price.O200kBase] < 3*500 || !warned):
				t.Errorf("server drops %v: %s served with icons priced %d icon tokens, warned %v", tc.serverDrops, name, p.IconTokens[price.O200kBase], warned)
			}
			if got, want := p.Model[price.DefaultFamily][price.O200kBase], iconic.Model[price.DefaultFamily][price.O200kBase]; got != want {
				t.Errorf("server drops %v: %s model measure %d, want %d whatever the icons", tc.serverDrops, name, got, want)
			}
		}
	}
}
