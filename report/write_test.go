package report

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestWriteKeepsAPagePersonsWrote: --out may name a directory that holds
// a page of its own (a site's index.html); Write refuses to replace one
// that is no report, leaving it as it was, and replaces an earlier report.
func TestWriteKeepsAPagePersonsWrote(t *testing.T) {
	r := &Report{Days: []Day{}, Servers: []Server{}, Tools: []Tool{}}
	dir := t.TempDir()
	page := filepath.Join(dir, IndexFile)
	const own = "<!DOCTYPE html><title>Our team site</title>\n"
	if err := os.WriteFile(page, []byte(own), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := r.Write(dir)
	if err == nil || !strings.Contains(err.Error(), page+" exists and is no toolprof usage report") {
		t.Errorf("Write over a page of a person's: %v, want a refusal naming it", err)
	}
	if b, _ := os.ReadFile(page); string(b) != own {
		t.Errorf("the page was replaced:\n%s", b)
	}

	other := t.TempDir()
	for i := range 2 { // the second replaces the first report
		if _, err := r.Write(other); err != nil {
			t.Fatalf("write %d: %v", i+1, err)
		}
	}
}
