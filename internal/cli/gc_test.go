package cli

import (
	"math"
	"runtime/debug"
	"testing"
)

// TestBulkGC: without GOGC or GOMEMLIMIT, BulkGC turns the percent off and
// sets the limit, and restore puts both back; with either set, it changes
// nothing.
func TestBulkGC(t *testing.T) {
	const limit = 300 << 20
	for _, tc := range []struct {
		env         map[string]string
		wantPercent int
		wantLimit   int64
	}{
		{env: map[string]string{"GOGC": "", "GOMEMLIMIT": ""}, wantPercent: -1, wantLimit: limit},
		{env: map[string]string{"GOGC": "50", "GOMEMLIMIT": ""}, wantPercent: 100, wantLimit: math.MaxInt64},
		{env: map[string]string{"GOGC": "", "GOMEMLIMIT": "1GiB"}, wantPercent: 100, wantLimit: math.MaxInt64},
	} {
		for k, v := range tc.env {
			t.Setenv(k, v)
		}
		// The test process runs with the defaults: percent 100, no limit.
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		restore := BulkGC(limit)
		gotPercent := debug.SetGCPercent(100)
		debug.SetGCPercent(gotPercent)
		gotLimit := debug.SetMemoryLimit(-1)
		restore()
		if gotPercent != tc.wantPercent || gotLimit != tc.wantLimit {
			t.Errorf("%v: percent %d, limit %d; want %d, %d", tc.env, gotPercent, gotLimit, tc.wantPercent, tc.wantLimit)
		}
		if p, l := debug.SetGCPercent(100), debug.SetMemoryLimit(-1); p != 100 || l != math.MaxInt64 {
			t.Errorf("%v: after restore percent %d, limit %d; want 100, no limit", tc.env, p, l)
		}
	}
}
