//go:build eval

package evaluate_test

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/toolsearch"
)

// sharedDataDir is the real data beside the project (see its README);
// TOOLPROF_DATA moves it, as make eval sets it.
func sharedDataDir() string {
	if d := os.Getenv("TOOLPROF_DATA"); d != "" {
		return d
	}
	return "../../shared/data"
}

func loadReal(t *testing.T, name string) (*catalog.Catalog, []evaluate.Session) {
	t.Helper()
	cat, err := catalog.Load(filepath.Join(sharedDataDir(), "catalogs", name+".json"))
	if err != nil {
		t.Skipf("real data not available: %v", err)
	}
	raw, err := os.ReadFile(filepath.Join(sharedDataDir(), "traces", name+".jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := telemetry.DecodeTrace(bytes.NewReader(raw), name, false)
	if err != nil {
		t.Fatal(err)
	}
	return cat, evaluate.FromTrace(ts)
}

// TestEvalSearchRecall measures search over the whole catalog on the
// held-out 20% of the real traces, priors learned from the older 80%:
// plain BM25 (no priors) against BM25 with priors.
// Run with: go test -tags eval ./evaluate -run EvalSearchRecall -v
func TestEvalSearchRecall(t *testing.T) {
	for _, tc := range []struct {
		name string
		want float64 // recall@5 with priors
	}{{"bfcl-multi-turn", 0.85}, {"tau-airline", 0.80}} {
		t.Run(tc.name, func(t *testing.T) {
			cat, sessions := loadReal(t, tc.name)
			train, test := derive.SplitByStart(sessions, evaluate.Session.Started, derive.DefaultHoldout)
			docs := evaluate.Docs(cat.Tools)
			plain := evaluate.SearchRecall(toolsearch.New(docs, nil, toolsearch.DefaultWeights()), test, nil, nil)
			learned := evaluate.LearnPriors(train)
			ranked := evaluate.SearchRecall(toolsearch.New(docs, learned.Priors(), toolsearch.Weights{}), test, nil, nil)
			t.Logf("%s: %d train, %d held-out sessions, %d needed uses; plain BM25 recall@1/5/10 %.2f/%.2f/%.2f; with priors %.2f/%.2f/%.2f",
				tc.name, len(train), len(test), ranked.Needed,
				plain.Share(1), plain.Share(5), plain.Share(10), ranked.Share(1), ranked.Share(5), ranked.Share(10))
			if got := ranked.Share(5); got < tc.want {
				t.Errorf("recall@5 with priors %.3f, want at least %.2f", got, tc.want)
			}
		})
	}
}
