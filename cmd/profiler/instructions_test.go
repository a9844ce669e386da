package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/toolprof/toolprof/catalog"
)

// TestCatalogRecordsInstructions: profiler catalog records a live server's
// own instructions (the npm everything-server's 1,579 bytes) beside its
// tools, and bench prices them: the report from the catalog is the live
// server's, and dropping them from the catalog makes every profile cheaper.
func TestCatalogRecordsInstructions(t *testing.T) {
	everything, err := filepath.Abs(filepath.Join("..", "..", "e2e", "node_modules", ".bin", "mcp-server-everything"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(everything); err != nil {
		t.Skipf("e2e/node_modules lacks the npm everything-server (run make e2e-deps): %v", err)
	}
	// Run until SIGTERM, which counts as a clean exit: the server outlives
	// its stdin (its timers hold node up), so closing it signals it.
	cmd := []string{"--", "sh", "-c", `exec 3<&0; "$0" <&3 3<&- & child=$!; trap 'kill $child; exit 0' TERM; wait $child`, everything}
	dir := t.TempDir()
	dump := filepath.Join(dir, "everything.json")
	if _, stderr, code := benchRun(t, append([]string{"catalog", "--out", dump}, cmd...)...); code != 0 {
		t.Fatalf("catalog: exit %d: %s", code, stderr)
	}
	cat, err := catalog.Load(dump)
	if err != nil {
		t.Fatal(err)
	}
	if len(cat.Instructions) != 1 || len(cat.Instructions[0].Instructions) < 1000 {
		t.Fatalf("catalog instructions %+v, want the server's instructions.md", cat.Instructions)
	}
	live, stderr, code := benchRun(t, append([]string{"bench", "--format", "json"}, cmd...)...)
	if code != 0 {
		t.Fatalf("bench live: exit %d: %s", code, stderr)
	}
	recorded, stderr, code := benchRun(t, "bench", "--format", "json", "--catalog", dump)
	if code != 0 {
		t.Fatalf("bench --catalog: exit %d: %s", code, stderr)
	}
	without := filepath.Join(dir, "without.json")
	cat.Instructions = nil
	f, err := os.Create(without)
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.Write(f); err != nil {
		t.Fatal(err)
	}
	f.Close()
	bare, stderr, code := benchRun(t, "bench", "--format", "json", "--catalog", without)
	if code != 0 {
		t.Fatalf("bench --catalog without instructions: exit %d: %s", code, stderr)
	}
	liveFull, recFull, bareFull := decodeBenchReport(t, live).Profile("full"), decodeBenchReport(t, recorded).Profile("full"), decodeBenchReport(t, bare).Profile("full")
	if recFull.Bytes != liveFull.Bytes {
		t.Errorf("bench --catalog prices full at %d bytes, the live server at %d", recFull.Bytes, liveFull.Bytes)
	}
	if bareFull.Bytes+1000 > recFull.Bytes {
		t.Errorf("full costs %d bytes with the instructions and %d without: want them priced", recFull.Bytes, bareFull.Bytes)
	}
	t.Logf("full: %d bytes with the upstream's instructions, %d without", recFull.Bytes, bareFull.Bytes)
}
