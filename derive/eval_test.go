//go:build eval

package derive

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/profiles"
)

// TestEvalSharedData derives the default family from the real traces in
// ../shared/data (TOOLPROF_DATA overrides) and reports, per profile, the
// held-out coverage and the token share of full beside the top-k
// baseline's. Run with: go test -tags eval -run Eval -v ./derive
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
			counter, err := bench.NewCounter()
			if err != nil {
				t.Fatal(err)
			}
			costs, err := bench.ToolCosts(cat.Tools, counter)
			if err != nil {
				t.Fatal(err)
			}
			tools := make([]Tool, len(costs))
			for i, c := range costs {
				tools[i] = Tool{Name: c.Name, Bytes: c.Bytes, Tokens: c.Tokens[bench.O200kBase],
					Destructive: profiles.EffectOf(cat.Tools[i], nil).Kind == profiles.KindDestructive}
			}
			sessions, st, err := ReadTrace(context.Background(), filepath.Join(dir, "traces", set+".jsonl"), false)
			if err != nil {
				t.Fatal(err)
			}
			res, err := Derive(sessions, Config{Tools: tools, Specs: DefaultSpecs(), Holdout: DefaultHoldout, DefaultTarget: DefaultTarget})
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
				lo, hi := Wilson(p.Holdout.Covered, p.Holdout.Sessions)
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
