//go:build eval

package derive_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/internal/servedcost"
)

// TestEvalSharedData derives the default family from the real traces in
// ../shared/data (TOOLPROF_DATA overrides) and reports, per profile, the
// held-out coverage and the token share of full beside the top-k
// baseline's. Tools are priced as served, so the token figures equal
// profiler derive's and profiler bench's. Run with: go test -tags eval -run Eval -v ./derive
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
			// Priced as the gateway lists them (servedcost, as profiler
			// derive does), so these figures are profiler bench's.
			tools, err := servedcost.DeriveTools(context.Background(), cat, nil)
			if err != nil {
				t.Fatal(err)
			}
			sessions, st, err := derive.ReadTrace(context.Background(), filepath.Join(dir, "traces", set+".jsonl"), false)
			if err != nil {
				t.Fatal(err)
			}
			res, err := derive.Derive(sessions, derive.Config{Tools: tools, Specs: derive.DefaultSpecs(), Holdout: derive.DefaultHoldout, DefaultTarget: derive.DefaultTarget})
			if err != nil {
				t.Fatal(err)
			}
			c := res.Counts
			full := res.Profiles[len(res.Profiles)-1]
			var b strings.Builder
			fmt.Fprintf(&b, "%s: %d sessions (derive %d, held-out %d; %d zero-call; %d with tools outside the catalog; %d unknown_tool outcomes); full = %d tools, %d tokens; default %s\n",
				set, c.Used(), c.Derive, c.Holdout, c.ZeroCalls, c.UnknownToolSessions, st.UnknownOutcomes, len(full.Tools), full.Tokens, res.Default)
			fmt.Fprintf(&b, "%-9s | %5s %7s %7s %-24s | %5s %7s %7s %s\n", "profile", "tools", "tokens", "share", "held-out [95% CI]", "top-k", "tokens", "share", "held-out")
			for _, p := range res.Profiles {
				hs, _ := p.Holdout.Share()
				lo, hi := derive.Wilson(p.Holdout.Covered, p.Holdout.Sessions)
				line := fmt.Sprintf("%-9s | %5d %7d %6.1f%% %5.1f%% [%5.1f, %5.1f]     |", p.Name, len(p.Tools), p.Tokens, 100*float64(p.Tokens)/float64(full.Tokens), 100*hs, 100*lo, 100*hi)
				if bl := p.Baseline; bl != nil {
					bs, _ := bl.Holdout.Share()
					line += fmt.Sprintf(" %5d %7d %6.1f%% %5.1f%%", len(bl.Tools), bl.Tokens, 100*float64(bl.Tokens)/float64(full.Tokens), 100*bs)
					if lb := p.Solution.LowerBound; lb > 0 {
						line += fmt.Sprintf("   (solver within %.1f%% of optimal)", 100*float64(p.Tokens-lb)/float64(lb))
					}
					if bl.Tokens < p.Tokens && p.Solution.Feasible {
						t.Errorf("%s: top-k (%d tokens) cheaper than the solver (%d)", p.Name, bl.Tokens, p.Tokens)
					}
				}
				fmt.Fprintln(&b, line)
			}
			t.Log("\n" + b.String())
		})
	}
}
