package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/opcontext"
)

// contextSidecar writes an operating-context file and returns a Source on
// it (the env is injected; the real home is never read).
func contextSidecar(t *testing.T, content string) (*opcontext.Source, string) {
	t.Helper()
	p := filepath.Join(t.TempDir(), "operating-context.toml")
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) (string, bool) {
		if k == opcontext.EnvPath {
			return p, true
		}
		return "", false
	}
	return opcontext.New(env, t.TempDir(), nil), p
}

// contextCatalogGateway serves a recorded catalog: a read tool and a write
// tool that take project_id, and one that does not.
func contextCatalogGateway(t *testing.T, extra ...*mcp.Tool) *Gateway {
	t.Helper()
	schema := map[string]any{"type": "object", "properties": map[string]any{"project_id": map[string]any{"type": "string"}}}
	tools := append([]*mcp.Tool{
		{Name: "recall", InputSchema: schema, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "store", InputSchema: schema},
		{Name: "ping", InputSchema: map[string]any{"type": "object"}},
	}, extra...)
	g, err := New(context.Background(), Options{Upstream: NewCatalogUpstream(&catalog.Catalog{Tools: tools})})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

const rejectSidecar = `version = 1
context_revision = "gw-1"
[instructions]
summary = "Context summary."
[registry]
project_ids = ["acme-app"]
enforce = "reject"
[defaults]
"claude-code" = "acme-app"
[[doctrine]]
name = "d1"
body = "b1"
`

// Without a Source every helper leaves the gateway's behaviour unchanged.
func TestContextHelpersNil(t *testing.T) {
	g := contextCatalogGateway(t)
	if got := contextInstructions(nil, "P.\n"); got != "P.\n" {
		t.Fatalf("instructions %q", got)
	}
	res := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	g.withContextTool(nil, res)
	if len(res.Tools) != 0 {
		t.Fatal("tool added without a context")
	}
	if _, ok, _ := g.contextTool(nil, &mcp.CallToolParamsRaw{Name: opcontext.ToolName}); ok {
		t.Fatal("get_operating_context answered without a context")
	}
	params := &mcp.CallToolParamsRaw{Name: "store", Arguments: json.RawMessage(`{"project_id":"@auto"}`)}
	fwd, refused, d, err := g.contextCheck(context.Background(), nil, "claude-code", params)
	if err != nil || refused != nil || fwd != params || d.Resolved {
		t.Fatalf("%v %v %+v %v", fwd, refused, d, err)
	}
	if contextHealth(nil) != nil || (*ContextHealth)(nil).String() != "none" {
		t.Fatal("health without a context")
	}
}

func TestContextToolListing(t *testing.T) {
	oc, p := contextSidecar(t, rejectSidecar)
	g := contextCatalogGateway(t)

	single := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	g.withContextTool(oc, single)
	if len(single.Tools) != 1 || single.Tools[0].Name != opcontext.ToolName || !single.Tools[0].Annotations.ReadOnlyHint {
		t.Fatalf("single page %+v", single.Tools)
	}
	middle := &mcp.ListToolsResult{Tools: []*mcp.Tool{}, NextCursor: "c"}
	g.withContextTool(oc, middle)
	if len(middle.Tools) != 0 {
		t.Fatal("added to a page that is not the last")
	}
	res, ok, err := g.contextTool(oc, &mcp.CallToolParamsRaw{Name: opcontext.ToolName, Arguments: json.RawMessage(`{"section":"d1"}`)})
	if !ok || err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"body":"b1"`) {
		t.Fatalf("%+v %v %v", res, ok, err)
	}
	if _, ok, _ := g.contextTool(oc, &mcp.CallToolParamsRaw{Name: "store"}); ok {
		t.Fatal("answered another tool")
	}

	// Inactive (invalid file): gone from the list and not answered.
	if err := os.WriteFile(p, []byte("version = 1\nbad = 1\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	off := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	g.withContextTool(oc, off)
	if len(off.Tools) != 0 {
		t.Fatal("listed while inactive")
	}
	if _, ok, _ := g.contextTool(oc, &mcp.CallToolParamsRaw{Name: opcontext.ToolName}); ok {
		t.Fatal("answered while inactive")
	}
	h := contextHealth(oc)
	if h.State != opcontext.StateInvalid || len(h.Findings) != 1 || h.Findings[0].Check != "parse" ||
		!strings.Contains(h.String(), "warn parse") {
		t.Fatalf("health %+v", h)
	}

	// An upstream tool of the same name is never shadowed.
	oc2, _ := contextSidecar(t, rejectSidecar)
	clash := contextCatalogGateway(t, &mcp.Tool{Name: opcontext.ToolName, InputSchema: map[string]any{"type": "object"}})
	list := &mcp.ListToolsResult{Tools: []*mcp.Tool{}}
	clash.withContextTool(oc2, list)
	if _, ok, _ := clash.contextTool(oc2, &mcp.CallToolParamsRaw{Name: opcontext.ToolName}); ok || len(list.Tools) != 0 {
		t.Fatal("shadowed the upstream's tool")
	}
	if h := contextHealth(oc2); h.State != opcontext.StateActive || h.Revision != "gw-1" || len(h.Findings) != 0 {
		t.Fatalf("health %+v", h)
	}
}

// Reads warn, writes are refused with the policy envelope, the effect
// kind deciding which is which; tools without project_id pass.
func TestContextCheckEffects(t *testing.T) {
	oc, _ := contextSidecar(t, rejectSidecar)
	g := contextCatalogGateway(t)
	ctx := context.Background()
	tests := []struct {
		tool, args string
		refused    bool
		warned     bool
		forward    string
	}{
		{"recall", `{"project_id":"nope"}`, false, true, `{"project_id":"nope"}`},
		{"store", `{"project_id":"nope"}`, true, false, ""},
		{"store", `{"project_id":"acme-app"}`, false, false, `{"project_id":"acme-app"}`},
		{"store", `{"project_id": "@auto"}`, false, false, `{"project_id": "acme-app"}`},
		{"ping", `{"project_id":"nope"}`, false, false, `{"project_id":"nope"}`},
	}
	for _, tt := range tests {
		t.Run(tt.tool+tt.args, func(t *testing.T) {
			params := &mcp.CallToolParamsRaw{Name: tt.tool, Arguments: json.RawMessage(tt.args)}
			fwd, refused, d, err := g.contextCheck(ctx, oc, "claude-code", params)
			if err != nil {
				t.Fatal(err)
			}
			if tt.refused {
				if refused == nil || fwd != nil || !refused.IsError {
					t.Fatalf("not refused: %v %v", fwd, refused)
				}
				env, ok := refused.StructuredContent.(Envelope)
				if !ok || env.Code != CodeOperatingContextRejected || env.Category != CategoryPolicy ||
					!strings.Contains(env.Message, "rev gw-1") || refused.Meta[opcontext.MetaRevision] != "gw-1" {
					t.Fatalf("envelope %+v meta %v", refused.StructuredContent, refused.Meta)
				}
				return
			}
			if refused != nil || string(fwd.Arguments) != tt.forward || (len(d.Warnings) > 0) != tt.warned {
				t.Fatalf("fwd %s refused %v decision %+v", fwd.Arguments, refused, d)
			}
			if string(fwd.Arguments) == tt.args && fwd != params {
				t.Fatal("copied params that did not change")
			}
			if string(fwd.Arguments) != tt.args && string(params.Arguments) != tt.args {
				t.Fatal("the caller's params were modified")
			}
		})
	}
	_, _, _, err := g.contextCheck(ctx, oc, "", &mcp.CallToolParamsRaw{Name: "store", Arguments: json.RawMessage(`[1]`)})
	var rpcErr *jsonrpc.Error
	if !errors.As(err, &rpcErr) || rpcErr.Code != jsonrpc.CodeInvalidParams {
		t.Fatalf("non-object arguments: error %v", err)
	}
}

// An @auto call forwarded by the gateway's own upstream client to the real
// everything-server carries the resolved value, and the result carries the
// echo. The everything-server has no project_id tool, so the registry is
// configured on json_schema_2020_12_tool's "name" argument, which it echoes.
func TestContextAutoReachesRealUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	up, err := NewClientUpstream(ctx, &mcp.CommandTransport{Command: exec.Command(testupstream.EverythingServer(t))})
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(ctx, Options{Upstream: up})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	oc, _ := contextSidecar(t, `version = 1
context_revision = "gw-2"
[registry]
argument = "name"
project_ids = ["acme-app"]
enforce = "warn"
[defaults]
"claude-code" = "acme-app"
`)
	params := &mcp.CallToolParamsRaw{Name: "json_schema_2020_12_tool",
		Arguments: json.RawMessage(`{"name":"@auto","contactMethod":"email","email":"a@example.com"}`)}
	fwd, refused, d, err := g.contextCheck(ctx, oc, "claude-code", params)
	if err != nil || refused != nil {
		t.Fatal(err, refused)
	}
	out, err := up.CallTool(ctx, fwd)
	if err != nil || out.IsError {
		t.Fatal(err, out)
	}
	d.Annotate(out)
	if got := out.Content[0].(*mcp.TextContent).Text; !strings.Contains(got, `"name":"acme-app"`) || strings.Contains(got, "@auto") {
		t.Fatalf("upstream received %q", got)
	}
	if out.Meta[opcontext.MetaResolved] != "acme-app" || out.Meta[opcontext.MetaRevision] != "gw-2" {
		t.Fatalf("meta %v", out.Meta)
	}
}

// Wired into sessions: a new session's instructions carry the summary as the
// file reads at its handshake (an edit reaches the next session), the tool
// is listed in every profile while active and answered, a bad section is
// invalid_arguments, and health reports the sidecar.
func TestContextWiredIntoSessions(t *testing.T) {
	oc, p := contextSidecar(t, rejectSidecar)
	cat := effectTools()
	r := writeProfiles(t, cat.Tools, effectGenerated, effectPolicy)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: r, OperatingContext: oc})
	for _, profile := range []string{"work", "review", FullProfile} {
		cs := connect(t, g, profile)
		if got := cs.InitializeResult().Instructions; !strings.HasSuffix(got, "Context summary.") {
			t.Errorf("%s: instructions %q, want the summary last", profile, got)
		}
		if names := listedNames(t, cs); !slices.Contains(names, opcontext.ToolName) {
			t.Errorf("%s lists %v, want %s", profile, names, opcontext.ToolName)
		}
	}
	cs := connect(t, g, "work")
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: opcontext.ToolName, Arguments: map[string]any{"section": "d1"}})
	if err != nil || res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, `"body":"b1"`) {
		t.Fatalf("section d1: %+v %v", res, err)
	}
	env := callEnvelope(t, cs, opcontext.ToolName, map[string]any{"section": "nope"})
	if env.Code != CodeInvalidArguments || !strings.Contains(env.Message, `unknown section "nope"`) {
		t.Errorf("bad section: %+v", env)
	}
	if h := g.Health(); h.OperatingContext == nil || h.OperatingContext.State != opcontext.StateActive || h.OperatingContext.Revision != "gw-1" {
		t.Errorf("health %+v", h.OperatingContext)
	}

	// Edit: the next session sees the new summary, no restart.
	edited := strings.Replace(rejectSidecar, "Context summary.", "Edited summary.", 1)
	if err := os.WriteFile(p, []byte(edited), 0o600); err != nil {
		t.Fatal(err)
	}
	if got := connect(t, g, "work").InitializeResult().Instructions; !strings.HasSuffix(got, "Edited summary.") {
		t.Errorf("after the edit: instructions %q", got)
	}

	// Dormant (file removed): no summary, no tool, calls to it unknown.
	if err := os.Remove(p); err != nil {
		t.Fatal(err)
	}
	cs = connect(t, g, "work")
	if got := cs.InitializeResult().Instructions; strings.Contains(got, "summary") {
		t.Errorf("dormant: instructions %q", got)
	}
	if names := listedNames(t, cs); slices.Contains(names, opcontext.ToolName) {
		t.Errorf("dormant: listed %v", names)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: opcontext.ToolName}); err == nil {
		t.Error("dormant: call answered, want unknown tool")
	}
	if h := g.Health(); h.OperatingContext.State != opcontext.StateDormant {
		t.Errorf("dormant health %+v", h.OperatingContext)
	}
}
