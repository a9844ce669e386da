package profiles

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// EnableToolsName is the name of the tool by which a session switches one
// of its profile's groups on.
const EnableToolsName = "enable_tools"

// EnableToolsTool returns the enable_tools tool definition for a profile
// offering groups, exactly as the gateway serves it (the derivation prices
// this definition, so the gateway must serve this one): its description
// lists each group as "- name: description" in the order given, and its
// input is one group name. It changes only which tools the session sees,
// so it is annotated neither read-only nor destructive, and idempotent.
func EnableToolsTool(groups []Group) *mcp.Tool {
	var b strings.Builder
	b.WriteString("Switch on a group of tools for this session; its tools are listed once it is on. Groups:")
	for _, g := range groups {
		fmt.Fprintf(&b, "\n- %s: %s", g.Name, g.Description)
	}
	closed := false
	return &mcp.Tool{
		Name:        EnableToolsName,
		Description: b.String(),
		InputSchema: map[string]any{
			"type": "object",
			"properties": map[string]any{
				"group": map[string]any{"type": "string", "description": "name of the group to switch on"},
			},
			"required": []string{"group"},
		},
		Annotations: &mcp.ToolAnnotations{IdempotentHint: true, DestructiveHint: &closed, OpenWorldHint: &closed},
	}
}

// EnableToolsRequest is the tools/call a client sends to switch group on.
func EnableToolsRequest(group string) *mcp.CallToolParams {
	return &mcp.CallToolParams{Name: EnableToolsName, Arguments: map[string]any{"group": group}}
}

// EnableToolsResult is the result the gateway returns when group is
// switched on and added tools (those the session did not have) join its
// list. The names are repeated so the model knows what to call without
// waiting for the re-listed definitions.
func EnableToolsResult(group string, added []string) *mcp.CallToolResult {
	text := fmt.Sprintf("Group %s is on: %d tools added (%s).", group, len(added), strings.Join(added, ", "))
	if len(added) == 0 {
		text = fmt.Sprintf("Group %s is on: no tools added (the session already has them).", group)
	}
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: text}}}
}
