package launch

import (
	"path/filepath"
	"strings"
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

// TestLookCommandNamesTheCommand: the error of a command that cannot be
// run names it as written, also for an entry built without a template
// (the server's -- CMD shorthand), and says where it was looked for.
func TestLookCommandNamesTheCommand(t *testing.T) {
	for _, tt := range []struct {
		name string
		srv  ResolvedServer
		want []string
	}{
		{"shorthand, bare name", ResolvedServer{Name: "upstream", Transport: Stdio, Command: "toolprof-no-such-command"},
			[]string{`server "upstream"`, `command "toolprof-no-such-command"`, "not found on PATH"}},
		{"shorthand, path", ResolvedServer{Name: "upstream", Transport: Stdio, Command: "./toolprof-no-such.sh"},
			[]string{`command "./toolprof-no-such.sh"`, "cannot run ./toolprof-no-such.sh", "no such file"}},
		{"templated", ResolvedServer{Name: "s", Transport: Stdio, Command: "/abs/x.sh", Template: Server{Command: "${D}/x.sh", Source: "a.mcp.json:3"}},
			[]string{"a.mcp.json:3", `command "${D}/x.sh"`, "cannot run /abs/x.sh"}},
	} {
		err := tt.srv.LookCommand()
		if err == nil {
			t.Errorf("%s: no error", tt.name)
			continue
		}
		for _, w := range tt.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error lacks %q: %v", tt.name, w, err)
			}
		}
	}
}
