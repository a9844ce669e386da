//go:build eval

package evaluate_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// TestEvalDefaultCut checks that toolsearch.DefaultCut is the best of a
// grid on validation data drawn from the learning sessions only: profiles
// and priors derived from the older 75% of each trace's learning part, the
// search arm replayed and priced (Run) on its newest 25%, the held-out
// part never looked at. The arm is measured over two bases, the grouped
// profile's (lean) and one derived from the older 75% without a cut (so
// that the base does not depend on the cut tried), at find_tools' limits
// 5 and 9; the best cut has the least mean cost share of full over the
// traces, limits and bases. A needed tool the cut drops is a miss, priced
// on the full catalog from then on (RefuseMisses: search is judged alone,
// not with the names a model may read after a miss, by which cost alone
// would favour an ever higher cut): the cost weighs both sides.
// Run with: go test -tags eval ./evaluate -run EvalDefaultCut -v
func TestEvalDefaultCut(t *testing.T) {
	ctx := context.Background()
	type arm struct {
		label   string
		cfg     *evaluate.Config
		base    string
		profile *profiles.Set
	}
	var arms []arm
	for _, name := range []string{"bfcl-multi-turn", "tau-airline"} {
		cat, learn, check, set := validationSplit(ctx, t, name)
		for _, limit := range []int{5, 9} {
			cfg := evaluate.Config{Catalog: cat, Profiles: set, Sessions: learn, Limit: limit, Cut: -1, Cache: price.DefaultCache(), RefuseMisses: true}
			sb, err := evaluate.DeriveSearchBase(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			derived, err := sb.Served(set)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Sessions = check
			arms = append(arms, arm{fmt.Sprintf("%s/%d/derived", name, limit), &cfg, evaluate.DerivedSearchProfile, derived},
				arm{fmt.Sprintf("%s/%d/%s", name, limit, groups.DefaultProfile), &cfg, groups.DefaultProfile, set})
		}
	}
	measure := func(cut float64) (mean float64, line string) {
		var b strings.Builder
		for _, a := range arms {
			cfg := *a.cfg
			cfg.Profiles, cfg.SearchBase, cfg.Cut = a.profile, a.base, cut
			rep, err := evaluate.Run(ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			s := rep.Arm(evaluate.ArmSearch)
			mean += s.CostShareOfFull / float64(len(arms))
			fmt.Fprintf(&b, " %s %.3f/%.3f", a.label, s.CostShareOfFull, s.ServedShare)
		}
		return mean, b.String()
	}
	best, bestMean := -1.0, 2.0
	for _, cut := range []float64{-1, 0.3, 0.35, 0.4, 0.45, 0.5, 0.6, 0.7, 0.8, 0.9} {
		mean, line := measure(cut)
		t.Logf("cut %.2f: mean cost share %.4f; cost/served:%s", max(cut, 0), mean, line)
		if mean < bestMean-1e-9 {
			best, bestMean = cut, mean
		}
	}
	if d, _ := measure(toolsearch.DefaultCut); d > bestMean+1e-9 {
		t.Errorf("DefaultCut %g costs %.4f of full on validation; the grid's best, %g, %.4f", toolsearch.DefaultCut, d, max(best, 0), bestMean)
	}
}

// validationSplit is trace name's catalog and the validation split of its
// learning part: profiles and priors derived, as derive would, from the
// older 75% of the sessions before the held-out period (learn), to be
// replayed on the newest 25% (check). The held-out part is never read.
func validationSplit(ctx context.Context, t *testing.T, name string) (cat *catalog.Catalog, learn, check []evaluate.Session, set *profiles.Set) {
	t.Helper()
	cat, sessions := loadReal(t, name)
	train, _ := derive.SplitByStart(sessions, evaluate.Session.Started, derive.DefaultHoldout)
	learn, check = derive.SplitByStart(train, evaluate.Session.Started, 0.25)
	keep := map[string]bool{}
	for _, s := range train {
		keep[s.ID] = true
	}
	dir := t.TempDir()
	trace := filepath.Join(dir, "learn.jsonl")
	writeSessions(t, filepath.Join(sharedDataDir(), "traces", name+".jsonl"), trace, keep)
	out, err := generate.Run(ctx, generate.Config{Traces: []string{trace}, Catalog: filepath.Join(sharedDataDir(), "catalogs", name+".json"),
		Out: filepath.Join(dir, "profiles.generated.toml"), Specs: []derive.Spec{{Name: "core", Target: 0.8}, {Name: "standard", Target: 0.95}},
		Holdout: 0.25, DefaultTarget: derive.DefaultTarget, Search: true, Groups: &generate.Groups{Profile: groups.DefaultProfile, MaxSwitches: groups.DefaultMaxSwitches}, Force: true, Cache: price.DefaultCache()})
	if err != nil {
		t.Fatal(err)
	}
	return cat, learn, check, &profiles.Set{File: out.File}
}
