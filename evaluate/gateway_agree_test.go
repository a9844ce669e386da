package evaluate_test

import (
	"context"
	"math"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// TestRunPricesTheGatewaysAnswers: the search arm prices a session's
// find_tools answers as the gateway serving the base writes them. A
// session whose searches miss plays against a gateway as the arm models
// it (a search with the turn's query, the names, the missed tool by
// name); the tokens of the texts it answers, each written in its turn and
// read in every later one, are what the session costs the arm more than
// one the base serves alone.
func TestRunPricesTheGatewaysAnswers(t *testing.T) {
	ctx := context.Background()
	const base = "searching"
	f, err := profiles.DecodeFile(strings.NewReader(armsProfiles+"\n[[profile]]\nname = \""+base+"\"\ntools = [\"fs.cat\", \"fs.ls\"]\nsearch = true\n"), "profiles.generated.toml")
	if err != nil {
		t.Fatal(err)
	}
	cfg := armsFixture(t)
	cfg.Profiles, cfg.SearchBase, cfg.Limit = &profiles.Set{File: f}, base, 1
	turns := []string{"get the price of a stock", "and again", "show the files"}
	cost := func(calls ...evaluate.Call) float64 {
		t.Helper()
		c := cfg
		c.Sessions = []evaluate.Session{{ID: "s", Turns: turns, Calls: append(calls, evaluate.Call{Tool: "fs.ls", Turn: 2})}}
		rep, err := evaluate.Run(ctx, c)
		if err != nil {
			t.Fatal(err)
		}
		return rep.Arm(evaluate.ArmSearch).CostPerSession.Mean
	}
	got := cost(evaluate.Call{Tool: "trade.buy", Turn: 0}, evaluate.Call{Tool: "mail.inbox", Turn: 1}) - cost()

	resolved, err := cfg.Profiles.Resolve(cfg.Catalog.Tools)
	if err != nil {
		t.Fatal(err)
	}
	g, err := gateway.New(ctx, gateway.Options{Upstream: gateway.NewCatalogUpstream(cfg.Catalog), Tools: cfg.Catalog.Tools, Profiles: resolved, ServerName: "t", ServerVersion: "1"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	srv, err := g.Server(base)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(ctx, st, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "agree", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	find := func(args map[string]any) float64 {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolsearch.FindToolsName, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("find_tools %v: %v %+v", args, err, res)
		}
		n, err := counter.Count(res.Content[0].(*mcp.TextContent).Text)
		if err != nil {
			t.Fatal(err)
		}
		return float64(n[price.O200kBase])
	}
	// Turn 0 misses trade.buy (trade.quote's prior ranks first), turn 1
	// mail.inbox (its query, turns 0 and 1, ranks fs.mv first): the names
	// are read once, then each tool asked for by name.
	turn0 := find(map[string]any{"query": turns[0], "limit": 1}) + find(map[string]any{"query": toolsearch.ListQuery}) + find(map[string]any{"query": "trade.buy"})
	turn1 := find(map[string]any{"query": turns[0] + " " + turns[1], "limit": 1}) + find(map[string]any{"query": "mail.inbox"})
	if want := (1.25+0.1+0.1)*turn0 + (1.25+0.1)*turn1; math.Abs(got-want) > 0.02 {
		t.Errorf("the misses cost the search arm %v, want %v: the gateway's answers, %v tokens in turn 0 and %v in turn 1", got, want, turn0, turn1)
	}
}
