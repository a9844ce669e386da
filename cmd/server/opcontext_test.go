package main

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/opcontext"
)

// sidecar writes an operating-context file and returns its path and the
// environment that points the server at it.
func sidecar(t *testing.T, content string) (string, []string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "operating-context.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p, []string{opcontext.EnvPath + "=" + p}
}

func writeSidecar(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
}

// autoSidecar configures the registry on json_schema_2020_12_tool's "name"
// argument, which the everything-server echoes (it has no project_id tool),
// and maps the test client to acme-app.
const autoSidecar = `version = 1
context_revision = "srv-1"
[instructions]
summary = "Summary one."
[registry]
argument = "name"
project_ids = ["acme-app"]
enforce = "reject"
[defaults]
"toolprof-test" = "acme-app"
`

// An @auto call through the built server reaches the real everything-server
// with the resolved value (the tee log shows the bytes it received), and
// the result echoes it; a write naming an unregistered id is refused with
// operating_context_rejected and never reaches the upstream.
func TestAutoThroughServer(t *testing.T) {
	_, env := sidecar(t, autoSidecar)
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := startEnv(t, m, "/mcp/standard", "", env, "--profile", "standard")
			ctx := context.Background()
			res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "json_schema_2020_12_tool",
				Arguments: map[string]any{"name": "@auto", "contactMethod": "email", "email": "a@example.com"}})
			if err != nil || res.IsError {
				t.Fatalf("@auto call: %+v %v", res, err)
			}
			if got := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(got, `"name":"acme-app"`) {
				t.Errorf("upstream echoed %q, want the resolved name", got)
			}
			if res.Meta[opcontext.MetaResolved] != "acme-app" || res.Meta[opcontext.MetaRevision] != "srv-1" {
				t.Errorf("result _meta %v, want the echo", res.Meta)
			}
			refused, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "json_schema_2020_12_tool",
				Arguments: map[string]any{"name": "other-app", "contactMethod": "email", "email": "a@example.com"}})
			if err != nil {
				t.Fatal(err)
			}
			if env := envelope(t, refused); env.Code != gateway.CodeOperatingContextRejected {
				t.Errorf("unregistered write: %+v", env)
			}
			// Calls reach the upstream in order: the one after the refusal
			// being logged means the refused one would be too.
			if _, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
				t.Fatal(err)
			}
			log := s.upstreamLog(t, func(l string) bool { return strings.Contains(l, "test_simple_text") })
			if !strings.Contains(log, `"name":"acme-app"`) || strings.Contains(log, "@auto") || strings.Contains(log, "other-app") {
				t.Errorf("upstream received:\n%s\nwant the resolved value, no @auto, no refused call", log)
			}
		})
	}
}

// A write that spells the registry's argument in another case, or repeats
// it with an unregistered value first, is refused over the wire before the
// everything-server (a Go server that matches keys case-insensitively) can
// receive the unregistered value.
func TestAmbiguousKeyThroughServer(t *testing.T) {
	_, env := sidecar(t, autoSidecar)
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := startEnv(t, m, "/mcp/standard", "", env, "--profile", "standard")
			ctx := context.Background()
			for _, args := range []string{
				`{"Name":"other-app","contactMethod":"email","email":"a@example.com"}`,
				`{"name":"other-app","name":"acme-app","contactMethod":"email","email":"a@example.com"}`,
			} {
				res, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "json_schema_2020_12_tool", Arguments: json.RawMessage(args)})
				if err != nil {
					t.Fatalf("%s: %v", args, err)
				}
				if env := envelope(t, res); env.Code != gateway.CodeOperatingContextRejected || !strings.Contains(env.Message, `"name"`) {
					t.Errorf("%s: %+v, want %s naming the key", args, env, gateway.CodeOperatingContextRejected)
				}
			}
			if _, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
				t.Fatal(err)
			}
			log := s.upstreamLog(t, func(l string) bool { return strings.Contains(l, "test_simple_text") })
			if !strings.Contains(log, "test_simple_text") || strings.Contains(log, "other-app") {
				t.Errorf("upstream received:\n%s\nwant no refused call", log)
			}
		})
	}
}

// An edit to the sidecar reaches a new HTTP session's instructions without
// a restart (the design's bug-252 is the behaviour beaten here).
func TestSidecarEditReachesNewHTTPSession(t *testing.T) {
	p, env := sidecar(t, autoSidecar)
	s := startEnv(t, overHTTP, "/mcp", "", env)
	if got := s.session.InitializeResult().Instructions; !strings.HasSuffix(got, "Summary one.") ||
		!strings.HasPrefix(got, instructions["core"][:len(instructions["core"])-1]) {
		t.Fatalf("first session instructions %q", got)
	}
	writeSidecar(t, p, strings.Replace(autoSidecar, "Summary one.", "Summary two, edited.", 1))
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	if got := cs.InitializeResult().Instructions; !strings.HasSuffix(got, "Summary two, edited.") {
		t.Errorf("new session after the edit: instructions %q", got)
	}
}

// On stdio too: the server reads the sidecar at start (here an invalid one,
// whose warning shows it was read), the operator fixes it, and the session
// that then starts is told the new summary and offered the tool.
func TestSidecarEditReachesNewStdioSession(t *testing.T) {
	p, env := sidecar(t, "version = 1\nbogus = true\n")
	dir := t.TempDir()
	args := append([]string{"--profiles", profilesFile, "--telemetry", filepath.Join(dir, "telemetry")}, upstreamArgs(filepath.Join(dir, "log"))...)
	cmd := exec.Command(bins.server, args...)
	cmd.Env = append(os.Environ(), env...)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	stderrPipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	warned := make(chan struct{})
	copied := make(chan struct{})
	stderr := &syncbuf.Buffer{}
	defer func() {
		stdin.Close()
		<-copied // Wait only after the last read from the pipe
		cmd.Wait()
	}()
	go func() {
		defer close(copied)
		sc := bufio.NewScanner(stderrPipe)
		once := false
		for sc.Scan() {
			stderr.Write([]byte(sc.Text() + "\n"))
			if !once && strings.Contains(sc.Text(), "operating context file is invalid") {
				once = true
				close(warned)
			}
		}
		io.Copy(io.Discard, stderrPipe)
	}()
	select {
	case <-warned:
	case <-time.After(20 * time.Second):
		t.Fatalf("no start-up warning about the invalid sidecar:\n%s", stderr)
	}
	writeSidecar(t, p, autoSidecar)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
		Connect(ctx, &mcp.IOTransport{Reader: stdout, Writer: stdin}, nil)
	if err != nil {
		t.Fatalf("connect: %v\n%s", err, stderr)
	}
	defer cs.Close()
	if got := cs.InitializeResult().Instructions; !strings.HasSuffix(got, "Summary one.") {
		t.Errorf("instructions %q, want the fixed file's summary", got)
	}
	if names, _ := listNames(t, cs, ""); !slices.Contains(names, opcontext.ToolName) {
		t.Errorf("listed %v, want %s once the file is valid", names, opcontext.ToolName)
	}
}

// get_operating_context is listed in every profile while the context is
// active, absent while the file is invalid (with the finding in /healthz)
// and while it is absent (dormant); the server never restarts.
func TestContextToolEveryProfile(t *testing.T) {
	p, env := sidecar(t, autoSidecar)
	s := startEnv(t, overHTTP, "/mcp", "", env)
	base := strings.TrimSuffix(s.url, "/mcp")
	listedIn := func(profile string) bool {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
			Connect(ctx, &mcp.StreamableClientTransport{Endpoint: base + "/mcp/" + profile, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		defer cs.Close()
		names, _ := listNames(t, cs, "")
		return slices.Contains(names, opcontext.ToolName)
	}
	health := func() gateway.Health {
		t.Helper()
		var h gateway.Health
		if err := json.Unmarshal([]byte(httpGet(t, base+"/healthz")), &h); err != nil {
			t.Fatal(err)
		}
		return h
	}
	profiles := []string{"core", "standard", "full"}
	steps := []struct {
		name     string
		write    func()
		listed   bool
		state    opcontext.State
		findings int
	}{
		{"active", func() {}, true, opcontext.StateActive, 0},
		{"invalid", func() { writeSidecar(t, p, "version = 1\nbogus = true\n") }, false, opcontext.StateInvalid, 1},
		{"dormant", func() { os.Remove(p) }, false, opcontext.StateDormant, 0},
		{"active again", func() { writeSidecar(t, p, autoSidecar) }, true, opcontext.StateActive, 0},
	}
	for _, st := range steps {
		st.write()
		for _, profile := range profiles {
			if got := listedIn(profile); got != st.listed {
				t.Errorf("%s: %s lists %s = %v, want %v", st.name, profile, opcontext.ToolName, got, st.listed)
			}
		}
		h := health()
		if h.OperatingContext == nil || h.OperatingContext.State != st.state || len(h.OperatingContext.Findings) != st.findings {
			t.Errorf("%s: /healthz operating_context %+v", st.name, h.OperatingContext)
		}
	}
}

// An invalid sidecar at start: the server starts with the feature off, the
// warning is logged, and `server --health` reports the parse finding.
func TestInvalidSidecarAtStart(t *testing.T) {
	_, env := sidecar(t, "version = 1\nbogus = true\n")
	stdout, stderr, err := runHealth(t, env)
	if err != nil {
		t.Fatalf("--health: %v\n%s", err, stderr)
	}
	if !strings.Contains(stderr, "operating context file is invalid") {
		t.Errorf("no warning at start:\n%s", stderr)
	}
	var h gateway.Health
	if err := json.Unmarshal([]byte(stdout), &h); err != nil {
		t.Fatal(err)
	}
	oc := h.OperatingContext
	if oc == nil || oc.State != opcontext.StateInvalid || len(oc.Findings) != 1 || oc.Findings[0].Check != "parse" ||
		oc.Findings[0].Severity != "warn" || !strings.Contains(oc.Findings[0].Message, "bogus") {
		t.Fatalf("health operating_context %+v", oc)
	}
	// And it serves: the feature is off, the profile's instructions alone.
	s := startEnv(t, overStdio, "", "", env)
	if got := s.session.InitializeResult().Instructions; got != instructions["core"] {
		t.Errorf("instructions %q, want the profile's alone", got)
	}
	if names, _ := listNames(t, s.session, ""); slices.Contains(names, opcontext.ToolName) {
		t.Errorf("listed %s while the file is invalid", opcontext.ToolName)
	}
}

// A summary over opcontext.SizeLimit characters is an info finding in
// `server --health`: the feature stays active (the summary is served) and
// the parse check stays quiet.
func TestOversizedSidecarHealth(t *testing.T) {
	for _, tt := range []struct {
		name     string
		chars    int
		findings int
	}{
		{"at the limit", opcontext.SizeLimit, 0},
		{"over the limit", opcontext.SizeLimit + 1, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, env := sidecar(t, "version = 1\n[instructions]\nsummary = \""+strings.Repeat("s", tt.chars)+"\"\n")
			stdout, stderr, err := runHealth(t, env)
			if err != nil {
				t.Fatalf("--health: %v\n%s", err, stderr)
			}
			var h gateway.Health
			if err := json.Unmarshal([]byte(stdout), &h); err != nil {
				t.Fatal(err)
			}
			oc := h.OperatingContext
			if oc == nil || oc.State != opcontext.StateActive || len(oc.Findings) != tt.findings {
				t.Fatalf("health operating_context %+v, want active with %d findings", oc, tt.findings)
			}
			if tt.findings == 1 && (oc.Findings[0].Check != "size" || oc.Findings[0].Severity != "info" ||
				!strings.Contains(oc.Findings[0].Message, "3001")) {
				t.Errorf("finding %+v, want size/info naming 3001 characters", oc.Findings[0])
			}
		})
	}
}
