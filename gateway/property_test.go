package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"

	"github.com/toolprof/toolprof/profiles"
)

// recordingFakeUpstream is a fake upstream: it offers a given catalog and
// records the name of every call that reaches it. The properties below are
// about the gateway's decision to forward, which needs no real tool; the
// real everything-server behind a tee log covers forwarding itself
// (cmd/server TestExcludedToolIsRefusedAndNeverForwarded).
type recordingFakeUpstream struct {
	tools []*mcp.Tool

	mu    sync.Mutex
	calls []string
	args  []json.RawMessage // each call's arguments as forwarded
}

func (u *recordingFakeUpstream) ListTools(context.Context) ([]*mcp.Tool, error) {
	return slices.Clone(u.tools), nil
}

func (u *recordingFakeUpstream) CallTool(_ context.Context, p *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	u.mu.Lock()
	u.calls = append(u.calls, p.Name)
	u.args = append(u.args, p.Arguments)
	u.mu.Unlock()
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ran " + p.Name}}}, nil
}

// forwardedArgs returns the arguments of every call that reached it.
func (u *recordingFakeUpstream) forwardedArgs() []json.RawMessage {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.args)
}

func (u *recordingFakeUpstream) forwarded() []string {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.calls)
}

// genTool draws a tool with random effect annotations.
func genTool(t *rapid.T, name string) *mcp.Tool {
	tool := &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}
	switch rapid.IntRange(0, 3).Draw(t, name+"/effect") {
	case 1:
		tool.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true}
	case 2:
		yes := true
		tool.Annotations = &mcp.ToolAnnotations{DestructiveHint: &yes}
	case 3:
		no := false
		tool.Annotations = &mcp.ToolAnnotations{DestructiveHint: &no}
	}
	return tool
}

// propertyCase is one random catalog, profiles file and gateway setting.
type propertyCase struct {
	tools    []*mcp.Tool
	file     *profiles.File
	readOnly bool
	names    []string // every name a call may use: offered, only in a profile, unknown
}

func drawCase(t *rapid.T) propertyCase {
	var c propertyCase
	n := rapid.IntRange(1, 12).Draw(t, "tools")
	for i := range n {
		c.tools = append(c.tools, genTool(t, fmt.Sprintf("tool_%d", i)))
	}
	// Names a profile may list that the upstream does not offer.
	ghosts := []string{"ghost_a", "ghost_b"}
	pool := append(slices.Collect(func(yield func(string) bool) {
		for _, tl := range c.tools {
			if !yield(tl.Name) {
				return
			}
		}
	}), ghosts...)
	c.file = &profiles.File{Version: profiles.Version}
	np := rapid.IntRange(1, 3).Draw(t, "profiles")
	for i := range np {
		p := profiles.Profile{Name: fmt.Sprintf("p%d", i)}
		for _, name := range pool {
			if rapid.Bool().Draw(t, p.Name+"/"+name) {
				p.Tools = append(p.Tools, name)
			}
		}
		c.file.Profiles = append(c.file.Profiles, p)
	}
	c.file.Default = c.file.Profiles[0].Name
	c.readOnly = rapid.Bool().Draw(t, "readOnly")
	c.names = append(pool, "never_offered", "", "tool_1 ", "TOOL_0")
	return c
}

// allowedByRule is the forwarding rule written out independently of the
// gateway and the resolver: a tool reaches the upstream when the upstream
// offers it, the profile is full or lists it and it is not destructive, and
// (read-only) its annotations say it only reads.
func (c propertyCase) allowedByRule(profile, name string) bool {
	var tool *mcp.Tool
	for _, tl := range c.tools {
		if tl.Name == name {
			tool = tl
		}
	}
	if tool == nil {
		return false
	}
	readOnly := tool.Annotations != nil && tool.Annotations.ReadOnlyHint
	destructive := !readOnly && tool.Annotations != nil && tool.Annotations.DestructiveHint != nil && *tool.Annotations.DestructiveHint
	if c.readOnly && !readOnly {
		return false
	}
	if profile == FullProfile {
		return true
	}
	for _, p := range c.file.Profiles {
		if p.Name == profile {
			return slices.Contains(p.Tools, name) && !destructive
		}
	}
	return false
}

// Over random catalogs, profiles and call sequences, exactly the calls the
// session's profile allows reach the upstream, in order: none outside it,
// every one inside it (given a JSON object, or no arguments).
func TestPropertyOnlyProfileCallsReachUpstream(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCase(t)
		up := &recordingFakeUpstream{tools: c.tools}
		set := &profiles.Set{File: c.file, Path: "random.toml"}
		resolved, err := set.Resolve(c.tools)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		g, err := New(context.Background(), Options{Upstream: up, Profiles: resolved, ReadOnly: c.readOnly})
		if err != nil {
			t.Fatalf("new gateway: %v", err)
		}
		defer g.Close()
		profile := rapid.SampledFrom(append(resolved.Names(), "")).Draw(t, "session profile")
		served := profile
		if served == "" {
			served = resolved.Default
		}
		cs := connectRapid(t, g, profile)
		defer cs.Close()

		var want []string
		calls := rapid.SliceOfN(rapid.SampledFrom(c.names), 0, 25).Draw(t, "calls")
		for i, name := range calls {
			args := rapid.SampledFrom([]string{"", `{}`, `{"a":1}`, `null`, `[1]`, `"s"`, `7`}).Draw(t, fmt.Sprintf("args %d", i))
			p := &mcp.CallToolParams{Name: name}
			if args != "" {
				p.Arguments = json.RawMessage(args)
			}
			res, err := cs.CallTool(context.Background(), p)
			validArgs := args == "" || args == "null" || args[0] == '{'
			forwardable := c.allowedByRule(served, name) && validArgs
			if forwardable {
				want = append(want, name)
				if err != nil || res.IsError {
					t.Fatalf("call %q (%s) in profile %q: %v %+v, want it run", name, args, served, err, res)
				}
				continue
			}
			// Refused: a JSON-RPC error (unknown tool) or an envelope.
			if err == nil && !res.IsError {
				t.Fatalf("call %q (%s) outside profile %q ran: %+v", name, args, served, res)
			}
			if err == nil {
				if env, ok := envelopeFrom(res); !ok || !slices.Contains(Codes(), env.Code) || env.Message == "" || env.Category == "" {
					t.Fatalf("call %q: malformed refusal %+v", name, res)
				}
			}
		}
		if got := up.forwarded(); !slices.Equal(got, want) {
			t.Fatalf("profile %q (read-only %v): upstream got %q, want %q", served, c.readOnly, got, want)
		}
	})
}

// connectRapid is connect for a rapid.T.
func connectRapid(t *rapid.T, g *Gateway, profile string) *mcp.ClientSession {
	s, err := g.Server(profile)
	if err != nil {
		t.Fatalf("server %q: %v", profile, err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "property", Version: "0"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// envelopeFrom reads the envelope of an error result, reporting whether the
// structured content and the JSON text agree.
func envelopeFrom(res *mcp.CallToolResult) (Envelope, bool) {
	var env, text Envelope
	b, err := json.Marshal(res.StructuredContent)
	if err != nil || json.Unmarshal(b, &env) != nil || len(res.Content) != 2 {
		return env, false
	}
	tc, ok := res.Content[1].(*mcp.TextContent)
	if !ok || json.Unmarshal([]byte(tc.Text), &text) != nil {
		return env, false
	}
	first, ok := res.Content[0].(*mcp.TextContent)
	return env, ok && first.Text == env.Message && text.Code == env.Code && text.Message == env.Message
}
