package opcontext

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestToolDefinition(t *testing.T) {
	s := sourceWith(t, EnforceWarn)
	tool := s.Tool()
	if tool.Name != ToolName || tool.Annotations == nil || !tool.Annotations.ReadOnlyHint ||
		tool.Annotations.DestructiveHint == nil || *tool.Annotations.DestructiveHint {
		t.Fatalf("tool %+v", tool)
	}
	b, err := json.Marshal(tool.InputSchema)
	if err != nil {
		t.Fatal(err)
	}
	var sch struct {
		Type       string                     `json:"type"`
		Properties map[string]json.RawMessage `json:"properties"`
		Required   []string                   `json:"required"`
		Additional *bool                      `json:"additionalProperties"`
	}
	if err := json.Unmarshal(b, &sch); err != nil || sch.Type != "object" || len(sch.Properties) != 1 || sch.Properties["section"] == nil || len(sch.Required) != 0 ||
		sch.Additional == nil || *sch.Additional {
		t.Fatalf("schema %s", b)
	}
	// A fresh value every time: a caller editing it cannot change the next.
	tool.Name = "changed"
	if s.Tool().Name != ToolName {
		t.Fatal("Tool shares its value")
	}
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if len(res.Content) != 1 {
		t.Fatalf("content %v", res.Content)
	}
	return res.Content[0].(*mcp.TextContent).Text
}

func TestCallTool(t *testing.T) {
	s := sourceWith(t, EnforceReject)

	for _, args := range []string{``, `{}`, `null`} {
		res, err := s.CallTool(json.RawMessage(args))
		if err != nil || res.IsError {
			t.Fatalf("preview with %q: %+v %v", args, res, err)
		}
		var got Preview
		if err := json.Unmarshal([]byte(text(t, res)), &got); err != nil {
			t.Fatal(err)
		}
		want := Preview{
			ContextRevision:     "2026-07-16.1",
			InstructionsSummary: "Operating context (rev 2026-07-16.1).\nPass \"@auto\" as project_id to resolve your default.\n",
			Registry:            PreviewRegistry{ProjectIDs: []string{"", "acme-app"}, Enforce: EnforceReject, Argument: "project_id"},
			Defaults:            map[string]string{"claude-code": "acme-app", "agent.indexer": "", "agent.stray": "unlisted-app"},
			DoctrineSections:    []string{"recall-discipline", "agent-id-conventions"},
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("preview %+v\nwant %+v", got, want)
		}
		if sc, _ := json.Marshal(res.StructuredContent); string(sc) != text(t, res) {
			t.Fatalf("structured %s differs from text %s", sc, text(t, res))
		}
		if strings.Contains(text(t, res), "limit<=5") {
			t.Fatal("preview carries doctrine bodies")
		}
	}

	res, err := s.CallTool(json.RawMessage(`{"section":"agent-id-conventions"}`))
	if err != nil || res.IsError {
		t.Fatalf("%+v %v", res, err)
	}
	var sec Section
	if err := json.Unmarshal([]byte(text(t, res)), &sec); err != nil || sec != (Section{"2026-07-16.1", "agent-id-conventions", "'claude-code' for Claude Code.\n"}) {
		t.Fatalf("section %+v %v", sec, err)
	}
	if sc, _ := json.Marshal(res.StructuredContent); string(sc) != text(t, res) {
		t.Fatal("structured differs from text")
	}

	for _, tt := range []struct{ args, want string }{
		{`{"section":"nope"}`, `unknown section "nope"; valid sections: "recall-discipline", "agent-id-conventions"`},
		{`{"section":5}`, "bad arguments"},
		{`{"sections":"x"}`, `unknown field "sections"`},
		{`[]`, "bad arguments"},
	} {
		res, err := s.CallTool(json.RawMessage(tt.args))
		if err != nil || !res.IsError || !strings.Contains(text(t, res), tt.want) {
			t.Errorf("%s: %+v %v", tt.args, res, err)
		}
	}
}

func TestCallToolMinimalFile(t *testing.T) {
	s := sourceAt(t, writeFile(t, t.TempDir(), "oc.toml", "version = 1\n"), nil)
	res, err := s.CallTool(nil)
	if err != nil || res.IsError {
		t.Fatal(res, err)
	}
	if got := text(t, res); got != `{"context_revision":"","instructions_summary":"","registry":{"project_ids":null,"enforce":"warn","argument":"project_id"},"defaults":{},"doctrine_sections":[]}` {
		t.Fatalf("preview %s", got)
	}
	res, _ = s.CallTool(json.RawMessage(`{"section":"x"}`))
	if !res.IsError || !strings.Contains(text(t, res), "none (the file has no [[doctrine]] sections)") {
		t.Fatal(text(t, res))
	}
}

// The tool follows edits like everything else.
func TestCallToolFollowsEdits(t *testing.T) {
	dir := t.TempDir()
	p := writeFile(t, dir, "oc.toml", fmt.Sprintf(sidecar, "warn"))
	s := sourceAt(t, p, nil)
	writeFile(t, dir, "oc.toml", "version = 1\ncontext_revision = \"r2\"\n[[doctrine]]\nname = \"new\"\nbody = \"b\"\n")
	res, _ := s.CallTool(json.RawMessage(`{"section":"new"}`))
	if res.IsError || !strings.Contains(text(t, res), `"context_revision":"r2"`) {
		t.Fatal(text(t, res))
	}
}
