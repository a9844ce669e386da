//go:build eval

package evaluate_test

import (
	"context"
	"testing"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/price"
)

// TestEvalSearchCostValidation reports the search arm over the base derive
// --choose-default would serve, at find_tools' defaults, on the validation
// split of each trace's learning part (validationSplit): the figures
// changes to search are judged by, the held-out part never looked at.
// Run with: go test -tags eval ./evaluate -run EvalSearchCostValidation -v
func TestEvalSearchCostValidation(t *testing.T) {
	ctx := context.Background()
	for _, name := range []string{"bfcl-multi-turn", "tau-airline"} {
		cat, learn, check, set := validationSplit(ctx, t, name)
		cfg := evaluate.Config{Catalog: cat, Profiles: set, Sessions: learn, Cache: price.DefaultCache()}
		sb, err := evaluate.DeriveSearchBase(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		derived, err := sb.Served(set)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Sessions, cfg.Profiles, cfg.SearchBase = check, derived, evaluate.DerivedSearchProfile
		rep, err := evaluate.Run(ctx, cfg)
		if err != nil {
			t.Fatal(err)
		}
		s := rep.Arm(evaluate.ArmSearch)
		t.Logf("%s: %d validation sessions, %d needed uses; search over the derived base (%d listed): cost share of full %.4f, served %.4f, recall@5 %.4f, searches/session %.3f",
			name, rep.Sessions, rep.Needed, len(sb.Tools), s.CostShareOfFull, s.ServedShare, s.RecallAt["5"], s.SearchesPerSession)
	}
}
