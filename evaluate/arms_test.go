package evaluate_test

import (
	"context"
	"encoding/json"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

const armsCatalog = `{"tools": [
	{"name": "fs.ls", "description": "List the files of a directory.", "inputSchema": {"type": "object", "properties": {"path": {"type": "string"}}}},
	{"name": "fs.cat", "description": "Print a file's contents.", "inputSchema": {"type": "object", "properties": {"file_name": {"type": "string"}}}},
	{"name": "fs.mv", "description": "Move a file to another directory.", "inputSchema": {"type": "object", "properties": {"source": {"type": "string"}, "destination": {"type": "string"}}}},
	{"name": "mail.send", "description": "Send a mail message to a user.", "inputSchema": {"type": "object", "properties": {"receiver": {"type": "string"}, "message": {"type": "string"}}}},
	{"name": "mail.inbox", "description": "Show the received mail messages.", "inputSchema": {"type": "object"}},
	{"name": "trade.buy", "description": "Buy shares of a stock at the market price.", "inputSchema": {"type": "object", "properties": {"symbol": {"type": "string"}, "amount": {"type": "integer"}}}},
	{"name": "trade.quote", "description": "Get the price of a stock.", "inputSchema": {"type": "object", "properties": {"symbol": {"type": "string"}}}}
]}`

const armsProfiles = `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["fs.cat", "fs.ls"]

[[profile]]
name = "grouped"
tools = ["fs.cat", "fs.ls"]
groups = ["mail"]

[[group]]
name = "mail"
description = "mail: send, inbox"
tools = ["mail.inbox", "mail.send"]

[search]
sessions = 2

[[search.tool]]
name = "trade.quote"
weight = 0.3
`

func armsFixture(t *testing.T) evaluate.Config {
	t.Helper()
	cat, err := catalog.Decode(strings.NewReader(armsCatalog))
	if err != nil {
		t.Fatal(err)
	}
	f, err := profiles.DecodeFile(strings.NewReader(armsProfiles), "profiles.generated.toml")
	if err != nil {
		t.Fatal(err)
	}
	return evaluate.Config{Catalog: cat, Profiles: &profiles.Set{File: f}, Cache: price.DefaultCache()}
}

// TestRunArms replays two sessions against every arm: one the base
// serves alone, one that needs a mail tool (in the group) and a trade tool
// (found by search with the turn's words).
func TestRunArms(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Limit, cfg.ClientResults = 2, 2 // the catalog is small: more would return every tool at once
	cfg.Sessions = []evaluate.Session{
		{ID: "listed", Turns: []string{"show me the files"}, Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}, {Tool: "fs.cat", Turn: 0}}},
		{ID: "needs more", Turns: []string{"list the files", "send a mail message to bob", "buy 10 shares of the stock ACME"},
			Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}, {Tool: "mail.send", Turn: 1}, {Tool: "trade.buy", Turn: 2}, {Tool: "trade.buy", Turn: 2}, {Tool: "gone", Turn: 2}}},
	}
	rep, err := evaluate.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Needed != 5 {
		t.Errorf("needed uses %d, want 5 (first calls of catalog tools)", rep.Needed)
	}
	for _, tc := range []struct {
		arm      string
		served   float64
		searches float64
		recall1  float64 // -1: none reported
	}{
		{evaluate.ArmFull, 1, 0, -1},
		{evaluate.ArmDefault, 0.6, 0, -1},
		{evaluate.ArmGroups, 0.8, 0, -1},
		// The mail search returned trade.quote (its prior), which a
		// search never returns twice: trade.buy then ranks first.
		{evaluate.ArmSearch, 1, 1, 1},
		// The client's search has no such memory: trade.quote's prior
		// puts it above trade.buy, found at rank 2.
		{evaluate.ArmAlwaysLoad, 1, 1, 0.5},
	} {
		a := rep.Arm(tc.arm)
		if a == nil {
			t.Fatalf("no %s arm in %+v", tc.arm, rep.Arms)
		}
		if a.ServedShare != tc.served || a.SearchesPerSession != tc.searches {
			t.Errorf("%s: served %v, searches per session %v; want %v, %v", tc.arm, a.ServedShare, a.SearchesPerSession, tc.served, tc.searches)
		}
		if got, ok := a.RecallAt["1"]; ok != (tc.recall1 >= 0) || (ok && got != tc.recall1) {
			t.Errorf("%s: recall@1 %v (reported %v), want %v", tc.arm, got, ok, tc.recall1)
		}
		if a.CostPerSession.Mean <= 0 || (tc.arm == evaluate.ArmDefault && a.CostShareOfFull >= 1) {
			t.Errorf("%s: cost %+v, share of full %v", tc.arm, a.CostPerSession, a.CostShareOfFull)
		}
	}
	if a := rep.Arm(evaluate.ArmFull); a.CostShareOfFull != 1 {
		t.Errorf("full's share of itself %v", a.CostShareOfFull)
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Arms []struct {
			Name           string             `json:"name"`
			Protocols      string             `json:"protocols"`
			ServedShare    *float64           `json:"served_share"`
			RecallAt       map[string]float64 `json:"recall_at"`
			Searches       *float64           `json:"searches_per_session"`
			Cost           map[string]float64 `json:"cost_per_session"`
			CostShareOfFul *float64           `json:"cost_share_of_full"`
		} `json:"arms"`
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	for _, a := range shape.Arms {
		if a.ServedShare == nil || a.Searches == nil || a.CostShareOfFul == nil || len(a.Cost) != 3 || a.Protocols == "" {
			t.Errorf("arm %s JSON lacks a figure: %s", a.Name, b)
		}
	}
	if s := shape.Arms[3]; s.Name != "search" || len(s.RecallAt) != 3 {
		t.Errorf("search arm JSON %+v", s)
	}
}

// TestRunPricesServedSearchTools: a session the base serves alone costs
// the search arm what it costs the default arm plus find_tools' and
// call_tool's entries as the gateway lists them, written on the one turn.
func TestRunPricesServedSearchTools(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Sessions = []evaluate.Session{{ID: "listed", Turns: []string{"show me the files"}, Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}}}}
	rep, err := evaluate.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	var extra int
	for _, def := range []string{toolsearch.FindToolsDefinition, toolsearch.CallToolDefinition} {
		var tool mcp.Tool
		if err := json.Unmarshal([]byte(def), &tool); err != nil {
			t.Fatal(err)
		}
		schema, _ := json.Marshal(tool.InputSchema) // as the gateway serves it
		n, err := price.ToolTokens(counter, price.DefaultFamily, []price.Tool{{Name: tool.Name, Description: tool.Description, InputSchema: schema}})
		if err != nil {
			t.Fatal(err)
		}
		extra += n[0]
	}
	got := rep.Arm(evaluate.ArmSearch).CostPerSession.Mean - rep.Arm(evaluate.ArmDefault).CostPerSession.Mean
	if want := 1.25 * float64(extra); math.Abs(got-want) > 0.01 {
		t.Errorf("search arm costs %v more than the default, want %v (1.25 x %d tokens of find_tools and call_tool)", got, want, extra)
	}
}

// TestRunSearchResultsAreConversation: the definitions a search returns
// are written in the turn of the search and read from the cache after,
// so a later turn costs the search arm more than a session without the
// search, and the arm's cost grows with the limit.
func TestRunSearchResultsAreConversation(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Sessions = []evaluate.Session{{ID: "s", Turns: []string{"buy shares of ACME stock", "and again"},
		Calls: []evaluate.Call{{Tool: "trade.buy", Turn: 0}, {Tool: "trade.buy", Turn: 1}}}}
	cost := func(limit int) float64 {
		t.Helper()
		c := cfg
		c.Limit, c.Cut = limit, -1 // every hit up to the limit
		rep, err := evaluate.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		a := rep.Arm(evaluate.ArmSearch)
		if a.ServedShare != 1 {
			t.Fatalf("limit %d: served %v", limit, a.ServedShare)
		}
		return a.CostPerSession.Mean
	}
	if two, five := cost(2), cost(5); !(five > two) {
		t.Errorf("limit 5 costs %v, limit 2 %v: the returned definitions are not priced", five, two)
	}
}

// TestRunSearchCut: the search arm returns find_tools' hits cut as the
// gateway cuts them (toolsearch.Cut): a query whose best hits stand out
// is answered those alone, priced as such an answer, and a needed tool the
// cut drops is a miss, whatever the limit.
func TestRunSearchCut(t *testing.T) {
	run := func(query string, limit int, cut float64) *evaluate.ArmReport {
		t.Helper()
		cfg := armsFixture(t)
		cfg.Limit, cfg.Cut = limit, cut
		cfg.Sessions = []evaluate.Session{{ID: "s", Turns: []string{query, "and again"},
			Calls: []evaluate.Call{{Tool: "trade.buy", Turn: 0}, {Tool: "trade.buy", Turn: 1}}}}
		rep, err := evaluate.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Arm(evaluate.ArmSearch)
	}
	// trade.quote (its prior) and trade.buy match the words; the three
	// other searchable tools score 0.
	const clear = "buy shares of ACME stock"
	cut, two, all := run(clear, 5, 0.5), run(clear, 2, -1), run(clear, 5, -1)
	if cut.ServedShare != 1 || cut.CostPerSession.Mean != two.CostPerSession.Mean || !(cut.CostPerSession.Mean < all.CostPerSession.Mean) {
		t.Errorf("%q at limit 5 cut at 0.5: served %v at %v; want served as at limit 2 uncut (%v), below limit 5 uncut (%v)",
			clear, cut.ServedShare, cut.CostPerSession.Mean, two.CostPerSession.Mean, all.CostPerSession.Mean)
	}
	// trade.buy scores about 0.27 of trade.quote here.
	const far = "get the price of a stock"
	if got := run(far, 5, -1).ServedShare; got != 1 {
		t.Errorf("%q uncut: served %v, want 1", far, got)
	}
	for _, c := range []float64{0.5, 1} {
		if got := run(far, 5, c).ServedShare; got != 0 {
			t.Errorf("%q cut at %g: served %v, want 0 (trade.buy below the cut)", far, c, got)
		}
	}
	if got := run(far, 5, 0.2).ServedShare; got != 1 {
		t.Errorf("%q cut at 0.2: served %v, want 1", far, got)
	}
}

func TestRunRefusesCut(t *testing.T) {
	for _, c := range []float64{1.5, math.NaN()} {
		cfg := armsFixture(t)
		cfg.Cut = c
		if _, err := evaluate.Run(context.Background(), cfg); err == nil || !strings.Contains(err.Error(), "want 0 to 1") {
			t.Errorf("cut %g: %v, want a refusal naming the valid range", c, err)
		}
	}
}

// TestRunSearchResultsPricedAsAnswered: find_tools' answer is text the
// model reads, so a search adds the tokens of that text as the gateway
// writes it (toolsearch.Answer), written in its turn and read in the next.
func TestRunSearchResultsPricedAsAnswered(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Limit = 2
	turns := []string{"buy shares of ACME stock", "and again"}
	cost := func(tool string) float64 {
		t.Helper()
		c := cfg
		c.Sessions = []evaluate.Session{{ID: "s", Turns: turns, Calls: []evaluate.Call{{Tool: tool, Turn: 0}, {Tool: tool, Turn: 1}}}}
		rep, err := evaluate.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Arm(evaluate.ArmSearch).CostPerSession.Mean
	}
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	// The query ranks trade.quote (its prior) and trade.buy first.
	var defs []toolsearch.Definition
	for _, name := range []string{"trade.quote", "trade.buy"} {
		i := slices.IndexFunc(cfg.Catalog.Tools, func(t *mcp.Tool) bool { return t.Name == name })
		tool := cfg.Catalog.Tools[i]
		defs = append(defs, toolsearch.Definition{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema})
	}
	text, err := toolsearch.Answer(defs)
	if err != nil {
		t.Fatal(err)
	}
	n, err := counter.Count(text)
	if err != nil {
		t.Fatal(err)
	}
	got := cost("trade.buy") - cost("fs.ls")
	if want := (1.25 + 0.1) * float64(n[price.O200kBase]); math.Abs(got-want) > 0.02 {
		t.Errorf("a search adds %v, want %v: (1.25 + 0.1) x %d tokens of %s", got, want, n[price.O200kBase], text)
	}
}

// TestRunSearchMissFindsByName: a needed tool the search misses is not
// served by it, and the model then reads find_tools' answer listing the
// names it may still find (toolsearch.ListQuery, once a session) and asks
// for the tool by name: both answers priced as the gateway writes them
// (toolsearch.NamesAnswer, toolsearch.Answer), in place of the full
// catalog from that turn.
func TestRunSearchMissFindsByName(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Limit, cfg.Cut = 1, 0.5
	turns := []string{"get the price of a stock", "and again", "show the files"}
	run := func(calls ...evaluate.Call) *evaluate.ArmReport {
		t.Helper()
		c := cfg
		c.Sessions = []evaluate.Session{{ID: "s", Turns: turns, Calls: append(calls, evaluate.Call{Tool: "fs.ls", Turn: 2})}}
		rep, err := evaluate.Run(context.Background(), c)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Arm(evaluate.ArmSearch)
	}
	// Turn 0's search returns trade.quote (its prior; trade.buy scores
	// 0.27 of it), turn 1's (words of turns 0 and 1) trade.buy, or once it
	// was found fs.mv, first by name of the rest, which score 0.
	found := run(evaluate.Call{Tool: "trade.quote", Turn: 0}, evaluate.Call{Tool: "trade.buy", Turn: 1})
	missed := run(evaluate.Call{Tool: "trade.buy", Turn: 0}, evaluate.Call{Tool: "mail.inbox", Turn: 1})
	if found.ServedShare != 1 || found.RecoveredShare != 0 {
		t.Fatalf("found: served %v, recovered %v; want 1, 0", found.ServedShare, found.RecoveredShare)
	}
	if missed.ServedShare != 0.3333 || missed.RecoveredShare != 0.6667 { // rounded to 4 places
		t.Fatalf("missed: served %v, recovered %v; want 1/3 (fs.ls), 2/3", missed.ServedShare, missed.RecoveredShare)
	}
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	tokens := func(text string, err error) float64 {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		n, err := counter.Count(text)
		if err != nil {
			t.Fatal(err)
		}
		return float64(n[price.O200kBase])
	}
	def := func(name string) float64 {
		i := slices.IndexFunc(cfg.Catalog.Tools, func(t *mcp.Tool) bool { return t.Name == name })
		tool := cfg.Catalog.Tools[i]
		return tokens(toolsearch.Answer([]toolsearch.Definition{{Name: tool.Name, Description: tool.Description, InputSchema: tool.InputSchema}}))
	}
	// The names not listed nor returned before, read once: turn 1's miss
	// asks by name only. Turn 0's answers are read in turns 1 and 2.
	names := tokens(toolsearch.NamesAnswer([]string{"fs.mv", "mail.inbox", "mail.send", "trade.buy"}))
	want := (1.25+0.1+0.1)*(names+def("trade.buy")) + (1.25+0.1)*(def("fs.mv")+def("mail.inbox")-def("trade.buy"))
	if got := missed.CostPerSession.Mean - found.CostPerSession.Mean; math.Abs(got-want) > 0.02 {
		t.Errorf("two misses add %v, want %v: the names (%v tokens) once and each definition asked for by name", got, want, names)
	}
	// RefuseMisses judges search alone: the first miss is a refusal, the
	// session on full from then on (this catalog is smaller than the
	// names and definitions), nothing found by name.
	cfg.RefuseMisses = true
	refused := run(evaluate.Call{Tool: "trade.buy", Turn: 0}, evaluate.Call{Tool: "mail.inbox", Turn: 1})
	if refused.ServedShare != 0.3333 || refused.RecoveredShare != 0 || refused.CostPerSession.Mean == missed.CostPerSession.Mean {
		t.Errorf("misses refused: served %v, recovered %v, cost %v; want 1/3, 0 and a cost other than %v", refused.ServedShare, refused.RecoveredShare, refused.CostPerSession.Mean, missed.CostPerSession.Mean)
	}
}

// TestRunSearchUsesBaseDemand: the search arm ranks as the gateway does
// for a session of its base, with the base's measured demand.
func TestRunSearchUsesBaseDemand(t *testing.T) {
	served := func(demand string) float64 {
		t.Helper()
		f, err := profiles.DecodeFile(strings.NewReader(armsProfiles+demand), "profiles.generated.toml")
		if err != nil {
			t.Fatal(err)
		}
		cfg := armsFixture(t)
		cfg.Profiles, cfg.Limit = &profiles.Set{File: f}, 1
		cfg.Sessions = []evaluate.Session{{ID: "s", Turns: []string{"a stock"}, Calls: []evaluate.Call{{Tool: "trade.buy", Turn: 0}}}}
		rep, err := evaluate.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Arm(evaluate.ArmSearch).ServedShare
	}
	// trade.quote's prior ranks it first for everyone: not served.
	if got := served(""); got != 0 {
		t.Fatalf("without core's demand: served %v, want 0", got)
	}
	if got := served("\n[[search.profile]]\nname = \"core\"\nsessions = 2\n\n[[search.profile.tool]]\nname = \"trade.buy\"\nweight = 1.0\n"); got != 1 {
		t.Fatalf("with core's demand for trade.buy: served %v, want 1", got)
	}
}

// TestRunRefusedSessionContinuesOnFull: a needed use an arm does not
// serve is refused, and the session continues on the full catalog from
// that turn, written to the cache again, as derive and bench price it.
// With the default cache (write 1.25x, read 0.1x, no growth) a 3-turn
// session costs 1.45 prefixes served alone; refused at turn 0 it costs
// what full costs, refused at turn 2 its two core turns (1.35 of core's
// prefix) plus full's prefix written (1.25).
func TestRunRefusedSessionContinuesOnFull(t *testing.T) {
	run := func(t *testing.T, calls ...evaluate.Call) (def, full float64) {
		cfg := armsFixture(t)
		cfg.Sessions = []evaluate.Session{{ID: "s", Turns: []string{"a", "b", "c"}, Calls: calls}}
		rep, err := evaluate.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Arm(evaluate.ArmDefault).CostPerSession.Mean, rep.Arm(evaluate.ArmFull).CostPerSession.Mean
	}
	alone, full := run(t, evaluate.Call{Tool: "fs.ls", Turn: 0})
	core, fullPrefix := alone/1.45, full/1.45
	for _, tc := range []struct {
		name  string
		calls []evaluate.Call
		want  float64
	}{
		{"refused at the first turn", []evaluate.Call{{Tool: "trade.buy", Turn: 0}}, full},
		{"refused at the last turn", []evaluate.Call{{Tool: "fs.ls", Turn: 0}, {Tool: "trade.buy", Turn: 2}}, 1.35*core + 1.25*fullPrefix},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := run(t, tc.calls...); math.Abs(got-tc.want) > 0.02 {
				t.Errorf("default costs %v, want %.2f (served alone %v, full %v)", got, tc.want, alone, full)
			}
		})
	}
}

// TestRunDefaultServedAsModern: the default arm serves the file's default
// profile as the gateway serves a client of protocol 2026-07-28: without
// its groups or enable_tools, with search when the profile has search =
// true; the groups arm's figures are for earlier clients only.
func TestRunDefaultServedAsModern(t *testing.T) {
	sessions := []evaluate.Session{
		{ID: "listed", Turns: []string{"show me the files"}, Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}}},
		{ID: "needs more", Turns: []string{"list the files", "buy 10 shares of the stock ACME"},
			Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}, {Tool: "trade.buy", Turn: 1}}},
	}
	run := func(t *testing.T, def string) *evaluate.Report {
		t.Helper()
		text := strings.Replace(armsProfiles, `default = "core"`, `default = "`+def+`"`, 1) +
			"\n[[profile]]\nname = \"core-search\"\ntools = [\"fs.cat\", \"fs.ls\"]\nsearch = true\n"
		f, err := profiles.DecodeFile(strings.NewReader(text), "profiles.generated.toml")
		if err != nil {
			t.Fatal(err)
		}
		cfg := armsFixture(t)
		cfg.Profiles, cfg.Limit, cfg.SearchBase, cfg.Sessions = &profiles.Set{File: f}, 2, "core", sessions
		rep, err := evaluate.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		return rep
	}
	core := run(t, "core")
	for _, tc := range []struct {
		def           string
		wantProtocols string
		like          string // the arm of the core run whose served share and cost the default arm has
	}{
		{"core", evaluate.ProtocolsAll, evaluate.ArmDefault},
		{"grouped", evaluate.ProtocolsModern, evaluate.ArmDefault}, // core's tools: no enable_tools listed
		{"core-search", evaluate.ProtocolsAll, evaluate.ArmSearch}, // search over core's tools
	} {
		t.Run(tc.def, func(t *testing.T) {
			rep := run(t, tc.def)
			got, want := rep.Arm(evaluate.ArmDefault), core.Arm(tc.like)
			if got.Profile != tc.def || got.Protocols != tc.wantProtocols {
				t.Errorf("default arm serves %q for %q, want %q for %q", got.Profile, got.Protocols, tc.def, tc.wantProtocols)
			}
			if got.ServedShare != want.ServedShare || math.Abs(got.CostPerSession.Mean-want.CostPerSession.Mean) > 0.01 || got.SearchesPerSession != want.SearchesPerSession {
				t.Errorf("default arm over %s: served %v, cost %v, searches %v; want core's %s arm's %v, %v, %v",
					tc.def, got.ServedShare, got.CostPerSession.Mean, got.SearchesPerSession, tc.like, want.ServedShare, want.CostPerSession.Mean, want.SearchesPerSession)
			}
			if g := rep.Arm(evaluate.ArmGroups); g == nil || g.Protocols != evaluate.ProtocolsLegacy || g.Modern() {
				t.Errorf("groups arm %+v: want figures for clients of 2025-11-25 and earlier only", g)
			}
			if s := rep.Arm(evaluate.ArmSearch); s.Protocols != evaluate.ProtocolsAll || rep.Arm(evaluate.ArmFull).Protocols != evaluate.ProtocolsAll {
				t.Errorf("search %q, full %q: want all", s.Protocols, rep.Arm(evaluate.ArmFull).Protocols)
			}
		})
	}
	if core.Arm(evaluate.ArmSearch).ServedShare != 1 || core.Arm(evaluate.ArmDefault).ServedShare != 0.6667 {
		t.Fatalf("the fixture does not tell search from static: search %v, static %v", core.Arm(evaluate.ArmSearch).ServedShare, core.Arm(evaluate.ArmDefault).ServedShare)
	}
}

// TestRunAlwaysLoadListsTheBaseOnly: the always_load arm's client loads
// its base's tools only, so a base that offers groups costs it what the
// same tools without groups cost: enable_tools is not loaded.
func TestRunAlwaysLoadListsTheBaseOnly(t *testing.T) {
	cost := func(base string) float64 {
		t.Helper()
		cfg := armsFixture(t)
		cfg.SearchBase, cfg.ClientResults = base, 2
		cfg.Sessions = []evaluate.Session{{ID: "s", Turns: []string{"list the files", "send a mail"},
			Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}, {Tool: "mail.send", Turn: 1}}}}
		rep, err := evaluate.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		a := rep.Arm(evaluate.ArmAlwaysLoad)
		if a.Protocols != evaluate.ProtocolsAll || a.ServedShare != 1 {
			t.Fatalf("always_load over %s: %+v", base, a)
		}
		return a.CostPerSession.Mean
	}
	if core, grouped := cost("core"), cost("grouped"); math.Abs(core-grouped) > 0.01 {
		t.Errorf("always_load over grouped costs %v, over core (the same tools) %v", grouped, core)
	}
}

// TestRunGroupsWithSearch: a grouped profile with search = true serves a
// 2025-11-25 session both, as the gateway does: the group's tools by
// enable_tools, the rest by find_tools.
func TestRunGroupsWithSearch(t *testing.T) {
	for _, tc := range []struct {
		search     string
		wantServed float64
	}{{"", 0.5}, {"search = true\n", 1}} {
		text := strings.Replace(armsProfiles, "groups = [\"mail\"]\n", "groups = [\"mail\"]\n"+tc.search, 1)
		f, err := profiles.DecodeFile(strings.NewReader(text), "profiles.generated.toml")
		if err != nil {
			t.Fatal(err)
		}
		cfg := armsFixture(t)
		cfg.Profiles, cfg.Limit = &profiles.Set{File: f}, 2
		cfg.Sessions = []evaluate.Session{{ID: "s", Turns: []string{"send a mail message to bob", "buy 10 shares of the stock ACME"},
			Calls: []evaluate.Call{{Tool: "mail.send", Turn: 0}, {Tool: "trade.buy", Turn: 1}}}}
		rep, err := evaluate.Run(context.Background(), cfg)
		if err != nil {
			t.Fatal(err)
		}
		if g := rep.Arm(evaluate.ArmGroups); g.ServedShare != tc.wantServed || g.Protocols != evaluate.ProtocolsLegacy {
			t.Errorf("grouped with %q: groups arm served %v for %q, want %v for 2025-11-25", tc.search, g.ServedShare, g.Protocols, tc.wantServed)
		}
	}
}

// TestRunRecallUnknownWithoutSearches: when the base serves every needed
// use, the searching arms made no search, so their recall is unknown:
// left out of the report and printed as "-", never as 0.
func TestRunRecallUnknownWithoutSearches(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Sessions = []evaluate.Session{
		{ID: "listed", Turns: []string{"show me the files"}, Calls: []evaluate.Call{{Tool: "fs.ls", Turn: 0}, {Tool: "fs.cat", Turn: 0}}},
	}
	rep, err := evaluate.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{evaluate.ArmSearch, evaluate.ArmAlwaysLoad} {
		a := rep.Arm(name)
		if a == nil {
			t.Fatalf("no %s arm", name)
		}
		if a.SearchesPerSession != 0 || a.RecallAt != nil {
			t.Errorf("%s: searches %v, recall %v; want none and no recall", name, a.SearchesPerSession, a.RecallAt)
		}
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(line); len(f) > 7 && f[0] == evaluate.ArmSearch {
			if f[4] != "-" || f[5] != "-" || f[6] != "-" || f[7] != "-" {
				t.Errorf("search row %q: want found by name and recall printed as -", line)
			}
		}
	}
}

// TestRunSearchAsksWithTheTurnBefore: a turn that only answers a
// clarification is searched with the request before it, so the search arm
// finds the tool its words alone never name.
func TestRunSearchAsksWithTheTurnBefore(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Limit = 2
	cfg.Sessions = []evaluate.Session{{ID: "clarified", Turns: []string{"buy shares of a stock for me", "ACME, ten of them"},
		Calls: []evaluate.Call{{Tool: "trade.buy", Turn: 1}}}}
	rep, err := evaluate.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if a := rep.Arm(evaluate.ArmSearch); a.ServedShare != 1 || a.SearchesPerSession != 1 {
		t.Errorf("search arm served %v with %v searches, want 1 with 1", a.ServedShare, a.SearchesPerSession)
	}
}

// TestRunServedUnknownWithoutNeededUses: sessions that call no catalog
// tool need nothing, so no arm's served share can be computed: it is left
// out of the JSON and printed "-", never 0.
func TestRunServedUnknownWithoutNeededUses(t *testing.T) {
	cfg := armsFixture(t)
	cfg.Sessions = []evaluate.Session{{ID: "none", Turns: []string{"hello"}, Calls: []evaluate.Call{{Tool: "gone", Turn: 0}}}}
	rep, err := evaluate.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if rep.Needed != 0 || len(rep.Arms) == 0 {
		t.Fatalf("needed %d, %d arms; want none needed", rep.Needed, len(rep.Arms))
	}
	b, err := json.Marshal(rep)
	if err != nil {
		t.Fatal(err)
	}
	var shape struct {
		Needed *int `json:"needed"`
		Arms   []map[string]json.RawMessage
	}
	if err := json.Unmarshal(b, &shape); err != nil {
		t.Fatal(err)
	}
	for _, a := range shape.Arms {
		if _, ok := a["served_share"]; ok || a["cost_per_session"] == nil || shape.Needed == nil {
			t.Errorf("arm %s: %s; want served_share left out, the rest kept", a["name"], b)
		}
	}
	var text strings.Builder
	if err := rep.WriteText(&text); err != nil {
		t.Fatal(err)
	}
	rows := 0
	for _, line := range strings.Split(text.String(), "\n") {
		if f := strings.Fields(line); len(f) > 3 && rep.Arm(f[0]) != nil {
			rows++
			if f[3] != "-" {
				t.Errorf("row %q: want served printed as -", line)
			}
		}
	}
	if rows != len(rep.Arms) {
		t.Errorf("%d rows for %d arms:\n%s", rows, len(rep.Arms), text.String())
	}
}
