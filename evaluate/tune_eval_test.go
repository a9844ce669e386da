//go:build eval

package evaluate_test

import (
	"testing"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/toolsearch"
)

// TestEvalDefaultWeights checks that toolsearch.DefaultWeights are the
// best of a grid on validation data drawn from the learning sessions only:
// priors learned from the older 75% of each trace's learning part, recall@5
// measured on its newest 25%; the held-out part is never looked at. The
// grid's best is the one whose worse margin over the two targets (0.85,
// 0.80) is largest.
func TestEvalDefaultWeights(t *testing.T) {
	type set struct {
		docs         []toolsearch.Doc
		learn, check []evaluate.Session
		target       float64
	}
	var sets []set
	for _, tc := range []struct {
		name   string
		target float64
	}{{"bfcl-multi-turn", 0.85}, {"tau-airline", 0.80}} {
		cat, sessions := loadReal(t, tc.name)
		train, _ := derive.SplitByStart(sessions, evaluate.Session.Started, derive.DefaultHoldout)
		learn, check := derive.SplitByStart(train, evaluate.Session.Started, 0.25)
		sets = append(sets, set{evaluate.Docs(cat.Tools), learn, check, tc.target})
	}
	margin := func(w toolsearch.Weights) float64 {
		m := 1.0
		for _, s := range sets {
			l := evaluate.LearnPriors(s.learn)
			r := evaluate.SearchRecall(toolsearch.New(s.docs, l.Priors(), w), s.check, nil, nil).Share(5)
			m = min(m, r-s.target)
		}
		return m
	}
	best, bestM := toolsearch.Weights{}, -1.0
	for _, pop := range []float64{0, 0.25, 0.5, 1, 2, 3} {
		for _, co := range []float64{0, 0.5, 1, 1.5, 2, 3} {
			w := toolsearch.Weights{Text: 1, Popularity: pop, CoUse: co}
			if m := margin(w); m > bestM+1e-9 {
				best, bestM = w, m
			}
		}
	}
	t.Logf("best weights on validation: %+v (worse margin over the targets %+.3f)", best, bestM)
	if d := toolsearch.DefaultWeights(); margin(d) < bestM-1e-9 {
		t.Errorf("DefaultWeights %+v have margin %+.3f, the grid's best %+v has %+.3f", d, margin(d), best, bestM)
	}
}
