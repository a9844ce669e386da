package launch

import (
	"path/filepath"
	"testing"
)

// TestResolveCommand: a relative command path is made absolute from the
// server's cwd, else from the declaring file's directory; a bare name and
// an absolute path are left as written.
func TestResolveCommand(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, ".mcp.json")
	tests := []struct {
		entry, want string
	}{
		{`{"command": "./server.sh"}`, filepath.Join(dir, "server.sh")},
		{`{"command": "bin/server.sh", "cwd": "work"}`, filepath.Join(dir, "work", "bin", "server.sh")},
		{`{"command": "../server.sh", "cwd": "/srv/mcp/work"}`, "/srv/mcp/server.sh"},
		{`{"command": "/usr/bin/env", "cwd": "work"}`, "/usr/bin/env"},
		{`{"command": "npx", "cwd": "work"}`, "npx"},
		{`{"command": "${TOOL}/server.sh"}`, filepath.Join(dir, "tools", "server.sh")},
	}
	for _, tt := range tests {
		f, err := DecodeFile(file, []byte(`{"mcpServers": {"s": `+tt.entry+`}}`))
		if err != nil {
			t.Fatal(err)
		}
		doc := Merge(f.Servers, nil)
		r, err := doc.Resolve(func(string) (string, bool) { return "tools", true })
		if err != nil {
			t.Fatal(err)
		}
		if got := r.Servers[0].Command; got != tt.want {
			t.Errorf("%s: command %q, want %q", tt.entry, got, tt.want)
		}
	}
}
