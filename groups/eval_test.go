//go:build eval

package groups_test

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/profiles"
)

// sharedData is the real data beside the project (see its README);
// TOOLPROF_DATA moves it, as make eval sets it.
func sharedData() string {
	if dir := os.Getenv("TOOLPROF_DATA"); dir != "" {
		return dir
	}
	return "../../shared/data"
}

// TestEvalRealData derives groups on the real traces and checks the
// targets (expected tokens, switches a session) on the held-out part of
// bfcl-multi-turn; tau-airline's figures are reported.
// Run with: go test -tags eval ./groups/ -run Eval -v
func TestEvalRealData(t *testing.T) {
	for _, tc := range []struct {
		name   string
		target bool
	}{{"bfcl-multi-turn", true}, {"tau-airline", false}} {
		t.Run(tc.name, func(t *testing.T) {
			catalogPath := filepath.Join(sharedData(), "catalogs", tc.name+".json")
			if _, err := os.Stat(catalogPath); err != nil {
				t.Skipf("real data not available: %v", err)
			}
			// profiler derive --groups's pipeline: tools priced as the
			// gateway lists them (bench.ServedCosts), with no policy.
			out, err := generate.Run(context.Background(), generate.Config{Traces: []string{filepath.Join(sharedData(), "traces", tc.name+".jsonl")}, Catalog: catalogPath,
				Out: filepath.Join(t.TempDir(), "profiles.generated.toml"), Specs: derive.DefaultSpecs(), Holdout: derive.DefaultHoldout, DefaultTarget: derive.DefaultTarget, Force: true,
				Groups: &generate.Groups{Profile: groups.DefaultProfile, MaxSwitches: groups.DefaultMaxSwitches}})
			if err != nil {
				t.Fatal(err)
			}
			res := out.Groups
			var table, js bytes.Buffer
			if err := res.WriteTable(&table); err != nil {
				t.Fatal(err)
			}
			t.Logf("%s\n%s", tc.name, table.String())
			if err := res.WriteJSON(&js); err != nil {
				t.Fatal(err)
			}
			var figures struct {
				Derive, Holdout groups.Figures
			}
			if err := json.Unmarshal(js.Bytes(), &figures); err != nil || figures.Holdout != res.Holdout {
				t.Fatalf("the JSON report does not carry the held-out figures: %v", err)
			}
			hj, _ := json.Marshal(res.Holdout)
			t.Logf("%s held-out JSON: %s", tc.name, hj)
			if err := profiles.Encode(&bytes.Buffer{}, out.File); err != nil {
				t.Fatalf("the file with groups does not encode: %v", err)
			}
			h := res.Holdout
			t.Logf("%s held-out: %d sessions, %.1f tokens/session = %.1f%% of full (%d), %.2fx the used-tools floor (%.1f); switches mean %.2f, p95 %d; %.1f%% need none; with prompt caching %.1f per session = %.1f%% of full's %.1f",
				tc.name, h.Sessions, h.MeanTokens, 100*h.ShareOfFull, h.FullTokens, h.OverFloor, h.FloorTokens, h.MeanSwitches, h.P95Switches, 100*h.NoSwitchShare, h.SessionCost, 100*h.SessionShareOfFull, h.SessionCostFull)
			if tc.target {
				if h.ShareOfFull > 0.25 {
					t.Errorf("held-out expected tokens %.1f%% of full, want at most 25%%", 100*h.ShareOfFull)
				}
				if h.MeanSwitches > 1.5 {
					t.Errorf("held-out mean switches %.2f, want at most 1.5", h.MeanSwitches)
				}
			}
		})
	}
}
