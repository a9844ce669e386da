package replay_test

import (
	"context"
	"fmt"
	"log"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/replay"
	"github.com/toolprof/toolprof/telemetry"
)

// memoryTarget serves every replayed session from one go-sdk server in this
// process, over a fresh in-memory transport per session.
type memoryTarget struct{ server *mcp.Server }

func (m memoryTarget) Transport(ctx context.Context, _ string) (replay.SessionTransport, error) {
	st, ct := mcp.NewInMemoryTransports()
	if _, err := m.server.Connect(ctx, st, nil); err != nil {
		return replay.SessionTransport{}, err
	}
	return replay.SessionTransport{Transport: ct, Where: "the in-memory server"}, nil
}

func (memoryTarget) Describe() string { return "in-memory server" }

// Two traced sessions replayed against a server that offers read_file and
// write_file, where write_file fails as a tool: each call is counted by the
// outcome the client saw, in total and per tool.
func ExampleRun() {
	server := mcp.NewServer(&mcp.Implementation{Name: "files", Version: "1"}, nil)
	server.AddTool(&mcp.Tool{Name: "read_file", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "# README"}}}, nil
		})
	server.AddTool(&mcp.Tool{Name: "write_file", InputSchema: map[string]any{"type": "object"}},
		func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{IsError: true, Content: []mcp.Content{&mcp.TextContent{Text: "read-only file system"}}}, nil
		})

	const trace = `{"session": "a", "client": {"name": "editor", "version": "1.0"}, "calls": [{"tool": "read_file", "arguments": {"path": "README.md"}}, {"tool": "write_file"}]}
{"session": "b", "calls": [{"tool": "read_file"}, {"tool": "delete_file"}]}
`
	sessions, _, err := telemetry.DecodeTrace(strings.NewReader(trace), "trace.jsonl", false)
	if err != nil {
		log.Fatal(err)
	}
	if err := replay.CheckArguments(sessions, "trace.jsonl"); err != nil {
		log.Fatal(err)
	}

	rep := replay.Run(context.Background(), memoryTarget{server}, sessions, replay.Options{Concurrency: 2})
	fmt.Printf("%d of %d sessions replayed against %s: %d calls\n", rep.SessionsRun, rep.Sessions, rep.Target, rep.Calls)
	for _, o := range replay.Outcomes() {
		fmt.Printf("%-12s %d\n", o, rep.Outcomes[o])
	}
	for _, t := range rep.Tools {
		fmt.Println(t.Name, t.Calls, t.Outcomes)
	}
	// Output:
	// 2 of 2 sessions replayed against in-memory server: 4 calls
	// ok           2
	// tool_error   1
	// denied       0
	// unknown_tool 1
	// error        0
	// read_file 2 map[ok:2]
	// delete_file 1 map[unknown_tool:1]
	// write_file 1 map[tool_error:1]
}
