// Command iconserver is a real stdio MCP server whose tools carry icons, as
// the GitHub MCP server's do: tests check what the gateway serves of them.
// "draw" has two icons (one a base64 data URI), a title, annotations,
// _meta and a description with '<', '>' and '&'; "plain" has none of
// those. Each tool answers its own name.
package main

import (
	"context"
	"log"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	srv := mcp.NewServer(&mcp.Implementation{Name: "iconserver", Version: "1"}, nil)
	answer := func(name string) mcp.ToolHandler {
		return func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		}
	}
	srv.AddTool(&mcp.Tool{
		Name:        "draw",
		Title:       "Draw",
		Description: "Draws <shapes> & lines: (a) => b.",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{"shape": map[string]any{"type": "string"}}},
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:        mcp.Meta{"com.example/icons": "kept"},
		Icons: []mcp.Icon{
			{Source: "data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg==", MIMEType: "image/png", Sizes: []string{"1x1"}},
			{Source: "https://example.com/draw.svg", MIMEType: "image/svg+xml", Sizes: []string{"any"}, Theme: "dark"},
		},
	}, answer("draw"))
	srv.AddTool(&mcp.Tool{Name: "plain", Description: "No icons.", InputSchema: map[string]any{"type": "object"}}, answer("plain"))
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
