// Package docscheck holds the tests that keep the README and
// docs/commands.md true to the commands they describe.
package docscheck

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/internal/golden"
	"github.com/toolprof/toolprof/internal/testupstream"
)

// root is the repository root, relative to this package.
const root = "../.."

// profilerCommands lists the profiler subcommands in the order
// docs/commands.md shows them.
var profilerCommands = []string{"import", "export", "stats", "report", "compact", "derive", "bench", "evaluate", "catalog", "check", "replay", "launch", "login", "doctor"}

type binaries struct{ server, profiler string }

func build(t *testing.T) binaries {
	t.Helper()
	dir := t.TempDir()
	b := binaries{server: filepath.Join(dir, "server"), profiler: filepath.Join(dir, "profiler")}
	for pkg, out := range map[string]string{"github.com/toolprof/toolprof/cmd/server": b.server, "github.com/toolprof/toolprof/cmd/profiler": b.profiler} {
		if err := testupstream.Build(pkg, out); err != nil {
			t.Fatal(err)
		}
	}
	return b
}

// help returns what "bin -h" (or "bin sub -h") prints.
func help(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, append(args, "-h")...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	out, _ := cmd.CombinedOutput() // -h exits 0 or 2 depending on the FlagSet; the text is what counts
	if len(out) == 0 {
		t.Fatalf("%s %v -h printed nothing", bin, args)
	}
	return string(out)
}

// TestCommandsDoc checks docs/commands.md against every command's help.
func TestCommandsDoc(t *testing.T) {
	b := build(t)
	var doc bytes.Buffer
	doc.WriteString("# Commands and flags\n\nGenerated from each command's `-h` by `go test ./internal/docscheck -run TestCommandsDoc -update`; do not edit by hand.\n")
	fmt.Fprintf(&doc, "\n## server\n\n```\n%s```\n", help(t, b.server))
	for _, c := range profilerCommands {
		fmt.Fprintf(&doc, "\n## profiler %s\n\n```\n%s```\n", c, help(t, b.profiler, c))
	}
	golden.Assert(t, filepath.Join(root, "docs", "commands.md"), doc.Bytes())
	// Every profiler command is documented: a new one must be added above.
	usage := help(t, b.profiler)
	for _, m := range regexp.MustCompile(`(?m)^  (\w+)\s{2,}`).FindAllStringSubmatch(usage, -1) {
		if !slices.Contains(profilerCommands, m[1]) {
			t.Errorf("profiler %s is not in docs/commands.md: add it to profilerCommands", m[1])
		}
	}
}

// TestReadmeFlags checks that every flag the README gives a command exists.
func TestReadmeFlags(t *testing.T) {
	b := build(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	cmdLine := regexp.MustCompile(`(?:bin/)?(server|profiler)((?: [^|\x60\n]*)?)`)
	flagRE := regexp.MustCompile(`(?:^|\s|\[|\()--([a-z][a-z0-9-]*)`)
	helps := map[string]string{}
	checked := 0
	for _, line := range strings.Split(string(readme), "\n") {
		for _, m := range cmdLine.FindAllStringSubmatch(line, -1) {
			args := m[2]
			bin, key, sub := b.server, "server", []string(nil)
			if m[1] == "profiler" {
				f := strings.Fields(args)
				if len(f) == 0 || !slices.Contains(profilerCommands, f[0]) {
					continue
				}
				bin, key, sub = b.profiler, "profiler "+f[0], f[:1]
			}
			// Stop at "--" alone: what follows is the upstream's command line.
			if i := strings.Index(args, " -- "); i >= 0 {
				args = args[:i]
			}
			h, ok := helps[key]
			if !ok {
				h = help(t, bin, sub...)
				helps[key] = h
			}
			for _, f := range flagRE.FindAllStringSubmatch(args, -1) {
				checked++
				if !regexp.MustCompile(`(?m)^\s+-` + regexp.QuoteMeta(f[1]) + `\b`).MatchString(h) {
					t.Errorf("README: %s has no flag --%s (line: %s)", key, f[1], strings.TrimSpace(line))
				}
			}
		}
	}
	if checked < 20 {
		t.Errorf("only %d flags found in the README's command lines: the pattern broke", checked)
	}
}

// TestReadmeClientConfig runs the client configuration the README gives for
// Claude Code and Claude Desktop: the command and arguments of its
// mcpServers entry, with /opt/toolprof replaced by a directory holding the
// built server and a launch document over the everything-server, as an MCP
// client would start them.
func TestReadmeClientConfig(t *testing.T) {
	b := build(t)
	readme, err := os.ReadFile(filepath.Join(root, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(readme), "<!-- readme-test: client-config -->")
	if !ok {
		t.Fatal("README has no client-config block")
	}
	_, block, _ := strings.Cut(after, "```json\n")
	block, _, _ = strings.Cut(block, "```")
	var cfg struct {
		MCPServers map[string]struct {
			Command string   `json:"command"`
			Args    []string `json:"args"`
		} `json:"mcpServers"`
	}
	if err := json.Unmarshal([]byte(block), &cfg); err != nil {
		t.Fatalf("README client config: %v", err)
	}
	entry, ok := cfg.MCPServers["toolprof"]
	if !ok {
		t.Fatal(`README client config has no "toolprof" server`)
	}

	dir := t.TempDir()
	if err := os.MkdirAll(filepath.Join(dir, "bin"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(b.server, filepath.Join(dir, "bin", "server")); err != nil {
		t.Fatal(err)
	}
	// The configuration names a profiles file, which must then exist: the
	// gateway's test profiles of the everything-server stand in for one.
	profiles, err := os.ReadFile(filepath.Join(root, "gateway", "testdata", "profiles.generated.toml"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles.generated.toml"), profiles, 0o644); err != nil {
		t.Fatal(err)
	}
	launch := fmt.Sprintf(`{"mcpServers": {"everything": {"command": %q}}}`, testupstream.EverythingServer(t))
	if err := os.WriteFile(filepath.Join(dir, "servers.mcp.json"), []byte(launch), 0o644); err != nil {
		t.Fatal(err)
	}
	subst := func(s string) string { return strings.ReplaceAll(s, "/opt/toolprof", dir) }
	args := make([]string, len(entry.Args))
	for i, a := range entry.Args {
		args[i] = subst(a)
	}
	cmd := exec.Command(subst(entry.Command), args...)
	cmd.Env = append(os.Environ(), "HOME="+t.TempDir())
	var stderr bytes.Buffer
	cmd.Stderr = &stderr

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := mcp.NewClient(&mcp.Implementation{Name: "readme", Version: "0"}, nil)
	cs, err := c.Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		t.Fatalf("connect: %v\nstderr:\n%s", err, stderr.String())
	}
	res, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if !slices.Contains(names, "test_simple_text") {
		t.Errorf("tools through the README's configuration: %q, want the everything-server's", names)
	}
	if err := cs.Close(); err != nil {
		t.Logf("close: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "telemetry")); err != nil {
		t.Errorf("the configuration's --telemetry directory was not created: %v", err)
	}
}
