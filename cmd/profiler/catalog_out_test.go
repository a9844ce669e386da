package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/testupstream"
)

// TestCatalogOutKeepsTheLaunchDocument: profiler catalog --out naming the
// launch document it records from (or any file that is no catalog) is a
// usage error that leaves the file as it was; an earlier catalog there is
// replaced.
func TestCatalogOutKeepsTheLaunchDocument(t *testing.T) {
	dir := t.TempDir()
	pack := filepath.Join(dir, "servers.mcp.json")
	packJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"icons": map[string]any{"command": testupstream.IconServer(t)}}})
	if err := os.WriteFile(pack, packJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := benchRun(t, "catalog", "--launch", pack, "--out", pack)
	if b, _ := os.ReadFile(pack); code != 2 || string(b) != string(packJSON) || !strings.Contains(stderr, pack+" exists and is no catalog") {
		t.Errorf("catalog --out the launch document: exit %d, stderr %q; the file now:\n%s", code, stderr, b)
	}
	out := filepath.Join(dir, "catalog.json")
	for i := range 2 { // the second replaces the first catalog
		if _, stderr, code := benchRun(t, "catalog", "--launch", pack, "--out", out); code != 0 {
			t.Fatalf("catalog %d: exit %d: %s", i+1, code, stderr)
		}
	}
	if _, err := catalog.Load(out); err != nil {
		t.Error(err)
	}
}
