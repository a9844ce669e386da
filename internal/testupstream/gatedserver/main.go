// Command gatedserver is a real stdio MCP server whose answers wait on
// files, so that a test can hold a client in a chosen step of joining:
//
//	-init-gate FILE   initialize is answered once FILE exists
//	-list-hold FILE   while FILE exists, tools/list is held; each held
//	                  request first creates FILE.arrived
//	-list-fail FILE   while FILE exists, tools/list answers an error
//	-list-count FILE  each tools/list received appends a line to FILE
//
// It offers the tools named by -tools (comma-separated), each answering
// its own name.
package main

import (
	"context"
	"errors"
	"flag"
	"log"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	tools := flag.String("tools", "", "comma-separated tool names to offer")
	initGate := flag.String("init-gate", "", "answer initialize once this file exists")
	listHold := flag.String("list-hold", "", "hold tools/list while this file exists")
	listFail := flag.String("list-fail", "", "fail tools/list while this file exists")
	listCount := flag.String("list-count", "", "append a line to this file per tools/list received")
	flag.Parse()
	exists := func(f string) bool {
		_, err := os.Stat(f)
		return f != "" && err == nil
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "gatedserver", Version: "1"}, nil)
	for _, name := range strings.Split(*tools, ",") {
		if name == "" {
			continue
		}
		srv.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: name}}}, nil
		})
	}
	// waitWhile polls, as the files are the test's only way to speak.
	waitWhile := func(ctx context.Context, cond func() bool) error {
		for cond() {
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-time.After(10 * time.Millisecond):
			}
		}
		return nil
	}
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			switch method {
			case "initialize":
				if *initGate != "" {
					if err := waitWhile(ctx, func() bool { return !exists(*initGate) }); err != nil {
						return nil, err
					}
				}
			case "tools/list":
				if *listCount != "" {
					if err := appendLine(*listCount); err != nil {
						return nil, err
					}
				}
				if exists(*listHold) {
					if err := os.WriteFile(*listHold+".arrived", nil, 0o600); err != nil {
						return nil, err
					}
					if err := waitWhile(ctx, func() bool { return exists(*listHold) }); err != nil {
						return nil, err
					}
				}
				if exists(*listFail) {
					return nil, errors.New("tools/list refused while " + *listFail + " exists")
				}
			}
			return next(ctx, method, req)
		}
	})
	if err := srv.Run(context.Background(), &mcp.StdioTransport{}); err != nil {
		log.Fatal(err)
	}
}

// appendLine appends one line to name, creating it: O_APPEND keeps the
// lines of the processes a test restarts whole.
func appendLine(name string) error {
	f, err := os.OpenFile(name, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString("tools/list\n"); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
