package cli

import (
	"os"
	"runtime/debug"
)

// BulkGC has the garbage collector run when the heap nears limit bytes
// instead of each time it doubles, for a command that allocates fast but
// keeps little (an import: a fifth of its CPU went to collections). A live
// heap above limit still works: the runtime then collects as often as it
// must, on at most half the CPU. GOGC or GOMEMLIMIT in the environment
// win: BulkGC then changes nothing. The returned func restores the
// settings before.
func BulkGC(limit int64) (restore func()) {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return func() {}
	}
	percent := debug.SetGCPercent(-1)
	before := debug.SetMemoryLimit(limit)
	return func() {
		debug.SetMemoryLimit(before)
		debug.SetGCPercent(percent)
	}
}
