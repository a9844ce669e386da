//go:build eval

package bench_test

// Evaluation on the real catalogs beside the project (../shared/data, or
// $TOOLPROF_DATA): run by make eval, never by make test.
//
//	go test -tags eval ./bench -run Eval -v

import (
	"context"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
)

func evalCatalogs(t *testing.T) []string {
	t.Helper()
	dir := evalData(t)
	paths, err := filepath.Glob(filepath.Join(dir, "catalogs", "*.json"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("no catalogs under %s/catalogs (set TOOLPROF_DATA to the data directory): %v", dir, err)
	}
	return paths
}

// TestEvalRealCatalogs serves each real catalog through the gateway and
// checks, on real shapes (unicode, '<' and '&' in descriptions, long
// schemas, 527 tools), that each served entry costs exactly what
// ServedToolCosts prices for the derivation, and that the entries and their
// commas make up the served tools array. It logs what the gateway adds to the
// raw catalog's entries and how far bytes/4 is from the real count.
func TestEvalRealCatalogs(t *testing.T) {
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	for _, path := range evalCatalogs(t) {
		t.Run(filepath.Base(path), func(t *testing.T) {
			cat, err := catalog.Load(path)
			if err != nil {
				t.Fatal(err)
			}
			srv := catalogServer(t, cat)
			ex, err := exchange.Measure(context.Background(), srv, exchange.Options{Counter: c})
			if err != nil {
				t.Fatal(err)
			}
			if len(ex.Tools) != len(cat.Tools) || ex.NextCursor != "" {
				t.Fatalf("listed %d of %d tools (cursor %q)", len(ex.Tools), len(cat.Tools), ex.NextCursor)
			}
			costs, err := exchange.ServedToolCosts(context.Background(), srv, c)
			if err != nil {
				t.Fatal(err)
			}
			rawCosts, err := exchange.ToolCosts(cat.Tools, c)
			if err != nil {
				t.Fatal(err)
			}
			rawTokens := 0
			for _, tc := range rawCosts {
				rawTokens += tc.Tokens[price.O200kBase]
			}
			byName := map[string]exchange.ToolCost{}
			for _, tc := range costs {
				byName[tc.Name] = tc
			}
			var resp struct {
				Result struct {
					Tools json.RawMessage `json:"tools"`
				} `json:"result"`
			}
			if err := json.Unmarshal(ex.Messages[len(ex.Messages)-1].Raw, &resp); err != nil {
				t.Fatal(err)
			}
			var entries []json.RawMessage
			if err := json.Unmarshal(resp.Result.Tools, &entries); err != nil {
				t.Fatal(err)
			}
			entryTokens, mismatches := 0, 0
			for i, tool := range ex.Tools {
				tc, ok := byName[tool.Name]
				if !ok {
					t.Fatalf("served tool %q is not in the catalog", tool.Name)
				}
				entryTokens += tc.Tokens[price.O200kBase]
				served, err := c.Count(string(entries[i]))
				if err != nil {
					t.Fatal(err)
				}
				if len(entries[i]) != tc.Bytes || served[price.O200kBase] != tc.Tokens[price.O200kBase] || served[price.Cl100kBase] != tc.Tokens[price.Cl100kBase] {
					mismatches++
					if mismatches <= 3 {
						t.Errorf("%s: served entry %d bytes %v tokens, priced %d bytes %v tokens",
							tool.Name, len(entries[i]), served, tc.Bytes, tc.Tokens)
					}
				}
			}
			if mismatches > 0 {
				t.Errorf("%d of %d served entries cost other than ServedToolCosts prices them", mismatches, len(ex.Tools))
			}
			sum := 1
			for _, tc := range costs {
				sum += tc.Bytes + 1
			}
			if sum != len(resp.Result.Tools) {
				t.Errorf("priced entries + separators = %d bytes, served tools array %d", sum, len(resp.Result.Tools))
			}
			o200k := ex.Tokens[price.O200kBase]
			est := price.EstimateTokens(ex.Bytes)
			t.Logf("%d tools: exchange %d bytes, %d o200k_base, %d cl100k_base; served entries %d o200k_base (the raw catalog's entries %d: %+d added by the gateway); bytes/4 = %d (%+.1f%%)",
				len(cat.Tools), ex.Bytes, o200k, ex.Tokens[price.Cl100kBase], entryTokens, rawTokens, entryTokens-rawTokens, est, 100*float64(est-o200k)/float64(o200k))
		})
	}
}
