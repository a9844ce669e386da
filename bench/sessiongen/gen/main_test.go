package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/telemetry"
)

func TestRun(t *testing.T) {
	dir := t.TempDir()
	var out, errb bytes.Buffer
	if err := run(context.Background(), []string{"-sessions", "200", "-tools", "24", "-dir", dir}, &out, &errb); err != nil {
		t.Fatal(err)
	}
	c, err := catalog.Load(filepath.Join(dir, "catalog.json"))
	if err != nil || len(c.Tools) != 24 {
		t.Fatalf("catalog: %v", err)
	}
	f, err := os.Open(filepath.Join(dir, "trace.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ts, _, err := telemetry.DecodeTrace(f, "trace.jsonl", false)
	if err != nil || len(ts) != 200 {
		t.Fatalf("trace: %d sessions, %v", len(ts), err)
	}
	if !strings.Contains(out.String(), "200 sessions over 24 tools") {
		t.Errorf("stdout %q", out.String())
	}
	for _, bad := range [][]string{{"-tools", "0"}, {"-sessions", "-1"}, {"-nope"}} {
		if err := run(context.Background(), append(bad, "-dir", dir), &out, &errb); err == nil {
			t.Errorf("%v accepted", bad)
		}
	}
}
