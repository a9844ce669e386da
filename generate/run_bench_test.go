package generate

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/bench/sessiongen"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/telemetry"
)

// benchTelemetry imports n sessiongen sessions over 300 tools into a
// telemetry directory, as profiler import does, and writes their catalog;
// it returns Run's config over them.
func benchTelemetry(b testing.TB, n int) Config {
	b.Helper()
	dir := b.TempDir()
	names := sessiongen.ToolNames(300)
	var trace bytes.Buffer
	if err := sessiongen.WriteTrace(&trace, sessiongen.Config{Seed: 1, Sessions: n, Tools: names}); err != nil {
		b.Fatal(err)
	}
	ts, _, err := telemetry.DecodeTrace(&trace, "trace.jsonl", false)
	if err != nil {
		b.Fatal(err)
	}
	tdir := filepath.Join(dir, "telemetry")
	if _, err := telemetry.Import(context.Background(), tdir, ts, time.Now()); err != nil {
		b.Fatal(err)
	}
	var cat bytes.Buffer
	if err := sessiongen.WriteCatalog(&cat, names, 1); err != nil {
		b.Fatal(err)
	}
	catPath := filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(catPath, cat.Bytes(), 0o600); err != nil {
		b.Fatal(err)
	}
	specs, err := ParseSpecs(SpecFlags{})
	if err != nil {
		b.Fatal(err)
	}
	return Config{Telemetry: []string{tdir}, Catalog: catPath, Out: filepath.Join(dir, "profiles.generated.toml"), Specs: specs,
		Holdout: derive.DefaultHoldout, DefaultTarget: derive.DefaultTarget, MinSessions: derive.DefaultMinSessions,
		MaxUnknownShare: DefaultMaxUnknownShare, Cache: price.DefaultCache()}
}

// BenchmarkRun times profiler derive's work on telemetry (Run); in-turn is
// the same parts one after the other (price the tools, read the sessions,
// derive), as Run ran them before pricing overlapped the read, so the
// overlap shows as a ratio in one run.
func BenchmarkRun(b *testing.B) {
	ctx := context.Background()
	for _, n := range []int{10_000, 100_000} {
		cfg := benchTelemetry(b, n)
		b.Run(fmt.Sprintf("run/%d", n), func(b *testing.B) {
			for b.Loop() {
				if _, err := Run(ctx, cfg); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(fmt.Sprintf("in-turn/%d", n), func(b *testing.B) {
			for b.Loop() {
				cat, err := catalog.Load(cfg.Catalog)
				if err != nil {
					b.Fatal(err)
				}
				tools, err := bench.DeriveTools(ctx, cat, nil)
				if err != nil {
					b.Fatal(err)
				}
				in, err := readSessions(ctx, cfg.Telemetry, nil, false, io.Discard)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := derive.Derive(in.sessions, derive.Config{Tools: tools, Specs: cfg.Specs, Holdout: cfg.Holdout, DefaultTarget: cfg.DefaultTarget,
					MinSessions: cfg.MinSessions, ToolCalls: in.toolCalls, Paths: in.paths, Cache: cfg.Cache}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
