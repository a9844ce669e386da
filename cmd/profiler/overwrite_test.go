package main

import (
	"bytes"
	"encoding/json"
	"image"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestOutputsReplaceOnlyTheirOwnFiles: --plot, --groups-report and bench
// --out write a new file and replace one the tool wrote before, but refuse
// (exit 2, naming the flag and the file) any other file, leaving it as it
// was.
func TestOutputsReplaceOnlyTheirOwnFiles(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	var unmarkedPNG bytes.Buffer
	if err := png.Encode(&unmarkedPNG, image.NewGray(image.Rect(0, 0, 2, 2))); err != nil {
		t.Fatal(err)
	}
	deriveWith := func(extra ...string) func(string) []string {
		return func(path string) []string {
			args := []string{"derive", "--trace", trace, "--catalog", cat, "--out", filepath.Join(dir, "profiles.generated.toml")}
			for _, a := range extra {
				args = append(args, strings.ReplaceAll(a, "PATH", path))
			}
			return args
		}
	}
	benchWith := func(extra ...string) func(string) []string {
		return func(path string) []string {
			return append(append([]string{"bench", "--catalog", benchTinyCatalog, "--profiles", benchTinyProfiles}, extra...), "--out", path)
		}
	}
	appendLine := func(b []byte) []byte { return append(bytes.Clone(b), "edited by hand\n"...) }
	tests := []struct {
		name, flag string
		args       func(path string) []string
		// edit changes an earlier output so that it differs from what the
		// run writes, yet is still the tool's own file.
		edit    func([]byte) []byte
		foreign []string
	}{
		{name: "derive plot", flag: "--plot", args: deriveWith("--plot", "PATH"), edit: appendLine,
			foreign: []string{"my notes\n", unmarkedPNG.String()}},
		{name: "derive groups report", flag: "--groups-report", args: deriveWith("--groups", "--groups-report", "PATH"),
			edit: func(b []byte) []byte {
				var c bytes.Buffer
				if err := json.Compact(&c, b); err != nil {
					t.Fatal(err)
				}
				return c.Bytes()
			},
			foreign: []string{"my notes\n", `{"counts": {}, "mine": true}`, "[]"}},
		{name: "bench table", flag: "--out", args: benchWith(), edit: appendLine, foreign: []string{"my notes\n", "| profile | mine |\n"}},
		{name: "bench markdown", flag: "--out", args: benchWith("--format", "markdown"), edit: appendLine, foreign: []string{"# Notes\n"}},
		{name: "bench json", flag: "--out", args: benchWith("--format", "json"), edit: appendLine, foreign: []string{`{"name": "mine"}`,
			// Another tool's JSON with a list of named profiles.
			`{"profiles": [{"name": "work", "color": "blue"}], "theme": "dark"}`, `{"profiles": []}`}},
		{name: "bench results", flag: "--out", args: benchWith("--results"), edit: appendLine, foreign: []string{"# Results\n"}},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, "out", string(rune('a'+i)), "file")
			if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
				t.Fatal(err)
			}
			if _, stderr, code := benchRun(t, tt.args(path)...); code != 0 {
				t.Fatalf("new file: exit %d: %s", code, stderr)
			}
			first, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			edited := tt.edit(first)
			if err := os.WriteFile(path, edited, 0o644); err != nil {
				t.Fatal(err)
			}
			if _, stderr, code := benchRun(t, tt.args(path)...); code != 0 {
				t.Fatalf("own earlier file: exit %d: %s", code, stderr)
			}
			if again, _ := os.ReadFile(path); bytes.Equal(again, edited) {
				t.Errorf("own earlier file not replaced")
			}
			for _, content := range tt.foreign {
				if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
					t.Fatal(err)
				}
				_, stderr, code := benchRun(t, tt.args(path)...)
				if code != 2 || !strings.Contains(stderr, tt.flag+" "+path) || !strings.Contains(stderr, "remove it or name another file") {
					t.Errorf("foreign %.20q: exit %d, want 2 naming %s %s: %s", content, code, tt.flag, path, stderr)
				}
				if got, _ := os.ReadFile(path); string(got) != content {
					t.Errorf("foreign %.20q changed to %d bytes", content, len(got))
				}
			}
		})
	}
}
