package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// npmServer returns the path of an npm MCP server that e2e/node_modules
// holds (make e2e-deps installs the pinned ones), or skips the test.
func npmServer(t *testing.T, name string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "e2e", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("e2e/node_modules lacks %s (run make e2e-deps to install the pinned npm servers): %v", name, err)
	}
	return bin
}

// direct connects a client straight to the server command, without the
// gateway: what the server itself says.
func direct(t *testing.T, command string, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(command, args...)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to %s directly: %v", command, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectPath opens a client session on path (e.g. "/mcp/NAME").
func (l *launched) connectPath(t *testing.T, path string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.base + path, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v\nstderr:\n%s", path, err, l.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// untilTerm are sh arguments running command, stdin kept, until SIGTERM,
// which it takes as a clean exit. The npm everything-server keeps running
// once its stdin closes (its timers hold node up), so the gateway
// terminates it on shutdown, and an exit by signal would fail the
// gateway's own exit status, which these tests do not examine.
func untilTerm(command string) []string {
	return []string{"-c", `exec 3<&0; "$0" <&3 3<&- & child=$!; trap 'kill $child; exit 0' TERM; wait $child`, command}
}

// writeProfilesFiles writes a generated profiles file and profiles.toml
// beside it, and returns the generated file's path.
func writeProfilesFiles(t *testing.T, generated, policy string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(path, []byte(generated), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles.toml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRealUpstreamInstructions: the npm everything-server's own
// instructions (1,579 bytes) reach the client through the gateway after the
// profile's, under a heading naming the server; profiles.toml
// upstream_instructions drops or replaces them.
func TestRealUpstreamInstructions(t *testing.T) {
	everything := npmServer(t, "mcp-server-everything")
	sent := direct(t, everything).InitializeResult().Instructions
	if len(sent) < 1000 {
		t.Fatalf("the everything-server sent %d bytes of instructions, want its instructions.md", len(sent))
	}
	profilesPath := writeProfilesFiles(t, `version = 1
default = "keep"

[[profile]]
name = "keep"
tools = ["echo"]
instructions = "Keep profile."

[[profile]]
name = "dropped"
tools = ["echo"]
instructions = "Dropped profile."

[[profile]]
name = "replaced"
tools = ["echo"]
`, `version = 1

[[profile]]
name = "dropped"
upstream_instructions = "drop"

[[profile]]
name = "replaced"
[profile.upstream_instructions]
everything = "Call echo to test."
`)
	file := writeLaunch(t, map[string]any{"everything": map[string]any{"command": "sh", "args": untilTerm(everything)}})
	l := startLaunch(t, file, nil, "--profiles", profilesPath)
	heading := "## Instructions of MCP server \"everything\"\n\n"
	cases := []struct{ path, want string }{
		{"/mcp", "Keep profile.\n\n" + heading + strings.TrimRight(sent, " \t\r\n")},
		{"/mcp/dropped", "Dropped profile."},
		{"/mcp/replaced", heading + "Call echo to test."},
	}
	for _, c := range cases {
		if got := l.connectPath(t, c.path).InitializeResult().Instructions; got != c.want {
			t.Errorf("%s: instructions (%d bytes)\n%.300q\nwant (%d bytes)\n%.300q", c.path, len(got), got, len(c.want), c.want)
		}
	}
}
