package demo_test

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/profiles"
)

// checkGroupedProfile checks what derive --groups added to the demo's file:
// one profile offering groups (lean, unless a derived profile holds
// exactly the chosen base), each group defined with tools outside that
// base; the report's held-out expected tokens per session below core's
// cost; and, served by the built gateway, the profile lists its base and
// enable_tools, whose call switches a group's tools on.
func checkGroupedProfile(t *testing.T, bin, out string, file *profiles.File) {
	var grouped []profiles.Profile
	var core *profiles.Profile
	for i, p := range file.Profiles {
		if len(p.Groups) > 0 {
			grouped = append(grouped, p)
		}
		if p.Name == "core" {
			core = &file.Profiles[i]
		}
	}
	if len(grouped) != 1 || core == nil {
		t.Fatalf("%d profiles offer groups, want one (and a core profile: %v)", len(grouped), core != nil)
	}
	p := grouped[0]
	if p.Name != groups.DefaultProfile && p.Name != "core" && p.Name != "standard" {
		t.Errorf("groups offered by %q, want %s (or the derived profile holding exactly the base)", p.Name, groups.DefaultProfile)
	}
	defined := map[string]profiles.Group{}
	for _, g := range file.Groups {
		defined[g.Name] = g
	}
	for _, name := range p.Groups {
		g, ok := defined[name]
		if !ok || len(g.Tools) == 0 || g.Description == "" {
			t.Fatalf("group %q offered by %s is not defined with tools and a description: %+v", name, p.Name, g)
		}
		for _, tool := range g.Tools {
			if slices.Contains(p.Tools, tool) {
				t.Errorf("group %s holds %s, already in %s's base", name, tool, p.Name)
			}
		}
	}

	var report groups.Result
	if err := json.Unmarshal([]byte(readFile(t, filepath.Join(out, "groups.json"))), &report); err != nil {
		t.Fatalf("groups.json: %v", err)
	}
	h := report.Holdout
	if h.Sessions != core.Measured.HoldoutSessions || h.MeanTokens <= 0 {
		t.Errorf("groups.json held-out part: %d sessions, %.1f tokens/session; want core's %d held-out sessions and a positive figure", h.Sessions, h.MeanTokens, core.Measured.HoldoutSessions)
	}
	if h.MeanTokens >= float64(core.Measured.TokensO200k) {
		t.Errorf("%s expects %.1f tokens per held-out session, not below core's %d", p.Name, h.MeanTokens, core.Measured.TokensO200k)
	}

	cs := connectBuiltServer(t, bin, out, p.Name)
	listed := listNames(t, cs)
	want := append(slices.Clone(p.Tools), profiles.EnableToolsName)
	slices.Sort(want)
	if !slices.Equal(listed, want) {
		t.Errorf("the gateway serving %s lists %v, want its base and %s: %v", p.Name, listed, profiles.EnableToolsName, want)
	}
	var enable *mcp.Tool
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tool.Name == profiles.EnableToolsName {
			enable = tool
		}
	}
	for _, name := range p.Groups {
		if line := "- " + name + ": " + defined[name].Description; enable == nil || !strings.Contains(enable.Description, line) {
			t.Errorf("%s's description lacks %q", profiles.EnableToolsName, line)
		}
	}
	first := defined[p.Groups[0]]
	res, err := cs.CallTool(context.Background(), profiles.EnableToolsRequest(first.Name))
	if err != nil || res.IsError {
		t.Fatalf("%s %s: %v %+v", profiles.EnableToolsName, first.Name, err, res)
	}
	after := listNames(t, cs)
	for _, tool := range first.Tools {
		if !slices.Contains(after, tool) {
			t.Errorf("after switching %s on, the session lacks its tool %s: %v", first.Name, tool, after)
		}
	}
}

// connectBuiltServer starts the built gateway over HTTP in front of the
// demo's upstreams with the demo's derived profiles (no telemetry kept)
// and connects a client to profile's endpoint; both stop with the test.
func connectBuiltServer(t *testing.T, bin, out, profile string) *mcp.ClientSession {
	t.Helper()
	abs := func(p string) string {
		a, err := filepath.Abs(p)
		if err != nil {
			t.Fatal(err)
		}
		return a
	}
	tmp := t.TempDir()
	cmd := exec.Command(filepath.Join(bin, "server"), "--http", "127.0.0.1:0", "--profiles", filepath.Join(out, "profiles.generated.toml"),
		"--telemetry", filepath.Join(tmp, "telemetry"), "--launch", "demo/servers.mcp.json")
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "TOOLPROF_DEMO_BIN="+abs(bin), "TOOLPROF_DEMO_NODE_BIN="+abs(filepath.Join("..", "e2e", "node_modules", ".bin")),
		"TOOLPROF_DEMO_WORKSPACE="+abs(filepath.Join(out, "workspace")), "TOOLPROF_DEMO_MEMORY="+filepath.Join(tmp, "memory.jsonl"))
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		at := regexp.MustCompile(` on (http://127\.0\.0\.1:\d+/mcp)$`)
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			if m := at.FindStringSubmatch(sc.Text()); m != nil {
				addr <- m[1]
				break
			}
		}
		io.Copy(io.Discard, stderr)
	}()
	t.Cleanup(func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	})
	var endpoint string
	select {
	case endpoint = <-addr:
	case <-time.After(30 * time.Second):
		t.Fatalf("the gateway printed no address within 30 s")
	}
	waitServing(t, strings.TrimSuffix(endpoint, "/mcp")+"/healthz")
	// Tool groups are switched per protocol session: 2025-11-25 (a
	// 2026-07-28 client is offered no enable_tools).
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "demo-test"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: endpoint + "/" + profile, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to %s/%s: %v", endpoint, profile, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// listNames lists the session's tools, sorted by name.
func listNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	var names []string
	for tool, err := range cs.Tools(context.Background(), nil) {
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, tool.Name)
	}
	slices.Sort(names)
	return names
}

// waitServing waits until the gateway's health says it is serving: every
// upstream connected, after the gateway listens, and its tools listed.
func waitServing(t *testing.T, healthz string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		var h struct {
			Upstream struct {
				State string `json:"state"`
			} `json:"upstream"`
		}
		resp, err := http.Get(healthz)
		if err == nil {
			err = json.NewDecoder(resp.Body).Decode(&h)
			resp.Body.Close()
		}
		if err == nil && h.Upstream.State == "serving" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: upstreams not serving within 30 s (state %q, %v)", healthz, h.Upstream.State, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
