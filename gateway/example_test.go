package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/profiles"
)

// A gateway in front of an upstream MCP server serves each profile as its own
// *mcp.Server: a client connected to "core" lists only core's tools, and a
// call to any other tool is refused with an error envelope, never forwarded.
// Here the upstream is a go-sdk server in the same process and every
// connection is an in-memory transport.
func ExampleNew() {
	ctx := context.Background()

	// The upstream: three tools, one of them destructive.
	upstream := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	for _, tool := range []*mcp.Tool{
		{Name: "read_file", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "write_file"},
		{Name: "delete_file", Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)}},
	} {
		tool.InputSchema = map[string]any{"type": "object"}
		upstream.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "done"}}}, nil
		})
	}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := upstream.Connect(ctx, st, nil); err != nil {
		log.Fatal(err)
	}
	up, err := gateway.NewClientUpstream(ctx, ct)
	if err != nil {
		log.Fatal(err)
	}

	// The profiles, resolved against the tools the upstream lists.
	file, err := profiles.DecodeFile(strings.NewReader(`version = 1
default = "core"

[[profile]]
name = "core"
tools = ["read_file"]
`), "profiles.generated.toml")
	if err != nil {
		log.Fatal(err)
	}
	tools, err := up.ListTools(ctx)
	if err != nil {
		log.Fatal(err)
	}
	resolved, err := (&profiles.Set{File: file}).Resolve(tools)
	if err != nil {
		log.Fatal(err)
	}

	g, err := gateway.New(ctx, gateway.Options{Upstream: up, Tools: tools, Profiles: resolved})
	if err != nil {
		log.Fatal(err)
	}
	defer g.Close() // closes the upstream too

	for _, profile := range []string{"core", "full"} {
		server, err := g.Server(profile)
		if err != nil {
			log.Fatal(err)
		}
		st, ct := mcp.NewInMemoryTransports()
		if _, err := server.Connect(ctx, st, nil); err != nil {
			log.Fatal(err)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, nil).Connect(ctx, ct, nil)
		if err != nil {
			log.Fatal(err)
		}
		res, err := cs.ListTools(ctx, nil)
		if err != nil {
			log.Fatal(err)
		}
		var names []string
		for _, t := range res.Tools {
			names = append(names, t.Name)
		}
		fmt.Printf("%s lists: %s\n", profile, strings.Join(names, ", "))

		call, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "write_file"})
		if err != nil {
			log.Fatal(err)
		}
		if call.IsError { // the envelope travels as structured content
			var env gateway.Envelope
			b, _ := json.Marshal(call.StructuredContent)
			if err := json.Unmarshal(b, &env); err != nil {
				log.Fatal(err)
			}
			fmt.Printf("%s refuses write_file: %s: %s\n", profile, env.Code, env.Message)
		} else {
			fmt.Printf("%s forwards write_file: %s\n", profile, call.Content[0].(*mcp.TextContent).Text)
		}
		cs.Close()
	}
	// Output:
	// core lists: read_file
	// core refuses write_file: tool_not_in_profile: tool "write_file" is not in the active profile "core"; profiles that include it: full
	// full lists: delete_file, read_file, write_file
	// full forwards write_file: done
}
