//go:build eval

package evaluate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/price"
)

// TestEvalDerivedSearchBase runs derive --choose-default on the learning
// part of each real trace alone, so that derive holds out its newest 25%
// as validation and the held-out part is never looked at: the base is
// derived from the older 75%, and on bfcl-multi-turn (480 sessions to
// learn from) search over it must cost less on the validation sessions
// than search over the profile it started from, at each find_tools limit
// tried. On tau-airline (120) the figures are only logged: at limit 5
// the base learned there costs more on validation than search over
// lean (0.606 of full against 0.537), and ChooseDefault, which compares
// arms on sessions the base was not learned from, keeps the latter.
// Run with: go test -tags eval ./evaluate -run EvalDerivedSearchBase -v
func TestEvalDerivedSearchBase(t *testing.T) {
	for _, tc := range []struct {
		name  string
		check bool // derived must cost less than its start on validation
	}{{"bfcl-multi-turn", true}, {"tau-airline", false}} {
		name := tc.name
		t.Run(name, func(t *testing.T) {
			_, sessions := loadReal(t, name)
			learn, _ := derive.SplitByStart(sessions, evaluate.Session.Started, derive.DefaultHoldout)
			keep := map[string]bool{}
			for _, s := range learn {
				keep[s.ID] = true
			}
			dir := t.TempDir()
			trace := filepath.Join(dir, "learn.jsonl")
			writeSessions(t, filepath.Join(sharedDataDir(), "traces", name+".jsonl"), trace, keep)
			for _, limit := range []int{5, 9} {
				out, err := generate.Run(context.Background(), generate.Config{Traces: []string{trace}, Catalog: filepath.Join(sharedDataDir(), "catalogs", name+".json"),
					Out: filepath.Join(dir, "profiles.generated.toml"), Specs: []derive.Spec{{Name: "core", Target: 0.8}, {Name: "standard", Target: 0.95}},
					Holdout: 0.25, DefaultTarget: derive.DefaultTarget, Search: true, Groups: &generate.Groups{Profile: groups.DefaultProfile, MaxSwitches: groups.DefaultMaxSwitches}, Force: true, Cache: price.DefaultCache(),
					Choose: &generate.Choose{ServedTarget: evaluate.DefaultServedTarget, SearchLimit: limit}})
				if err != nil {
					t.Fatal(err)
				}
				c, sb := out.Choice, out.Choice.SearchBase
				var derived, start *evaluate.ArmReport
				for _, a := range append(append([]evaluate.ArmReport{c.Chosen}, c.Beaten...), c.Missed...) {
					if a.Name != evaluate.ArmSearch {
						continue
					}
					switch a.Profile {
					case evaluate.DerivedSearchProfile:
						derived = &a
					case sb.Start:
						start = &a
					}
				}
				if derived == nil || start == nil {
					t.Fatalf("limit %d: no search arm over the derived base or %q: %+v", limit, sb.Start, c)
				}
				t.Logf("%s limit %d, validation (%d needed uses): chosen %s over %q (cost %.3f of full, served %.3f); search over the derived base %v: cost %.3f, served %.3f; over %q: cost %.3f, served %.3f; learning cost %.0f from %.0f",
					name, limit, c.Needed, c.Chosen.Name, c.Chosen.Profile, c.Chosen.CostShareOfFull, c.Chosen.ServedShare, sb.Tools, derived.CostShareOfFull, derived.ServedShare,
					sb.Start, start.CostShareOfFull, start.ServedShare, sb.Cost, sb.StartCost)
				if tc.check && derived.CostPerSession.Mean >= start.CostPerSession.Mean {
					t.Errorf("limit %d: search over the derived base costs %.0f per validation session, over %q %.0f", limit, derived.CostPerSession.Mean, sb.Start, start.CostPerSession.Mean)
				}
			}
		})
	}
}

// writeSessions copies the lines of the trace at from whose session is
// in keep to to.
func writeSessions(t *testing.T, from, to string, keep map[string]bool) {
	t.Helper()
	in, err := os.Open(from)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	var b strings.Builder
	sc := bufio.NewScanner(in)
	sc.Buffer(nil, 64<<20)
	for sc.Scan() {
		var line struct {
			Session string `json:"session"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatal(err)
		}
		if keep[line.Session] {
			b.Write(sc.Bytes())
			b.WriteByte('\n')
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
}
