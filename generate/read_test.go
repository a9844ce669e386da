package generate

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"
	"unsafe"

	"github.com/toolprof/toolprof/telemetry"
)

// TestReadSessionsKeepsOneCopy: derive reads telemetry usage
// without copying it into a second array: beyond what the scan itself
// allocates, reading allocates less than half a Usage per session.
func TestReadSessionsKeepsOneCopy(t *testing.T) {
	const sessions = 20000
	dir := t.TempDir()
	traces := make([]telemetry.TraceSession, sessions)
	for i := range traces {
		traces[i] = telemetry.TraceSession{Session: fmt.Sprint("s", i), Calls: []telemetry.TraceCall{{Tool: fmt.Sprint("t", i%7)}}}
	}
	if _, err := telemetry.Import(context.Background(), dir, traces, time.Now()); err != nil {
		t.Fatal(err)
	}
	allocated := func(fn func()) uint64 {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		fn()
		runtime.ReadMemStats(&after)
		return after.TotalAlloc - before.TotalAlloc
	}
	scanOnly := allocated(func() {
		if _, err := telemetry.ScanUsage(context.Background(), []string{dir}, telemetry.Window{}); err != nil {
			t.Fatal(err)
		}
	})
	var got []telemetry.Usage
	read := allocated(func() {
		r, err := readSessions(context.Background(), []string{dir}, nil, false, io.Discard)
		if err != nil {
			t.Fatal(err)
		}
		got = r.sessions
	})
	if len(got) != sessions {
		t.Fatalf("read %d sessions, want %d", len(got), sessions)
	}
	extra, limit := int64(read)-int64(scanOnly), int64(sessions*unsafe.Sizeof(telemetry.Usage{})/2)
	if extra > limit {
		t.Fatalf("reading allocated %d bytes beyond the scan's %d; want under %d (half a Usage per session)", extra, scanOnly, limit)
	}
}
