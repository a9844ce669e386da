package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// groupedGenerated offers two groups in profile "grouped" over the
// everything-server's tool names: media (one tool inside core, one
// outside) and errors (inside core). core offers none.
const groupedGenerated = `version = 1
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
tools = ["test_error_handling", "test_simple_text"]
`

// groupedGateway serves groupedGenerated (with policy as profiles.toml)
// over the recorded everything catalog; opts.Upstream and opts.Profiles
// are filled in.
func groupedGateway(t *testing.T, policy string, opts Options) *Gateway {
	t.Helper()
	cat := everythingCatalog()
	opts.Upstream = NewCatalogUpstream(cat)
	opts.Profiles = writeProfiles(t, cat.Tools, groupedGenerated, "version = 1\n"+policy)
	return newGateway(t, opts)
}

// groupCeilingOptions: the grouped profiles under the ceiling core, where
// media (test_audio_content) lies beyond it. TestEveryDocumentedCodeIsProduced
// produces group_not_allowed with it.
func groupCeilingOptions(t *testing.T) Options {
	cat := everythingCatalog()
	return Options{Upstream: NewCatalogUpstream(cat), Profiles: writeProfiles(t, cat.Tools, groupedGenerated, "version = 1\n"), MaxProfile: "core"}
}

// changes counts the tools/list_changed notifications a client receives.
type changes struct{ ch chan struct{} }

func newChanges() *changes { return &changes{ch: make(chan struct{}, 16)} }

func (c *changes) options() *mcp.ClientOptions {
	return &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { c.ch <- struct{}{} }}
}

// wait fails the test when no notification arrives within 10 s (a bound
// on a hang, not a measured time).
func (c *changes) wait(t *testing.T) {
	t.Helper()
	select {
	case <-c.ch:
	case <-time.After(10 * time.Second):
		t.Fatal("no notifications/tools/list_changed reached the session")
	}
}

func (c *changes) count() int { return len(c.ch) }

// connectProtocol connects a client speaking protocol ("":
// legacyProtocol) to g's server for profile over an in-memory transport.
func connectProtocol(t *testing.T, g *Gateway, profile, protocol string, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	if protocol == "" {
		protocol = legacyProtocol
	}
	s, err := g.Server(profile)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "groups-test", Version: "0"}, opts).Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// enable calls enable_tools with args and returns the result.
func enable(t *testing.T, cs *mcp.ClientSession, args any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: profiles.EnableToolsName, Arguments: args})
	if err != nil {
		t.Fatalf("enable_tools %v: %v", args, err)
	}
	return res
}

func text(res *mcp.CallToolResult) string {
	var parts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			parts = append(parts, tc.Text)
		}
	}
	return strings.Join(parts, "\n")
}

// A profile offering groups lists enable_tools first, byte for byte the
// definition profiles.EnableToolsTool builds over its groups; a profile
// offering none lists no such tool, and calling it there is an unknown tool.
func TestEnableToolsListed(t *testing.T) {
	g := groupedGateway(t, "", Options{})
	res, err := connect(t, g, "grouped").ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	if want := []string{profiles.EnableToolsName, "test_simple_text"}; !slices.Equal(names, want) {
		t.Fatalf("grouped lists %v, want %v", names, want)
	}
	r := g.Profiles()
	want := profiles.EnableToolsTool([]profiles.Group{*r.Groups["media"], *r.Groups["errors"]})
	got, _ := json.Marshal(res.Tools[0])
	wantJSON, _ := json.Marshal(want)
	if string(got) != string(wantJSON) {
		t.Errorf("enable_tools served\n %s\nwant the priced definition\n %s", got, wantJSON)
	}
	if !strings.Contains(res.Tools[0].Description, "- media: audio and image content tools") {
		t.Errorf("description %q does not list media", res.Tools[0].Description)
	}

	core := connect(t, g, "core")
	if names := listedNames(t, core); slices.Contains(names, profiles.EnableToolsName) {
		t.Errorf("core (no groups) lists %v", names)
	}
	_, err = core.CallTool(context.Background(), profiles.EnableToolsRequest("media"))
	var werr *jsonrpc.Error
	if !errors.As(err, &werr) || werr.Code != jsonrpc.CodeInvalidParams {
		t.Errorf("enable_tools under core: %v, want unknown tool -32602", err)
	}
}

// One session switches media on: before, the group's tool is refused with
// tool_not_in_profile naming the group and the enable_tools call; the
// switch names the added tools, sends that session (and no other)
// tools/list_changed, and from then on it lists and may call them; a
// second session of the same profile is untouched. Enabling again is a
// no-op success without a notification. (A 2026-07-28 client is offered
// no groups: TestStdioSessionlessRules.)
func TestGroupSwitchIsPerSession(t *testing.T) {
	for _, protocol := range []string{"2025-11-25", "2025-06-18"} {
		t.Run(protocol, func(t *testing.T) {
			g := groupedGateway(t, "", Options{})
			aChanges, bChanges := newChanges(), newChanges()
			a := connectProtocol(t, g, "grouped", protocol, aChanges.options())
			b := connectProtocol(t, g, "grouped", protocol, bChanges.options())

			env := callEnvelope(t, a, "test_audio_content", nil)
			if env.Code != CodeToolNotInProfile || !strings.Contains(env.Message, `group "media"`) ||
				len(env.SuggestedActions) == 0 || !strings.Contains(env.SuggestedActions[0], `enable_tools with {"group": "media"}`) {
				t.Fatalf("before the switch: %+v, want tool_not_in_profile naming media and enable_tools first", env)
			}

			res := enable(t, a, map[string]any{"group": "media"})
			if res.IsError || !strings.Contains(text(res), "test_audio_content") || !strings.Contains(text(res), "test_image_content") {
				t.Fatalf("enable media: %+v (%s)", res, text(res))
			}
			aChanges.wait(t)
			want := []string{profiles.EnableToolsName, "test_simple_text", "test_audio_content", "test_image_content"}
			if got := listedNames(t, a); !slices.Equal(got, want) {
				t.Errorf("a after the switch lists %v, want %v", got, want)
			}
			if env := callEnvelope(t, a, "test_audio_content", nil); env.Code != CodeUpstreamUnavailable {
				t.Errorf("a calls test_audio_content: %+v, want it forwarded (the recorded catalog answers upstream_unavailable)", env)
			}

			if got := listedNames(t, b); !slices.Equal(got, []string{profiles.EnableToolsName, "test_simple_text"}) {
				t.Errorf("b lists %v: want its list unchanged", got)
			}
			if env := callEnvelope(t, b, "test_audio_content", nil); env.Code != CodeToolNotInProfile {
				t.Errorf("b calls test_audio_content: %+v, want tool_not_in_profile", env)
			}
			if n := bChanges.count(); n != 0 {
				t.Errorf("b received %d tools/list_changed, want none", n)
			}

			again := enable(t, a, map[string]any{"group": "media"})
			if again.IsError || !strings.Contains(text(again), "no tools added") {
				t.Errorf("enable media again: %+v (%s), want a no-op success", again, text(again))
			}
			listedNames(t, a) // a round trip after the no-op
			if n := aChanges.count(); n != 0 {
				t.Errorf("a received %d more tools/list_changed after a no-op", n)
			}
		})
	}
}

// The same over streamable HTTP, the transport where sessions share one
// server: the switching session alone is notified and re-lists.
func TestGroupSwitchOverHTTP(t *testing.T) {
	g := groupedGateway(t, "", Options{})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	conn := func(c *changes) *mcp.ClientSession {
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "groups-http", Version: "0"}, c.options()).
			Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: srv.URL + "/mcp/grouped", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	aChanges, bChanges := newChanges(), newChanges()
	a, b := conn(aChanges), conn(bChanges)
	if res := enable(t, a, map[string]any{"group": "errors"}); res.IsError {
		t.Fatalf("enable errors: %s", text(res))
	}
	aChanges.wait(t)
	if got := listedNames(t, a); !slices.Contains(got, "test_error_handling") {
		t.Errorf("a lists %v after switching errors on", got)
	}
	if got := listedNames(t, b); slices.Contains(got, "test_error_handling") || bChanges.count() != 0 {
		t.Errorf("b lists %v and got %d list_changed: want neither changed", got, bChanges.count())
	}
}

// enable_tools without a group, with a group that is not a string, or with
// a group the profile does not offer is invalid_arguments listing the
// offered groups, and switches nothing on; a group that exists in the file
// but is not offered by the profile counts as unknown.
func TestEnableToolsInvalidGroup(t *testing.T) {
	g := groupedGateway(t, "", Options{})
	cs := connect(t, g, "grouped")
	for _, args := range []any{nil, map[string]any{}, map[string]any{"group": 3}, map[string]any{"group": ""}, map[string]any{"group": "nope"}} {
		env := callEnvelope(t, cs, profiles.EnableToolsName, args)
		if env.Code != CodeInvalidArguments || env.Category != CategoryValidation || !strings.Contains(env.Message, "groups offered: media, errors") {
			t.Errorf("args %v: %+v, want invalid_arguments listing media, errors", args, env)
		}
	}
	if got := listedNames(t, cs); !slices.Equal(got, []string{profiles.EnableToolsName, "test_simple_text"}) {
		t.Errorf("after refused switches: %v", got)
	}
}

// Under the ceiling core, media (which would add test_audio_content) is
// refused whole with group_not_allowed and changes nothing; errors, within
// the ceiling, is switched on. A call to the audio tool is then a plain
// tool_not_in_profile, without an enable_tools suggestion.
func TestGroupCeiling(t *testing.T) {
	g := newGateway(t, groupCeilingOptions(t))
	c := newChanges()
	cs := connectProtocol(t, g, "grouped", "", c.options())
	env := callEnvelope(t, cs, profiles.EnableToolsName, map[string]any{"group": "media"})
	if env.Code != CodeGroupNotAllowed || env.Category != CategoryPolicy || env.Retryable ||
		!strings.Contains(env.Message, `"test_audio_content"`) || !strings.Contains(env.Message, `"core"`) ||
		!strings.Contains(strings.Join(env.SuggestedActions, "\n"), "errors") {
		t.Fatalf("media beyond the ceiling: %+v", env)
	}
	if got := listedNames(t, cs); !slices.Equal(got, []string{profiles.EnableToolsName, "test_simple_text"}) {
		t.Errorf("after the refusal: %v, want nothing switched on", got)
	}
	env = callEnvelope(t, cs, "test_image_content", nil)
	if env.Code != CodeToolNotInProfile || strings.Contains(env.Message, "enable_tools") {
		t.Errorf("test_image_content (only in media, refused by the ceiling): %+v, want tool_not_in_profile without enable_tools", env)
	}
	if res := enable(t, cs, map[string]any{"group": "errors"}); res.IsError {
		t.Fatalf("errors within the ceiling: %s", text(res))
	}
	c.wait(t)
	if got := listedNames(t, cs); !slices.Contains(got, "test_error_handling") {
		t.Errorf("after switching errors on: %v", got)
	}
}

// Destructive and read-only rules bound a group: a destructive tool is not
// switched on in a profile without allow_destructive (and calling it never
// suggests the group), and under --read-only only read tools are.
func TestGroupBoundedByEffects(t *testing.T) {
	const policy = `destructive = ["test_image_content"]

[[effect]]
tool = "test_audio_content"
kind = "read"
`
	tests := []struct {
		name     string
		opts     Options
		want     []string
		refused  string
		refusedC string
	}{
		{"destructive", Options{}, []string{profiles.EnableToolsName, "test_simple_text", "test_audio_content"}, "test_image_content", CodeToolNotInProfile},
		// Read-only: test_simple_text (mutate) leaves the base, image is destructive.
		{"read-only", Options{ReadOnly: true}, []string{profiles.EnableToolsName, "test_audio_content"}, "test_image_content", CodeReadOnly},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := groupedGateway(t, policy, tt.opts)
			cs := connect(t, g, "grouped")
			if env := callEnvelope(t, cs, tt.refused, nil); env.Code != tt.refusedC || strings.Contains(env.Message, "enable_tools") {
				t.Errorf("%s before: %+v, want %s without enable_tools", tt.refused, env, tt.refusedC)
			}
			res := enable(t, cs, map[string]any{"group": "media"})
			if res.IsError || strings.Contains(text(res), tt.refused) {
				t.Fatalf("enable media: %s", text(res))
			}
			if got := listedNames(t, cs); !slices.Equal(got, tt.want) {
				t.Errorf("lists %v, want %v", got, tt.want)
			}
			if env := callEnvelope(t, cs, tt.refused, nil); env.Code != tt.refusedC {
				t.Errorf("%s after: %+v, want %s", tt.refused, env, tt.refusedC)
			}
		})
	}
}

// A cursor minted before a switch stays valid: the listing is append-only
// (enable_tools, the profile's tools, then the switched-on groups' tools),
// so paging on from it returns the rest of the old list and then the new
// tools, and the pages joined hold the new listing once each.
func TestCursorAcrossSwitch(t *testing.T) {
	const generated = `version = 1
default = "wide"

[[profile]]
name = "wide"
tools = ["test_simple_text", "test_error_handling", "test_sampling", "test_elicitation"]
groups = ["media"]

[[group]]
name = "media"
description = "audio and image content tools"
tools = ["test_audio_content", "test_image_content"]
`
	cat := everythingCatalog()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: writeProfiles(t, cat.Tools, generated, "version = 1\n"), PageSize: 2})
	cs := connect(t, g, "wide")
	page := func(cursor string) ([]string, string) {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("cursor %q: %v", cursor, err)
		}
		var names []string
		for _, tool := range res.Tools {
			names = append(names, tool.Name)
		}
		return names, res.NextCursor
	}
	seen, next := page(StartCursor)
	if want := []string{profiles.EnableToolsName, "test_elicitation"}; !slices.Equal(seen, want) {
		t.Fatalf("first page %v, want %v", seen, want)
	}
	if res := enable(t, cs, map[string]any{"group": "media"}); res.IsError {
		t.Fatal(text(res))
	}
	for next != "" {
		var names []string
		names, next = page(next)
		seen = append(seen, names...)
	}
	want := listedNames(t, cs)
	if !slices.Equal(seen, want) {
		t.Errorf("pages across the switch %v, want the new listing %v once each", seen, want)
	}
	if !slices.Equal(want[len(want)-2:], []string{"test_audio_content", "test_image_content"}) {
		t.Errorf("listing %v: want the group's tools last", want)
	}
}

// The switch is recorded (Recorder.Switch and the session record), and the
// enable_tools calls as calls: ok for the switch, denied for a refusal.
func TestSwitchRecorded(t *testing.T) {
	rec, read := recorder(t)
	g := groupedGateway(t, "", Options{Recorder: rec})
	cs := connect(t, g, "grouped")
	enable(t, cs, map[string]any{"group": "nope"})
	enable(t, cs, map[string]any{"group": "media"})
	enable(t, cs, map[string]any{"group": "media"}) // no-op: no second switch
	cs.Close()
	g.Close()
	sessions, calls := read()
	if len(sessions) != 1 {
		t.Fatalf("%d sessions", len(sessions))
	}
	sw := sessions[0].Switches
	if len(sw) != 1 || sw[0].Group != "media" || sw[0].Time.IsZero() {
		t.Errorf("switches %+v, want one of media", sw)
	}
	var got []string
	for _, c := range calls {
		got = append(got, c.Tool+":"+string(c.Outcome))
	}
	want := []string{"enable_tools:" + string(telemetry.OutcomeDenied), "enable_tools:" + string(telemetry.OutcomeOK), "enable_tools:" + string(telemetry.OutcomeOK)}
	if !slices.Equal(got, want) {
		t.Errorf("calls %v, want %v", got, want)
	}
}

// BenchmarkGroups compares, on one gateway, a session of profile plain
// (four tools) with a session of profile grouped (two tools, and a group
// holding the other two, switched on): the same four tools listed and
// called, so the ratio is what serving them through a group costs.
func BenchmarkGroups(b *testing.B) {
	const generated = `version = 1
default = "plain"

[[profile]]
name = "plain"
tools = ["test_simple_text", "test_error_handling", "test_audio_content", "test_image_content"]

[[profile]]
name = "grouped"
tools = ["test_simple_text", "test_error_handling"]
groups = ["media"]

[[group]]
name = "media"
description = "audio and image content tools"
tools = ["test_audio_content", "test_image_content"]
`
	dir := b.TempDir()
	path := dir + "/profiles.generated.toml"
	if err := os.WriteFile(path, []byte(generated), 0o644); err != nil {
		b.Fatal(err)
	}
	set, err := profiles.Load(path)
	if err != nil {
		b.Fatal(err)
	}
	cat := everythingCatalog()
	r, err := set.Resolve(cat.Tools)
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(context.Background(), Options{Upstream: NewCatalogUpstream(cat), Profiles: r})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { g.Close() })
	conn := func(profile string) *mcp.ClientSession {
		s, _ := g.Server(profile)
		st, ct := mcp.NewInMemoryTransports()
		if _, err := s.Connect(context.Background(), st, nil); err != nil {
			b.Fatal(err)
		}
		return benchClient(b, ct)
	}
	plain, grouped := conn("plain"), conn("grouped")
	if res, err := grouped.CallTool(context.Background(), profiles.EnableToolsRequest("media")); err != nil || res.IsError {
		b.Fatalf("enable media: %v %+v", err, res)
	}
	for _, c := range []struct {
		name string
		cs   *mcp.ClientSession
	}{{"plain", plain}, {"grouped", grouped}} {
		b.Run("list/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.cs.ListTools(context.Background(), nil); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("call/"+c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := c.cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_audio_content"}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// When the profiles are resolved again (the upstream's tools changed), a
// session's switched-on groups are re-read: a group the profile no longer
// offers adds nothing, and a tool a group gained outside the ceiling is
// not added.
func TestSwitchedGroupsFollowTheCatalog(t *testing.T) {
	const before = `version = 1
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
description = "image"
tools = ["test_image_content"]

[[group]]
name = "errors"
description = "error handling"
tools = ["test_error_handling"]
`
	// media gains a tool beyond the ceiling; errors leaves the profile.
	after := strings.Replace(strings.Replace(before, `tools = ["test_image_content"]`, `tools = ["test_audio_content", "test_image_content"]`, 1),
		`groups = ["media", "errors"]`, `groups = ["media"]`, 1)
	cat := everythingCatalog()
	next := writeProfiles(t, cat.Tools, after, "version = 1\n")
	g := newGateway(t, Options{
		Upstream:   NewCatalogUpstream(cat),
		Profiles:   writeProfiles(t, cat.Tools, before, "version = 1\n"),
		MaxProfile: "core",
		Resolve:    func([]*mcp.Tool) (*profiles.Resolved, error) { return next, nil },
	})
	cs := connect(t, g, "grouped")
	for _, grp := range []string{"media", "errors"} {
		if res := enable(t, cs, map[string]any{"group": grp}); res.IsError {
			t.Fatalf("enable %s: %s", grp, text(res))
		}
	}
	want := []string{profiles.EnableToolsName, "test_simple_text", "test_image_content", "test_error_handling"}
	if got := listedNames(t, cs); !slices.Equal(got, want) {
		t.Fatalf("before the change: %v, want %v", got, want)
	}
	g.ToolsChanged(context.Background(), "test")
	want = []string{profiles.EnableToolsName, "test_simple_text", "test_image_content"}
	if got := listedNames(t, cs); !slices.Equal(got, want) {
		t.Errorf("after the change: %v, want %v (errors no longer offered, audio beyond the ceiling)", got, want)
	}
	for _, tool := range []string{"test_error_handling", "test_audio_content"} {
		if env := callEnvelope(t, cs, tool, nil); env.Code != CodeToolNotInProfile {
			t.Errorf("%s after the change: %+v, want tool_not_in_profile", tool, env)
		}
	}
}

// An upstream tool named enable_tools is never shadowed: a profile
// offering groups is then served without them (the upstream's tool is
// listed and forwarded), with a warning.
func TestUpstreamEnableToolsWins(t *testing.T) {
	cat := everythingCatalog()
	cat.Tools = append(cat.Tools, &mcp.Tool{Name: profiles.EnableToolsName, Description: "the upstream's own", InputSchema: map[string]any{"type": "object"}})
	var log syncLog
	g := newGateway(t, Options{
		Upstream: NewCatalogUpstream(cat),
		Profiles: writeProfiles(t, cat.Tools, strings.Replace(groupedGenerated, `tools = ["test_simple_text"]`, `tools = ["test_simple_text", "enable_tools"]`, 1), "version = 1\n"),
		Logger:   slog.New(slog.NewTextHandler(&log, nil)),
	})
	cs := connect(t, g, "grouped")
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var descs []string
	for _, tool := range res.Tools {
		descs = append(descs, tool.Name+": "+tool.Description)
	}
	if want := []string{"enable_tools: the upstream's own", "test_simple_text: recorded test_simple_text"}; !slices.Equal(descs, want) {
		t.Errorf("listed %q, want %q", descs, want)
	}
	if env := callEnvelope(t, cs, profiles.EnableToolsName, map[string]any{"group": "media"}); env.Code != CodeUpstreamUnavailable {
		t.Errorf("enable_tools: %+v, want it forwarded to the upstream", env)
	}
	if env := callEnvelope(t, cs, "test_audio_content", nil); env.Code != CodeToolNotInProfile || strings.Contains(env.Message, `group "`) {
		t.Errorf("test_audio_content: %+v, want tool_not_in_profile without a group", env)
	}
	if !strings.Contains(log.String(), "an upstream offers a tool named enable_tools") {
		t.Errorf("log %q: want the warning", log.String())
	}
}

// Which sessions are sent list_changed when they switch a group on,
// counted on the client's wire (a receiving middleware, so a client
// without a handler counts too): always, on the call's stream, whether or
// not the client handles it.
func TestListChangedRouting(t *testing.T) {
	tests := []struct {
		protocol string
		handler  bool
		want     int
	}{
		{"2025-11-25", false, 1},
		{"2025-11-25", true, 1},
		{"2025-06-18", false, 1},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("%s/handler=%v", tt.protocol, tt.handler), func(t *testing.T) {
			g := groupedGateway(t, "", Options{})
			s, err := g.Server("grouped")
			if err != nil {
				t.Fatal(err)
			}
			st, ct := mcp.NewInMemoryTransports()
			if _, err := s.Connect(context.Background(), st, nil); err != nil {
				t.Fatal(err)
			}
			var opts *mcp.ClientOptions
			if tt.handler {
				opts = &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) {}}
			}
			wire := make(chan struct{}, 8)
			client := mcp.NewClient(&mcp.Implementation{Name: "routing", Version: "0"}, opts)
			client.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
					if method == "notifications/tools/list_changed" {
						p, _ := req.GetParams().(*mcp.ToolListChangedParams)
						if _, stamped := p.GetMeta()[mcp.MetaKeySubscriptionID]; stamped {
							t.Errorf("list_changed _meta %v: a subscription id stamped on a session's notification", p.GetMeta())
						}
						wire <- struct{}{}
					}
					return next(ctx, method, req)
				}
			})
			cs, err := client.Connect(context.Background(), ct, &mcp.ClientSessionOptions{ProtocolVersion: tt.protocol})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { cs.Close() })
			if res := enable(t, cs, map[string]any{"group": "media"}); res.IsError {
				t.Fatal(text(res))
			}
			if tt.want > 0 {
				select {
				case <-wire:
				case <-time.After(10 * time.Second):
					t.Fatal("no tools/list_changed on the wire")
				}
			}
			listedNames(t, cs) // a round trip: anything sent before it has arrived
			if n := len(wire); n != 0 {
				t.Errorf("%d more tools/list_changed on the wire, want %d in all", n, tt.want)
			}
		})
	}
}
