//go:build eval

package bench_test

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

func evalData(t *testing.T) string {
	if dir := os.Getenv("TOOLPROF_DATA"); dir != "" {
		return dir
	}
	return filepath.Join("..", "..", "shared", "data")
}

// TestEvalGitHubModelMeasure: the model measure of the full GitHub catalog
// (79 tools, base64 icons on each) is within 15% of an independent count:
// per tool, the tokens of the compact JSON of its name, its description and
// its input schema, counted apart and summed.
func TestEvalGitHubModelMeasure(t *testing.T) {
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	cat, err := catalog.Load(filepath.Join(evalData(t), "catalogs", "github-mcp-server-v1.0.0-all.json"))
	if err != nil {
		t.Fatal(err)
	}
	srv := catalogServer(t, cat)
	ex, err := exchange.Measure(context.Background(), srv, exchange.Options{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	m, err := exchange.ModelMeasure(ex, c)
	if err != nil {
		t.Fatal(err)
	}
	independent := 0
	for _, tl := range cat.Tools {
		for _, v := range []any{tl.Name, tl.Description, tl.InputSchema} {
			b, err := json.Marshal(v)
			if err != nil {
				t.Fatal(err)
			}
			n, err := c.Count(string(b))
			if err != nil {
				t.Fatal(err)
			}
			independent += n[price.O200kBase]
		}
	}
	model := m[price.Anthropic].Total[price.O200kBase]
	off := float64(model-independent) / float64(independent)
	t.Logf("github (%d tools): model anthropic %d, openai %d o200k_base tokens; independent count %d (%+.1f%%); wire %d tokens, %d bytes",
		len(cat.Tools), model, m[price.OpenAI].Total[price.O200kBase], independent, 100*off, ex.Tokens[price.O200kBase], ex.Bytes)
	if math.Abs(off) > 0.15 {
		t.Errorf("model measure %d is %.1f%% from the independent count %d: want within 15%%", model, 100*off, independent)
	}
}

// TestEvalSessionCost derives profiles (with groups) from each trace's
// oldest 80% with bin/profiler, then prices the held-out 20% per session
// with prompt caching: the default profile's and the best arm's mean
// against full's.
func TestEvalSessionCost(t *testing.T) {
	bin := filepath.Join("..", "bin", "profiler")
	if _, err := os.Stat(bin); err != nil {
		t.Fatalf("%s: run make build first (make eval does): %v", bin, err)
	}
	for _, name := range []string{"bfcl-multi-turn", "tau-airline"} {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			data := evalData(t)
			tracePath := filepath.Join(data, "traces", name+".jsonl")
			catPath := filepath.Join(data, "catalogs", name+".json")
			raw, err := os.ReadFile(tracePath)
			if err != nil {
				t.Fatal(err)
			}
			lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
			hold := int(math.Round(0.2 * float64(len(lines))))
			holdPath := filepath.Join(dir, "holdout.jsonl")
			if err := os.WriteFile(holdPath, []byte(strings.Join(lines[len(lines)-hold:], "\n")+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			out := filepath.Join(dir, "profiles.generated.toml")
			run := func(args ...string) []byte {
				cmd := exec.Command(bin, args...)
				var stdout, stderr bytes.Buffer
				cmd.Stdout, cmd.Stderr = &stdout, &stderr
				if err := cmd.Run(); err != nil {
					t.Fatalf("profiler %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
				}
				return stdout.Bytes()
			}
			run("derive", "--trace", tracePath, "--catalog", catPath, "--out", out, "--groups", "--force")
			js := run("bench", "--profiles", out, "--catalog", catPath, "--trace", holdPath, "--format", "json")
			r, err := bench.DecodeReport(bytes.NewReader(js))
			if err != nil {
				t.Fatal(err)
			}
			set, err := profiles.Load(out)
			if err != nil {
				t.Fatal(err)
			}
			def := r.Profile(set.File.Default)
			if def == nil || def.SessionCost == nil {
				t.Fatalf("default profile %q has no session cost", set.File.Default)
			}
			best := def
			for i := range r.Profiles {
				p := &r.Profiles[i]
				if p.SessionCost != nil && p.SessionCost.ShareOfFull < best.SessionCost.ShareOfFull {
					best = p
				}
			}
			full := r.Profile("full")
			t.Logf("%s, %d held-out sessions: full mean %.0f; default %q mean %.0f (p50 %.0f, p95 %.0f) = %.3f of full (target <= 0.6), %d refused; best arm %q mean %.0f = %.3f of full (target <= 0.25), %d refused; floor %.3f; model share of full (one listing): default %.3f, best %.3f",
				name, r.Sessions.Sessions, full.SessionCost.Mean, def.Name, def.SessionCost.Mean, def.SessionCost.P50, def.SessionCost.P95, def.SessionCost.ShareOfFull, def.SessionCost.Refused,
				best.Name, best.SessionCost.Mean, best.SessionCost.ShareOfFull, best.SessionCost.Refused, r.Sessions.FloorShareOfFull, def.ModelShareOfFull, best.ModelShareOfFull)
			// The targets are goals for the derivation, which does not yet
			// minimise the session cost: a miss is reported, not failed.
			if def.SessionCost.ShareOfFull > 0.6 {
				t.Logf("MISS: default profile's session cost is %.3f of full's, over the 0.6 target", def.SessionCost.ShareOfFull)
			}
			if best.SessionCost.ShareOfFull > 0.25 {
				t.Logf("MISS: best arm's session cost is %.3f of full's, over the 0.25 target", best.SessionCost.ShareOfFull)
			}
		})
	}
}
