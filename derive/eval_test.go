//go:build eval

package derive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// baselineName names the top-k baseline of profile name when it is served
// for measuring.
func baselineName(name string) string { return "topk-" + name }

// measureServed serves the derived profiles and their top-k baselines
// through the gateway over cat and measures them with profiler bench's
// code (bench.MeasureProfiles), by profile name.
func measureServed(t *testing.T, cat *catalog.Catalog, res *derive.Result) (map[string]bench.ProfileCost, map[string]int) {
	t.Helper()
	f := res.File()
	for _, p := range res.Profiles {
		if p.Baseline != nil {
			f.Profiles = append(f.Profiles, profiles.Profile{Name: baselineName(p.Name), Tools: p.Baseline.Tools})
		}
	}
	resolved, err := (&profiles.Set{File: f}).Resolve(cat.Tools)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	g, err := gateway.New(ctx, gateway.Options{Upstream: gateway.NewCatalogUpstream(cat), Tools: cat.Tools, Profiles: resolved,
		ServerName: version.Name, ServerVersion: version.Version})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	rep, err := bench.MeasureProfiles(ctx, resolved, g.Server, counter, bench.MeasureOptions{})
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bench.ProfileCost{}
	for _, pc := range rep.Profiles {
		out[pc.Name] = pc
	}
	entries := map[string]int{}
	for _, tc := range rep.ToolCosts {
		entries[tc.Name] = tc.Model[price.DefaultFamily] // derive prices the model measure
	}
	return out, entries
}

// TestEvalSharedData derives the default family from the real traces in
// ../shared/data (TOOLPROF_DATA overrides) and reports, per profile, the
// held-out coverage and the token share of full beside the top-k
// baseline's. Tools are priced as served (profiler derive's tokens_o200k),
// and every profile and baseline is also served and measured by profiler
// bench's code (the initialize + tools/list exchange). Run with: go test -tags eval -run Eval -v ./derive
func TestEvalSharedData(t *testing.T) {
	dir := os.Getenv("TOOLPROF_DATA")
	if dir == "" {
		dir = filepath.Join("..", "..", "shared", "data")
	}
	for _, set := range []string{"tau-airline", "bfcl-multi-turn"} {
		t.Run(set, func(t *testing.T) {
			cat, err := catalog.Load(filepath.Join(dir, "catalogs", set+".json"))
			if err != nil {
				t.Fatal(err)
			}
			// profiler derive's pipeline: tools priced as the gateway lists
			// them (bench.DeriveTools), so these figures are profiler bench's.
			out, err := generate.Run(context.Background(), generate.Config{Traces: []string{filepath.Join(dir, "traces", set+".jsonl")}, Catalog: filepath.Join(dir, "catalogs", set+".json"),
				Out: filepath.Join(t.TempDir(), "profiles.generated.toml"), Specs: derive.DefaultSpecs(), Holdout: derive.DefaultHoldout, DefaultTarget: derive.DefaultTarget, Force: true})
			if err != nil {
				t.Fatal(err)
			}
			res := out.Result
			c := res.Counts
			full := res.Profiles[len(res.Profiles)-1]
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %d sessions (derive %d, held-out %d; %d zero-call; %d with tools outside the catalog; %d unknown_tool outcomes); full = %d tools, %d tokens; default %s\n",
				set, c.Used(), c.Derive, c.Holdout, c.ZeroCalls, c.UnknownToolSessions, out.UnknownOutcomes, len(full.Tools), full.Tokens, res.Default)
			served, entries := measureServed(t, cat, res)
			fmt.Fprintf(&b, "entries = the profile's tools/list entries as served (derive's tokens_o200k); exchange = profiler bench's initialize + tools/list, and its share of full\n")
			fmt.Fprintf(&b, "%-9s | %5s %7s %7s %8s %6s %-24s | %5s %7s %8s %6s %s\n", "profile", "tools", "entries", "share", "exchange", "share", "held-out [95% CI]", "top-k", "entries", "exchange", "share", "held-out")
			for _, p := range res.Profiles {
				hs, _ := p.Holdout.Share()
				lo, hi := derive.Wilson(p.Holdout.Covered, p.Holdout.Sessions)
				ex := served[p.Name]
				sum := 0
				for _, tool := range p.Tools {
					sum += entries[tool]
				}
				if sum != p.Tokens {
					t.Errorf("%s: derive prices its entries at %d tokens, profiler bench at %d", p.Name, p.Tokens, sum)
				}
				line := fmt.Sprintf("%-9s | %5d %7d %6.1f%% %8d %5.1f%% %5.1f%% [%5.1f, %5.1f]     |", p.Name, len(p.Tools), p.Tokens, 100*float64(p.Tokens)/float64(full.Tokens),
					ex.Tokens[price.O200kBase], 100*ex.ShareOfFull, 100*hs, 100*lo, 100*hi)
				if bl := p.Baseline; bl != nil {
					bs, _ := bl.Holdout.Share()
					bx := served[baselineName(p.Name)]
					line += fmt.Sprintf(" %5d %7d %8d %5.1f%% %5.1f%%", len(bl.Tools), bl.Tokens, bx.Tokens[price.O200kBase], 100*bx.ShareOfFull, 100*bs)
					if lb := p.Solution.LowerBound; lb > 0 {
						line += fmt.Sprintf("   (solver within %.1f%% of optimal)", 100*float64(p.Tokens-lb)/float64(lb))
					}
					// The solver minimises the cost per derive session with
					// caching, not the listing: top-k must not beat it there.
					if bl.DeriveCost.Mean < p.DeriveCost.Mean-1e-6 && p.Solution.Feasible && p.Budget == 0 {
						t.Errorf("%s: top-k (%.0f per derive session) cheaper than the solver (%.0f)", p.Name, bl.DeriveCost.Mean, p.DeriveCost.Mean)
					}
					line += fmt.Sprintf("   per held-out session with caching: %.3f of full, top-k %.3f", p.HoldoutCost.ShareOfFull, bl.HoldoutCost.ShareOfFull)
				}
				fmt.Fprintln(&b, line)
			}
			t.Log("\n" + b.String())
		})
	}
}
