package upstream

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
)

// TestRealNPMServers runs the pinned reference servers from e2e/ (installed
// by "make e2e-deps") behind one Set: TypeScript-SDK servers that negotiate
// an older protocol version than the Go SDK's latest.
func TestRealNPMServers(t *testing.T) {
	bin, err := filepath.Abs(filepath.Join("..", "e2e", "node_modules", ".bin"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(bin, "mcp-server-memory")); err != nil {
		t.Skipf("pinned npm servers not installed (run make e2e-deps): %v", err)
	}
	data := t.TempDir()
	if err := os.WriteFile(filepath.Join(data, "hello.txt"), []byte("hello from disk"), 0o644); err != nil {
		t.Fatal(err)
	}
	memory := filepath.Join(t.TempDir(), "memory.jsonl")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"fs":     map[string]any{"command": filepath.Join(bin, "mcp-server-filesystem"), "args": []string{data}},
		"memory": map[string]any{"command": filepath.Join(bin, "mcp-server-memory"), "env": map[string]string{"MEMORY_FILE_PATH": "${MEMORY}"}},
	}})
	s := startSet(t, string(doc), map[string]string{"MEMORY": memory}, SetOptions{RequireAll: true})
	ctx := context.Background()
	tools, err := s.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := toolNames(tools)
	for _, want := range []string{"fs__read_text_file", "memory__create_entities", "memory__read_graph"} {
		if !slices.Contains(names, want) {
			t.Errorf("tools %q lack %s", names, want)
		}
	}
	path, _ := json.Marshal(filepath.Join(data, "hello.txt"))
	res, err := call(ctx, s, "fs__read_text_file", `{"path": `+string(path)+`}`)
	if err != nil || text(t, res) != "hello from disk" {
		t.Errorf("read_text_file = %v, %v", res, err)
	}
	res, err = call(ctx, s, "memory__create_entities", `{"entities": [{"name": "toolprof", "entityType": "project", "observations": ["fronts MCP servers"]}]}`)
	if err != nil {
		t.Fatal(err)
	}
	// structuredContent arrives as the server sent it, matching its text.
	var fromText any
	if err := json.Unmarshal([]byte(text(t, res)), &fromText); err != nil {
		t.Fatal(err)
	}
	structured, _ := json.Marshal(res.StructuredContent)
	var fromStructured map[string]any
	json.Unmarshal(structured, &fromStructured)
	if !reflect.DeepEqual(fromStructured["entities"], fromText) {
		t.Errorf("structuredContent %s does not match the text %v", structured, fromText)
	}
	// The memory server wrote where its declared env told it to.
	if _, err := os.Stat(memory); err != nil {
		t.Errorf("memory file: %v", err)
	}
}
