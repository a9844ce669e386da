package telemetry

import (
	"bytes"
	"context"
	"os"
	"testing"
)

// TestReadersOpenClosedSegmentsReadOnly: readers take bbolt's shared lock,
// so several (the nightly job, a stats command, another process's reader)
// read the same closed segment at once, and reading changes no byte of it.
// A reader opening for writing would wait on the other reader's lock and
// fail with ErrSegmentLocked.
func TestReadersOpenClosedSegmentsReadOnly(t *testing.T) {
	dir := t.TempDir()
	path := writeTestSegment(t, dir, 100)
	before, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	fi, _ := os.Stat(path)
	cmd, out, stdin := startChild(t, "hold-read:"+path)
	if !out.Scan() || out.Text() != "HELD" {
		t.Fatalf("reader child: %q", out.Text())
	}
	snap, err := Scan(context.Background(), []string{dir}, Window{})
	if err != nil {
		t.Fatalf("read while another process reads: %v", err)
	}
	if len(snap.Calls) != 100 || len(snap.Skipped) != 0 {
		t.Fatalf("read %d calls, skipped %v; want 100, none", len(snap.Calls), snap.Skipped)
	}
	if err := OpenSegmentCheck(path); err != nil {
		t.Fatalf("check while another process reads: %v", err)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("reader child: %v", err)
	}
	after, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(before, after) {
		t.Error("reading changed the segment's bytes")
	}
	if fi2, _ := os.Stat(path); !fi2.ModTime().Equal(fi.ModTime()) {
		t.Errorf("reading touched the segment: mtime %v -> %v", fi.ModTime(), fi2.ModTime())
	}
}
