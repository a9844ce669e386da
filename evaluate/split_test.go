package evaluate_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/generate"
)

// TestHeldOutAsDerive: profiler evaluate replays exactly the sessions
// profiler derive held out. Each session calls a tool of its own, so the
// tools derive's search priors (learned from its derive part alone) lack
// name its held-out sessions; the trace is out of time order and has a
// session without a start, which keeps its place after the one before it.
func TestHeldOutAsDerive(t *testing.T) {
	const n = 20
	dir := t.TempDir()
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var trace strings.Builder
	var tools []map[string]any
	for i := range n {
		tool := fmt.Sprintf("t%02d", i)
		tools = append(tools, map[string]any{"name": tool, "description": "tool " + tool, "inputSchema": map[string]any{"type": "object"}})
		line := map[string]any{"session": fmt.Sprintf("s%02d", i), "calls": []map[string]any{{"tool": tool}}}
		if i != 7 {
			line["started"] = base.Add(time.Duration((i*7)%n) * time.Hour).Format(time.RFC3339) // a permutation of the hours
		}
		raw, _ := json.Marshal(line)
		trace.Write(append(raw, '\n'))
	}
	tracePath, catalogPath := filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "catalog.json")
	raw, _ := json.Marshal(map[string]any{"tools": tools})
	if err := os.WriteFile(catalogPath, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(tracePath, []byte(trace.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	const holdout = 0.25

	out, err := generate.Run(context.Background(), generate.Config{Traces: []string{tracePath}, Catalog: catalogPath, Out: filepath.Join(dir, "profiles.generated.toml"),
		Specs: derive.DefaultSpecs(), Holdout: holdout, DefaultTarget: derive.DefaultTarget, Search: true, Force: true})
	if err != nil {
		t.Fatal(err)
	}
	learned := map[string]bool{}
	for _, st := range out.File.Search.Tools {
		learned[st.Name] = true
	}
	var byDerive []string
	for i := range n {
		if !learned[fmt.Sprintf("t%02d", i)] {
			byDerive = append(byDerive, fmt.Sprintf("s%02d", i))
		}
	}

	sessions, err := evaluate.LoadTrace(tracePath)
	if err != nil {
		t.Fatal(err)
	}
	_, test := derive.SplitByStart(sessions, evaluate.Session.Started, holdout) // as profiler evaluate splits
	var byEvaluate []string
	for _, s := range test {
		byEvaluate = append(byEvaluate, s.ID)
	}
	slices.Sort(byEvaluate)

	if len(byDerive) != n*holdout || out.Result.Counts.Holdout != len(byDerive) {
		t.Fatalf("derive held out %v (%d counted), want %d sessions", byDerive, out.Result.Counts.Holdout, int(n*holdout))
	}
	if !slices.Equal(byDerive, byEvaluate) {
		t.Errorf("held out by derive %v, by evaluate %v; want the same sessions", byDerive, byEvaluate)
	}
}
