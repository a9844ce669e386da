package telemetry

import (
	"context"
	"os"
	"strconv"
	"testing"
)

// BenchmarkScanStats times what `profiler stats` does of telemetry: read
// a segment imported from a trace of n sessions for its counts, and
// summarise them. ns/session at 100k and at 1M (-benchtime=1x) say
// whether stats is linear.
func BenchmarkScanStats(b *testing.B) {
	n := 100_000
	if v := os.Getenv("TOOLPROF_BENCH_STATS_SESSIONS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil || n <= 0 {
			b.Fatalf("TOOLPROF_BENCH_STATS_SESSIONS=%q: want a positive session count", v)
		}
	}
	ctx := context.Background()
	path := benchTraceFile(b, n)
	dir := b.TempDir()
	importTraceFile(b, ctx, path, dir)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		snap, err := ScanStats(ctx, []string{dir}, Window{})
		if err != nil {
			b.Fatal(err)
		}
		if st := Summarize(snap); st.Sessions != n {
			b.Fatalf("stats of %d sessions, want %d", st.Sessions, n)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/session")
}
