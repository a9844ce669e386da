package main

import (
	"context"
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
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// groupsProfiles offers, in profile grouped, the groups media (audio inside
// standard only, image inside core) and errors (inside core).
const groupsProfiles = `version = 1
default = "grouped"

[[profile]]
name = "core"
tools = ["test_error_handling", "test_image_content", "test_simple_text"]

[[profile]]
name = "grouped"
tools = ["test_simple_text"]
groups = ["media", "errors"]

[[group]]
name = "media"
description = "audio and image content tools"
tools = ["test_audio_content", "test_image_content"]

[[group]]
name = "errors"
description = "error handling"
tools = ["test_error_handling"]
`

func writeGroupsProfiles(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "profiles.generated.toml")
	if err := os.WriteFile(path, []byte(groupsProfiles), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// listChanges counts the tools/list_changed notifications a client gets.
type listChanges chan struct{}

func (c listChanges) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c <- struct{}{} }}
}

// wait fails when no notification arrives within 10 s (a hang bound).
func (c listChanges) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed reached the client")
	}
}

// connectHTTPClient opens another client session on url.
func connectHTTPClient(t *testing.T, url string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-groups-test", Version: "1"}, opts).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// The built server with the real everything-server, over HTTP: of two
// sessions of profile grouped, one calls test_audio_content and gets
// tool_not_in_profile naming group media (never forwarded), switches media
// on, receives tools/list_changed, re-lists and sees the group's tools, and
// its call is then forwarded and answered with audio. The other session's
// list and refusal are unchanged and it gets no notification. The switch
// and the enable_tools call are in telemetry.
func TestGroupSwitchThroughServer(t *testing.T) {
	path := writeGroupsProfiles(t)
	s := start(t, overHTTP, "/mcp/grouped", legacyProtocol, "--profiles", path)
	aChanges, bChanges := make(listChanges, 8), make(listChanges, 8)
	a := connectHTTPClient(t, s.url, aChanges.options())
	b := connectHTTPClient(t, s.url, bChanges.options())
	ctx := context.Background()
	base := []string{profiles.EnableToolsName, "test_simple_text"}

	res, err := a.CallTool(ctx, &mcp.CallToolParams{Name: "test_audio_content"})
	if err != nil {
		t.Fatal(err)
	}
	env := envelope(t, res)
	if env.Code != gateway.CodeToolNotInProfile || !strings.Contains(env.Message, `group "media"`) ||
		!strings.Contains(env.SuggestedActions[0], `enable_tools with {"group": "media"}`) {
		t.Fatalf("before the switch: %+v, want tool_not_in_profile naming media, enable_tools first", env)
	}

	res, err = a.CallTool(ctx, profiles.EnableToolsRequest("media"))
	if err != nil || res.IsError {
		t.Fatalf("enable_tools media: %v %+v", err, res)
	}
	aChanges.wait(t)
	names, _ := listNames(t, a, "")
	if want := append(slices.Clone(base), "test_audio_content", "test_image_content"); !slices.Equal(names, want) {
		t.Errorf("after list_changed a re-lists %v, want %v", names, want)
	}
	res, err = a.CallTool(ctx, &mcp.CallToolParams{Name: "test_audio_content"})
	if err != nil || res.IsError || len(res.Content) == 0 {
		t.Fatalf("test_audio_content after the switch: %v %+v", err, res)
	}
	if _, ok := res.Content[0].(*mcp.AudioContent); !ok {
		t.Errorf("test_audio_content answered %T, want the upstream's audio", res.Content[0])
	}
	if got := s.upstreamCalls(t, "test_audio_content"); !slices.Equal(got, []string{"test_audio_content"}) {
		t.Errorf("upstream received %v, want only the call after the switch", got)
	}

	if names, _ := listNames(t, b, ""); !slices.Equal(names, base) {
		t.Errorf("the other session lists %v, want %v", names, base)
	}
	res, err = b.CallTool(ctx, &mcp.CallToolParams{Name: "test_audio_content"})
	if err != nil {
		t.Fatal(err)
	}
	if env := envelope(t, res); env.Code != gateway.CodeToolNotInProfile {
		t.Errorf("the other session's call: %+v, want tool_not_in_profile", env)
	}
	if len(bChanges) != 0 {
		t.Errorf("the other session got %d tools/list_changed, want none", len(bChanges))
	}

	a.Close()
	b.Close()
	if err := s.stop(); err != nil {
		t.Fatalf("server exit: %v\n%s", err, s.stderr)
	}
	sessions, calls, err := telemetry.ReadAll(ctx, []string{s.telemetry}, telemetry.Window{})
	if err != nil {
		t.Fatal(err)
	}
	var switched []string
	for _, sess := range sessions {
		for _, sw := range sess.Switches {
			switched = append(switched, sess.ID+" "+sw.Group)
		}
	}
	var enableCalls []telemetry.Call
	for _, c := range calls {
		if c.Tool == profiles.EnableToolsName {
			enableCalls = append(enableCalls, c)
		}
	}
	if len(switched) != 1 || !strings.HasSuffix(switched[0], " media") {
		t.Fatalf("switches recorded %v, want one of media", switched)
	}
	if len(enableCalls) != 1 || enableCalls[0].Outcome != telemetry.OutcomeOK || switched[0] != enableCalls[0].Session+" media" {
		t.Errorf("enable_tools calls recorded %+v, want one ok in the switching session (%s)", enableCalls, switched[0])
	}
}

// Over stdio (protocol 2025-11-25: a 2026-07-28 client is offered no
// groups) the switch reaches the go-sdk client too, which re-lists.
func TestGroupSwitchOverStdio(t *testing.T) {
	path := writeGroupsProfiles(t)
	dir := t.TempDir()
	cmd := newServerCmd(t, dir, "--profiles", path, "--profile", "grouped")
	changes := make(listChanges, 8)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-groups-test", Version: "1"}, changes.options()).
		Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	if v := cs.InitializeResult().ProtocolVersion; v != "2025-11-25" {
		t.Errorf("negotiated %s, want 2025-11-25", v)
	}
	res, err := cs.CallTool(ctx, profiles.EnableToolsRequest("errors"))
	if err != nil || res.IsError {
		t.Fatalf("enable_tools errors: %v %+v", err, res)
	}
	changes.wait(t)
	if names, _ := listNames(t, cs, ""); !slices.Contains(names, "test_error_handling") {
		t.Errorf("after list_changed: %v, want test_error_handling", names)
	}
}

// newServerCmd is the built server over stdio with the everything-server
// behind it, telemetry under dir.
func newServerCmd(t *testing.T, dir string, flags ...string) *exec.Cmd {
	t.Helper()
	args := append([]string{"--telemetry", filepath.Join(dir, "telemetry")}, flags...)
	args = append(args, upstreamArgs(filepath.Join(dir, "upstream.log"))...)
	cmd := exec.Command(bins.server, args...)
	cmd.Stderr = &syncbuf.Buffer{}
	return cmd
}

// Under the ceiling core the built server refuses media (its audio tool is
// outside core) with group_not_allowed, lists nothing new, and switches
// errors (inside core) on.
func TestGroupCeilingThroughServer(t *testing.T) {
	path := writeGroupsProfiles(t)
	s := start(t, overHTTP, "/mcp/grouped", legacyProtocol, "--profiles", path, "--max-profile", "core")
	ctx := context.Background()
	res, err := s.session.CallTool(ctx, profiles.EnableToolsRequest("media"))
	if err != nil {
		t.Fatal(err)
	}
	env := envelope(t, res)
	if env.Code != gateway.CodeGroupNotAllowed || env.Category != gateway.CategoryPolicy || !strings.Contains(env.Message, "test_audio_content") {
		t.Errorf("media beyond the ceiling: %+v, want group_not_allowed naming test_audio_content", env)
	}
	if names, _ := listNames(t, s.session, ""); !slices.Equal(names, []string{profiles.EnableToolsName, "test_simple_text"}) {
		t.Errorf("after the refusal: %v", names)
	}
	res, err = s.session.CallTool(ctx, profiles.EnableToolsRequest("errors"))
	if err != nil || res.IsError {
		t.Fatalf("errors within the ceiling: %v %+v", err, res)
	}
	if names, _ := listNames(t, s.session, ""); !slices.Contains(names, "test_error_handling") || slices.Contains(names, "test_audio_content") {
		t.Errorf("after switching errors on: %v", names)
	}
}
