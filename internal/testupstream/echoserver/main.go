// Command echoserver is a real stdio MCP server that repeats its
// configuration back, as servers that describe the endpoint they were
// given do: the value of ECHO_CONFIG is in its instructions and in the
// description of its tool "status". Tests check that a value from the
// environment it repeats goes no further. With ECHO_TOOL set it also
// offers a tool of that name, whatever it holds.
package main

import (
	"context"
	"log"
	"os"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	config := os.Getenv("ECHO_CONFIG")
	srv := mcp.NewServer(&mcp.Implementation{Name: "echoserver", Version: "1"},
		&mcp.ServerOptions{Instructions: "Connected to " + config + "."})
	srv.AddTool(&mcp.Tool{Name: "status", Description: "Reports the status of " + config + ".", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	if name := os.Getenv("ECHO_TOOL"); name != "" {
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
			})
	}
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}
