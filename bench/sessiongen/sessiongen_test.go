package sessiongen

import (
	"bytes"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/telemetry"
)

func TestDeterministic(t *testing.T) {
	gen := func(seed uint64) []byte {
		var b bytes.Buffer
		if err := WriteTrace(&b, Config{Seed: seed, Sessions: 500, Tools: ToolNames(64)}); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b, c := gen(1), gen(1), gen(2)
	if !bytes.Equal(a, b) {
		t.Error("same seed, different output")
	}
	if bytes.Equal(a, c) {
		t.Error("different seeds, same output")
	}
}

// TestShape checks the workload is heavy-tailed and clustered, and that the
// trace is valid for telemetry's decoder.
func TestShape(t *testing.T) {
	var b bytes.Buffer
	names := ToolNames(128)
	const n = 20000
	if err := WriteTrace(&b, Config{Seed: 7, Sessions: n, Tools: names}); err != nil {
		t.Fatal(err)
	}
	ts, _, err := telemetry.DecodeTrace(&b, "gen", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ts) != n {
		t.Fatalf("%d sessions, want %d", len(ts), n)
	}
	use := map[string]int{}
	zero, distinct := 0, map[string]bool{}
	for _, u := range telemetry.UsageFromTrace(ts) {
		if u.Calls == 0 {
			zero++
		}
		for _, tool := range u.Tools {
			use[tool]++
		}
		distinct[strings.Join(u.Tools, ",")] = true
		if !u.Session.Start.After(ts[0].Started.Add(-1)) {
			t.Fatal("start times not increasing")
		}
	}
	counts := make([]int, 0, len(use))
	for _, c := range use {
		counts = append(counts, c)
	}
	slices.Sort(counts)
	slices.Reverse(counts)
	if top, median := counts[0], counts[len(counts)/2]; top < 10*median {
		t.Errorf("popularity not heavy-tailed: top %d, median %d", top, median)
	}
	if share := float64(zero) / n; share < 0.02 || share > 0.04 {
		t.Errorf("zero-call share %.3f, want about 0.03", share)
	}
	// Clustered: far fewer distinct tool sets than sessions.
	if len(distinct) > n/3 {
		t.Errorf("%d distinct tool sets in %d sessions: not clustered", len(distinct), n)
	}
}

func TestCatalog(t *testing.T) {
	var b bytes.Buffer
	names := ToolNames(40)
	if err := WriteCatalog(&b, names, 1); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Decode(&b)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(c.Names(), names) {
		t.Errorf("names %v", c.Names())
	}
}

func TestConfigErrors(t *testing.T) {
	noop := func(Session) error { return nil }
	if err := Each(Config{Sessions: 1}, noop); err == nil {
		t.Error("no tools accepted")
	}
	if err := Each(Config{Sessions: 1, Tools: ToolNames(3), Clusters: 5}, noop); err == nil {
		t.Error("more clusters than tools accepted")
	}
}
