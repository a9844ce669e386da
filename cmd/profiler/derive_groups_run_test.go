package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/internal/fixture"
	"github.com/toolprof/toolprof/profiles"
)

// writeGroupsTrace writes fixture.Groups' sessions as a trace file.
func writeGroupsTrace(t *testing.T, n int) (dir, catalogPath, tracePath string) {
	t.Helper()
	dir, cat, us := fixture.Groups(t, n)
	var b strings.Builder
	for _, u := range us {
		calls := make([]map[string]string, len(u.Tools))
		for i, tool := range u.Tools {
			calls[i] = map[string]string{"tool": tool}
		}
		line, _ := json.Marshal(map[string]any{"session": u.Session.ID, "client": map[string]string{"name": "test", "version": "1"},
			"started": u.Session.Start.Format(time.RFC3339), "calls": calls})
		b.Write(line)
		b.WriteByte('\n')
	}
	tracePath = filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(tracePath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	catalogPath = filepath.Join(dir, "catalog.json")
	var cb bytes.Buffer
	if err := cat.Write(&cb); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(catalogPath, cb.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, catalogPath, tracePath
}

func TestDeriveRunWithGroups(t *testing.T) {
	dir, cat, trace := writeGroupsTrace(t, 120)
	out := filepath.Join(dir, "profiles.generated.toml")
	stdout, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--groups")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stdout, "tool groups") || !strings.Contains(stdout, "held-out") {
		t.Errorf("stdout lacks the groups report:\n%s", stdout)
	}
	f, err := profiles.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	offered := 0
	for _, p := range f.Profiles {
		offered += len(p.Groups)
	}
	if len(f.Groups) == 0 || offered != len(f.Groups) {
		t.Fatalf("%d groups, %d offered; want every group offered by the grouped profile", len(f.Groups), offered)
	}
	// Same input: --check finds the file up to date; without --groups it differs.
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--groups", "--check"); code != 0 {
		t.Errorf("--check with --groups: exit %d: %s", code, stderr)
	}
	if _, _, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--check"); code != 1 {
		t.Errorf("--check without --groups: exit %d, want 1 (the file has groups)", code)
	}
	for _, args := range [][]string{{"--groups-profile", "x"}, {"--groups", "--groups-max-switches", "-1"}} {
		if _, stderr, code := runDeriveArgs(t, append([]string{"--trace", trace, "--catalog", cat, "--out", out}, args...)...); code != 2 {
			t.Errorf("%v: exit %d, want 2: %s", args, code, stderr)
		}
	}
}
