package opcontext

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/internal/testupstream"
)

// An @auto call's decided arguments, forwarded to a real upstream (the
// everything-server over stdio), carry the resolved value. The upstream's
// json_schema_2020_12_tool echoes its input and has no project_id, so the
// registry is configured on its "name" argument: this also exercises the
// configurable argument against a real schema as the client lists it.
func TestAutoReachesRealUpstream(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	bin := testupstream.EverythingServer(t)
	client := mcp.NewClient(&mcp.Implementation{Name: "opcontext-test", Version: "0"}, nil)
	session, err := client.Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer session.Close()

	var tool *mcp.Tool
	for tl, err := range session.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		if tl.Name == "json_schema_2020_12_tool" {
			tool = tl
		}
	}
	if tool == nil {
		t.Fatal("upstream has no json_schema_2020_12_tool")
	}

	p := writeFile(t, t.TempDir(), "oc.toml", `version = 1
context_revision = "up-1"
[registry]
argument = "name"
project_ids = ["acme-app"]
enforce = "reject"
[defaults]
"opcontext-test" = "acme-app"
`)
	s := sourceAt(t, p, nil)
	tests := []struct {
		name, args, want string
	}{
		{"@auto resolved", `{"name":"@auto","contactMethod":"email","email":"a@example.com"}`, `"name":"acme-app"`},
		{"explicit forwarded as is", `{"name":"acme-app","contactMethod":"email","email":"a@example.com"}`, `"name":"acme-app"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := s.Check(ctx, CallInfo{Tool: tool.Name, Writes: true, InputSchema: tool.InputSchema,
				Arguments: json.RawMessage(tt.args), Client: "opcontext-test"})
			if err != nil || d.Rejected() {
				t.Fatalf("%+v %v", d, err)
			}
			res, err := session.CallTool(ctx, &mcp.CallToolParams{Name: tool.Name, Arguments: d.Arguments})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) == 0 {
				t.Fatalf("upstream: %+v", res)
			}
			got := res.Content[0].(*mcp.TextContent).Text
			if !strings.Contains(got, tt.want) || strings.Contains(got, Auto) {
				t.Fatalf("upstream received %q, want %s", got, tt.want)
			}
		})
	}

	// An unknown explicit value on a write never reaches the upstream.
	d, err := s.Check(ctx, CallInfo{Tool: tool.Name, Writes: true, InputSchema: tool.InputSchema,
		Arguments: json.RawMessage(`{"name":"other","email":"a@example.com"}`), Client: "opcontext-test"})
	if err != nil || !d.Rejected() || !strings.Contains(d.Reject, "rev up-1") {
		t.Fatalf("%+v %v", d, err)
	}
}
