package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
)

// effectPolicy corrects the everything-server, which annotates none of its
// tools (so all are mutate): one tool is declared read, one destructive.
const effectPolicy = `version = 1
destructive = ["test_image_content"]

[[effect]]
tool = "test_simple_text"
kind = "read"
`

// profilesWithPolicy copies the test profiles file into a directory with
// policy as profiles.toml beside it and returns the copy's path.
func profilesWithPolicy(t *testing.T, policy string) string {
	t.Helper()
	dir := t.TempDir()
	b, err := os.ReadFile(profilesFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles.toml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// envelope decodes a result's structuredContent as the gateway's envelope.
func envelope(t *testing.T, res *mcp.CallToolResult) gateway.Envelope {
	t.Helper()
	var env gateway.Envelope
	b, _ := json.Marshal(res.StructuredContent)
	if err := json.Unmarshal(b, &env); err != nil || !res.IsError {
		t.Fatalf("result %+v is not an envelope: %v", res, err)
	}
	return env
}

// Under --read-only the built server lists only the read tool, refuses a
// mutating and a destructive tool with read_only before the upstream sees
// them (the tee log holds only the read tool's call), and forwards the
// read tool. The listed tools carry their effect in _meta.
func TestReadOnlyServer(t *testing.T) {
	path := profilesWithPolicy(t, effectPolicy)
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp/full", "", "--profiles", path, "--profile", "full", "--read-only")
			res, err := s.session.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Tools) != 1 || res.Tools[0].Name != "test_simple_text" ||
				res.Tools[0].Meta[gateway.MetaEffect] != "read" {
				t.Fatalf("read-only lists %+v, want only test_simple_text with effect read", res.Tools)
			}
			for tool, kind := range map[string]string{"test_error_handling": "mutate", "test_image_content": "destructive"} {
				res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: tool})
				if err != nil {
					t.Fatal(err)
				}
				env := envelope(t, res)
				if env.Code != gateway.CodeReadOnly || env.Category != gateway.CategoryPolicy ||
					!strings.Contains(env.Message, `"`+tool+`" is `+kind) || res.Content[0].(*mcp.TextContent).Text != env.Message {
					t.Errorf("%s: %+v, want read_only naming %s", tool, env, kind)
				}
			}
			res2, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"})
			if err != nil || res2.IsError {
				t.Fatalf("read tool: %+v %v", res2, err)
			}
			if got := s.upstreamCalls(t, "test_simple_text"); !slices.Equal(got, []string{"test_simple_text"}) {
				t.Errorf("upstream received calls %v, want only [test_simple_text]", got)
			}
		})
	}
}

// Without --read-only the same tools carry their kinds in _meta and the
// mutating tool is forwarded.
func TestEffectMetaServed(t *testing.T) {
	s := start(t, overStdio, "", "", "--profiles", profilesWithPolicy(t, effectPolicy), "--profile", "full")
	res, err := s.session.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]any{}
	for _, tool := range res.Tools {
		kinds[tool.Name] = tool.Meta[gateway.MetaEffect]
	}
	want := map[string]any{"test_simple_text": "read", "test_image_content": "destructive", "test_error_handling": "mutate"}
	for name, k := range want {
		if kinds[name] != k {
			t.Errorf("%s: effect %v, want %v", name, kinds[name], k)
		}
	}
	if r, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_error_handling"}); err != nil || r.StructuredContent != nil {
		t.Fatalf("mutating tool not forwarded: %+v %v", r, err)
	}
	if got := s.upstreamCalls(t, "test_error_handling"); !slices.Equal(got, []string{"test_error_handling"}) {
		t.Errorf("upstream calls %v", got)
	}
}

// runHealth runs the built server with --health and flags, and returns its
// stdout, stderr and exit error.
func runHealth(t *testing.T, env []string, flags ...string) (string, string, error) {
	t.Helper()
	args := append([]string{"--profiles", profilesFile}, flags...)
	args = append(append(args, "--health"), upstreamArgs(filepath.Join(t.TempDir(), "log"))...)
	cmd := exec.Command(bins.server, args...)
	cmd.Env = append(os.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// The handshake budget's arms: a budget equal to the measured figure
// starts (headroom 0 logged), one below it refuses to start with exit 1
// naming the figure, the budget and the largest tools; likewise in bytes.
func TestHandshakeBudget(t *testing.T) {
	// Measure: a generous budget starts and logs the figures.
	_, stderr, err := runHealth(t, nil, "--profile", "standard", "--max-handshake-tokens", "1000000", "--max-handshake-bytes", "100000000")
	if err != nil {
		t.Fatalf("within budget: %v\n%s", err, stderr)
	}
	fig := regexp.MustCompile(`handshake of profile "standard" costs (\d+) (o200k_base tokens in the model measure \(anthropic; (\d+) on the wire\)|bytes) of a budget of (\d+) \((--max-handshake-\w+)\): headroom (\d+)`)
	used := map[string]int{}
	for _, m := range fig.FindAllStringSubmatch(stderr, -1) {
		n, _ := strconv.Atoi(m[1])
		budget, _ := strconv.Atoi(m[4])
		headroom, _ := strconv.Atoi(m[6])
		if budget-n != headroom {
			t.Errorf("headroom %d, want %d - %d", headroom, budget, n)
		}
		if wire, _ := strconv.Atoi(m[3]); m[3] != "" && n >= wire {
			t.Errorf("tokens budget priced %d, not below the wire's %d: want the model measure", n, wire)
		}
		used[m[5]] = n
	}
	if len(used) != 2 || used["--max-handshake-tokens"] == 0 || used["--max-handshake-bytes"] <= used["--max-handshake-tokens"] {
		t.Fatalf("figures %v from stderr:\n%s", used, stderr)
	}
	for flag, n := range used {
		t.Run(flag, func(t *testing.T) {
			_, stderr, err := runHealth(t, nil, "--profile", "standard", flag, strconv.Itoa(n))
			if err != nil || !strings.Contains(stderr, "headroom 0") {
				t.Errorf("budget = figure: %v, want start with headroom 0\n%s", err, stderr)
			}
			_, stderr, err = runHealth(t, nil, "--profile", "standard", flag, strconv.Itoa(n-1))
			var ee *exec.ExitError
			if !errors.As(err, &ee) || ee.ExitCode() != 1 {
				t.Fatalf("budget below figure: %v, want exit 1\n%s", err, stderr)
			}
			want := []string{
				`handshake of profile "standard"`, strconv.Itoa(n), "1 over the budget of " + strconv.Itoa(n-1), flag,
				"largest tools by o200k_base tokens: json_schema_2020_12_tool (",
			}
			for _, w := range want {
				if !strings.Contains(stderr, w) {
					t.Errorf("refusal does not say %q:\n%s", w, stderr)
				}
			}
		})
	}
	// No budget: nothing measured, nothing logged.
	if _, stderr, err := runHealth(t, nil); err != nil || strings.Contains(stderr, "handshake") {
		t.Errorf("no budget: %v\n%s", err, stderr)
	}
}
