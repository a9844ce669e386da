package telemetry

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// benchTraceFile writes a trace of n sessions over 300 tools, shaped as
// the generated workloads are (a few popular tools, 1 to 10 calls, ids in
// file order, starts a second apart), and returns its path.
func benchTraceFile(b *testing.B, n int) string {
	b.Helper()
	path := filepath.Join(b.TempDir(), "trace.jsonl")
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	w := bufio.NewWriter(f)
	r := rand.New(rand.NewPCG(1, 2))
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		fmt.Fprintf(w, `{"session":"gen/%d","client":{"name":"bench","version":"1"},"started":%q,"calls":[`, i, start.Add(time.Duration(i)*time.Second).Format(time.RFC3339Nano))
		for j := range 1 + r.IntN(10) {
			if j > 0 {
				w.WriteByte(',')
			}
			// Squaring skews the draw towards the first tools.
			x := r.Float64()
			fmt.Fprintf(w, `{"tool":"server%02d__tool_%03d"}`, int(x*x*300)/20, int(x*x*300))
		}
		w.WriteString("]}\n")
	}
	if err := w.Flush(); err != nil {
		b.Fatal(err)
	}
	if err := f.Close(); err != nil {
		b.Fatal(err)
	}
	return path
}

// BenchmarkImport times what `profiler import` does: scan a trace file and
// write its sessions into a new segment. ns/session at 100k and at 1M
// (-benchtime=1x) say whether the import is linear.
func BenchmarkImport(b *testing.B) {
	sizes := []int{10_000, 100_000}
	if v := os.Getenv("TOOLPROF_BENCH_IMPORT_SESSIONS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n <= 0 {
			b.Fatalf("TOOLPROF_BENCH_IMPORT_SESSIONS=%q: want a positive session count", v)
		}
		sizes = []int{n}
	}
	ctx := context.Background()
	for _, n := range sizes {
		b.Run("sessions="+strconv.Itoa(n), func(b *testing.B) {
			path := benchTraceFile(b, n)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				dir := b.TempDir()
				b.StartTimer()
				if res := importTraceFile(b, ctx, path, dir); res.Sessions != n {
					b.Fatalf("import: %+v, want %d sessions", res, n)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/session")
		})
	}
}

// importTraceFile imports the trace file at path into dir as profiler
// import does; a malformed line fails b.
func importTraceFile(b *testing.B, ctx context.Context, path, dir string) ImportResult {
	b.Helper()
	im, err := NewImporter(ctx, dir, time.Now())
	if err != nil {
		b.Fatal(err)
	}
	var rep TraceReport
	if err := ScanTraceFiles(ctx, []string{path}, false, &rep, func(t *TraceSession) error {
		_, err := im.Add(t)
		return err
	}); err != nil {
		b.Fatal(err)
	}
	res, err := im.Commit()
	if err != nil || len(rep.Bad) > 0 {
		b.Fatalf("import: %+v, %d bad, %v", res, len(rep.Bad), err)
	}
	return res
}
