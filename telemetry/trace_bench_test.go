package telemetry

import (
	"context"
	"os"
	"testing"
)

// BenchmarkScanTrace times reading a 100k-session trace file as import
// reads it, without writing it anywhere.
func BenchmarkScanTrace(b *testing.B) {
	path := benchTraceFile(b, 100_000)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		f, err := os.Open(path)
		if err != nil {
			b.Fatal(err)
		}
		n := 0
		if err := ScanTrace(context.Background(), f, path, func(_ int, t *TraceSession) error {
			n += len(t.Calls)
			return nil
		}, func(e LineError) { b.Fatal(e) }); err != nil {
			b.Fatal(err)
		}
		f.Close()
		if n == 0 {
			b.Fatal("no calls read")
		}
	}
}
