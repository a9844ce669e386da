package upstream

import (
	"cmp"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/launch"
)

// TestRelativeCommand: a command with a relative path runs from the
// server's cwd when it has one, else from the directory of the launch
// file, whatever directory the gateway runs in; a command that cannot be
// run fails to start naming the file and line, the server and the key.
func TestRelativeCommand(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	script := "#!/bin/sh\nexec " + self + " \"$@\"\n"
	tests := []struct {
		name    string
		scripts []string    // executable scripts, relative to the launch file's directory
		mode    os.FileMode // of the scripts; 0: 0o755
		entry   map[string]any
		wantErr []string // "": the server starts
	}{
		{name: "relative to cwd", scripts: []string{"work/server.sh"}, entry: map[string]any{"command": "./server.sh", "cwd": "work"}},
		{name: "in a subdirectory of cwd", scripts: []string{"work/bin/server.sh"}, entry: map[string]any{"command": "bin/server.sh", "cwd": "work"}},
		{name: "relative to the launch file without cwd", scripts: []string{"server.sh"}, entry: map[string]any{"command": "./server.sh"}},
		{name: "cwd wins over the launch file", scripts: []string{"server.sh"}, entry: map[string]any{"command": "./server.sh", "cwd": "work"},
			wantErr: []string{".mcp.json:1", `server "h"`, `command "./server.sh"`, filepath.Join("work", "server.sh"), "no such file", "relative to the server's cwd"}},
		{name: "not executable", scripts: []string{"server.sh"}, mode: 0o644, entry: map[string]any{"command": "./server.sh"},
			wantErr: []string{".mcp.json:1", `server "h"`, `command "./server.sh"`, "permission denied"}},
		{name: "missing", entry: map[string]any{"command": "./missing.sh"},
			wantErr: []string{".mcp.json:1", `server "h"`, `command "./missing.sh"`, "no such file", "directory of the file that declares it"}},
		{name: "not on PATH", entry: map[string]any{"command": "toolprof-no-such-command"},
			wantErr: []string{".mcp.json:1", `server "h"`, `command "toolprof-no-such-command"`, "not found on PATH"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			os.MkdirAll(filepath.Join(dir, "work"), 0o755)
			for _, s := range tt.scripts {
				p := filepath.Join(dir, s)
				if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(p, []byte(script), cmp.Or(tt.mode, 0o755)); err != nil {
					t.Fatal(err)
				}
			}
			entry := map[string]any{"env": map[string]string{helperEnv: "1"}}
			for k, v := range tt.entry {
				entry[k] = v
			}
			data, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"h": entry}})
			file := filepath.Join(dir, ".mcp.json")
			f, err := launch.DecodeFile(file, data)
			if err != nil {
				t.Fatal(err)
			}
			doc := launch.Merge(f.Servers, nil)
			r, err := doc.Resolve(func(string) (string, bool) { return "", false })
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			s, err := StartSet(ctx, r, SetOptions{RequireAll: true})
			if s != nil {
				defer s.Close()
			}
			if tt.wantErr == nil {
				if err != nil {
					t.Fatalf("start: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("started; want an error with %q", tt.wantErr)
			}
			for _, w := range tt.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q: %v", w, err)
				}
			}
		})
	}
}
