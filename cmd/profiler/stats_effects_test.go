package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/telemetry"
)

// effectsCatalog: read_file read, write_file mutate (no annotations),
// grep|search read with an external side effect, rm destructive.
const effectsCatalog = `{"tools": [
 {"name": "read_file", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
 {"name": "write_file", "inputSchema": {"type": "object"}},
 {"name": "grep|search", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true, "openWorldHint": true}},
 {"name": "rm", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}
]}`

// stats --catalog counts tools, calls and sessions per effect kind (calls
// to tools in no catalog apart); --profiles applies profiles.toml's
// corrections; --profiles alone is a usage error.
func TestStatsEffectKinds(t *testing.T) {
	dir := t.TempDir()
	if _, stderr, code := runProfiler(t, "import", "--telemetry", dir, writeTemp(t, "trace.jsonl", telemetryTrace)); code != 0 {
		t.Fatal(stderr)
	}
	cat := writeTemp(t, "catalog.json", effectsCatalog)
	pdir := t.TempDir()
	gen := filepath.Join(pdir, "profiles.generated.toml")
	os.WriteFile(gen, []byte("version = 1\ndefault = \"full\"\n"), 0o644)
	os.WriteFile(filepath.Join(pdir, "profiles.toml"), []byte("version = 1\n[[effect]]\ntool = \"write_file\"\nkind = \"evaluate\"\n"), 0o644)

	// The trace: read_file 3 calls in 2 sessions, grep|search 1, write_file
	// 1, not_in_catalog 1.
	tests := []struct {
		name string
		args []string
		want []telemetry.EffectStat
	}{
		{"annotations", []string{"--catalog", cat}, []telemetry.EffectStat{
			{Kind: "read", Tools: 2, External: 1, Calls: 4, Sessions: 2},
			{Kind: "evaluate", Tools: 0, External: 0, Calls: 0, Sessions: 0},
			{Kind: "mutate", Tools: 1, External: 0, Calls: 1, Sessions: 1},
			{Kind: "destructive", Tools: 1, External: 0, Calls: 0, Sessions: 0},
			{Kind: telemetry.NotInCatalog, Tools: 0, External: 0, Calls: 1, Sessions: 1},
		}},
		{"profiles.toml wins", []string{"--catalog", cat, "--profiles", gen}, []telemetry.EffectStat{
			{Kind: "read", Tools: 2, External: 1, Calls: 4, Sessions: 2},
			{Kind: "evaluate", Tools: 1, External: 0, Calls: 1, Sessions: 1},
			{Kind: "mutate", Tools: 0, External: 0, Calls: 0, Sessions: 0},
			{Kind: "destructive", Tools: 1, External: 0, Calls: 0, Sessions: 0},
			{Kind: telemetry.NotInCatalog, Tools: 0, External: 0, Calls: 1, Sessions: 1},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, stderr, code := runProfiler(t, append([]string{"stats", "--telemetry", dir, "--format", "json"}, tt.args...)...)
			if code != 0 {
				t.Fatal(stderr)
			}
			var st telemetry.Stats
			if err := json.Unmarshal([]byte(out), &st); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(st.Effects, tt.want) {
				t.Errorf("effects %+v\nwant %+v", st.Effects, tt.want)
			}
			table, _, _ := runProfiler(t, append([]string{"stats", "--telemetry", dir}, tt.args...)...)
			md, _, _ := runProfiler(t, append([]string{"stats", "--telemetry", dir, "--format", "markdown"}, tt.args...)...)
			if !strings.Contains(table, "external") || !strings.Contains(md, "| effect | tools | external | calls | sessions |") ||
				!strings.Contains(md, "| read | 2 | 1 | 4 | 2 |") || !strings.Contains(md, "| "+telemetry.NotInCatalog+" | - | - | 1 | 1 |") {
				t.Errorf("table or markdown lacks the breakdown:\n%s\n%s", table, md)
			}
		})
	}
	if out, _, _ := runProfiler(t, "stats", "--telemetry", dir, "--format", "markdown"); strings.Contains(out, "effect") {
		t.Errorf("breakdown without --catalog:\n%s", out)
	}
	if _, stderr, code := runProfiler(t, "stats", "--telemetry", dir, "--profiles", gen); code != 2 || !strings.Contains(stderr, "--profiles needs --catalog") {
		t.Errorf("--profiles alone: exit %d %s", code, stderr)
	}
	if _, stderr, code := runProfiler(t, "stats", "--telemetry", dir, "--catalog", filepath.Join(pdir, "missing.json")); code != 1 || !strings.Contains(stderr, "missing.json") {
		t.Errorf("missing catalog: exit %d %s", code, stderr)
	}
}
