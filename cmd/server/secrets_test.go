package main

import (
	"context"
	"encoding/json"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
)

// Markers planted where a secret could come from: argument values, a
// variable of the server's environment (which the -- CMD upstream
// inherits), the bearer token and the cursor key.
const (
	argMarker   = "ARG-MARKER-7f3e9a"
	envMarker   = "ENV-MARKER-c41d07"
	tokenMarker = "TOKEN-MARKER-88b2e1"
)

// No argument value or secret appears in any output of the gateway or of
// the profiler reading its telemetry: stderr, the telemetry files, the
// health JSON, the envelopes and errors the gateway itself answers with,
// and profiler export and stats. The calls take every path: served,
// upstream tool error, upstream protocol error, refused by profile, unknown
// tool, invalid arguments, timed out.
func TestNoSecretInAnyOutput(t *testing.T) {
	profiler := filepath.Join(t.TempDir(), "profiler")
	if err := testupstream.Build("github.com/toolprof/toolprof/cmd/profiler", profiler); err != nil {
		t.Fatal(err)
	}
	tokenFile := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(tokenFile, []byte(tokenMarker), 0o600); err != nil {
		t.Fatal(err)
	}
	base, s := startHTTPServer(t, []string{"TOOLPROF_TEST_SECRET=" + envMarker},
		"--profile", "standard", "--call-timeout", "30ms", "--auth-token-file", tokenFile)
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "secrets", Version: "1"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1, HTTPClient: &nethttp.Client{Transport: bearer{tokenMarker}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	calls := []struct {
		name string
		args any
		own  bool // the answer is the gateway's own, not the upstream's
	}{
		{"test_simple_text", map[string]any{"note": argMarker}, false},
		{"test_error_handling", map[string]any{"note": argMarker}, false},
		{"json_schema_2020_12_tool", map[string]any{"name": map[string]any{"nested": argMarker}}, false},
		{"test_sampling", map[string]any{"prompt": argMarker}, true},            // outside standard
		{"no_such_tool_" + argMarker[:3], map[string]any{"x": argMarker}, true}, // unknown
		{"test_simple_text", json.RawMessage(`["` + argMarker + `"]`), true},    // not an object
		{"test_tool_with_progress", map[string]any{"note": argMarker}, true},    // timed out
	}
	var answers []string
	for _, c := range calls {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: c.name, Arguments: c.args})
		if !c.own {
			continue
		}
		if err != nil {
			answers = append(answers, err.Error())
			continue
		}
		if !res.IsError {
			t.Errorf("%s: %+v, want the gateway to refuse it", c.name, res)
		}
		b, _ := json.Marshal(res)
		answers = append(answers, string(b))
	}
	health := getBody(t, base+"/healthz", tokenMarker)
	cs.Close()
	if err := s.stopHTTP(); err != nil {
		t.Fatal(err)
	}

	outputs := map[string]string{
		"server stderr": s.stderr.String(),
		"health JSON":   health,
		"answers":       strings.Join(answers, "\n"),
	}
	for _, args := range [][]string{
		{"export", "--telemetry", s.telemetry},
		{"stats", "--telemetry", s.telemetry},
		{"stats", "--telemetry", s.telemetry, "--format", "json"},
	} {
		out, err := exec.Command(profiler, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("profiler %q: %v\n%s", args, err, out)
		}
		outputs["profiler "+strings.Join(args[:1], " ")+" "+strings.Join(args[3:], " ")] = string(out)
	}
	for name, out := range outputs {
		if strings.HasPrefix(name, "profiler") && !strings.Contains(out, "test_error_handling") {
			t.Fatalf("%s shows no calls, so it checks nothing:\n%s", name, out)
		}
	}
	for _, marker := range []string{argMarker, envMarker, tokenMarker, cursorKeyHex} {
		for name, out := range outputs {
			if strings.Contains(out, marker) {
				t.Errorf("%s holds %q:\n%s", name, marker, out)
			}
		}
		assertNotStored(t, s.telemetry, marker)
	}
}

// getBody GETs u with a bearer token and returns the body.
func getBody(t *testing.T, u, token string) string {
	t.Helper()
	req, _ := nethttp.NewRequest(nethttp.MethodGet, u, nil)
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != nethttp.StatusOK {
		t.Fatalf("GET %s: %d %s", u, resp.StatusCode, b)
	}
	return string(b)
}
