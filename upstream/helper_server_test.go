package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
)

// The helper server is this test binary re-executed as a real stdio MCP
// server. It exists for what the everything-server cannot be configured to
// do: list tools in small pages, offer tools with chosen (colliding) names,
// and report its environment and working directory.
const helperEnv = "TOOLPROF_UPSTREAM_HELPER"

func TestMain(m *testing.M) {
	if os.Getenv(helperEnv) == "1" {
		if err := runHelperServer(); err != nil {
			fmt.Fprintln(os.Stderr, "helper server:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// richResult is a tool result with every content type (each with
// annotations or _meta where the type has them), structuredContent, isError
// and the result's own _meta: what a relay must return unchanged.
func richResult() *mcp.CallToolResult {
	ann := &mcp.Annotations{Audience: []mcp.Role{"assistant"}, Priority: 0.5}
	return &mcp.CallToolResult{
		Meta: mcp.Meta{"com.example/trace": "r-1", "nested": map[string]any{"n": 2.0}},
		Content: []mcp.Content{
			&mcp.TextContent{Text: "partial failure", Annotations: ann, Meta: mcp.Meta{"k": "text"}},
			&mcp.ImageContent{Data: []byte{0x89, 'P', 'N', 'G'}, MIMEType: "image/png", Annotations: ann},
			&mcp.AudioContent{Data: []byte("RIFF"), MIMEType: "audio/wav", Meta: mcp.Meta{"k": "audio"}},
			&mcp.ResourceLink{URI: "file:///r.txt", Name: "r", Title: "R", Description: "a link", MIMEType: "text/plain", Size: ptr(int64(7))},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://blob", MIMEType: "application/octet-stream", Blob: []byte{0, 1, 2}}},
			&mcp.EmbeddedResource{Resource: &mcp.ResourceContents{URI: "mem://text", Text: "inline"}},
		},
		StructuredContent: map[string]any{"ok": false, "items": []any{1.0, "two", nil}},
		IsError:           true,
	}
}

func ptr[T any](v T) *T { return &v }

// runHelperServer serves, over stdio, the tools named in HELPER_TOOLS (each
// answers "HELPER_ID:tool"), plus "meta" (the request's _meta as JSON),
// "rich" (richResult), "args" (the raw arguments), "getenv" (the value of the variable named
// by argument "name", and whether it is set) and "getwd", in pages of
// HELPER_PAGE_SIZE, and the resource HELPER_RESOURCE (answering "from
// HELPER_ID").
func runHelperServer() error {
	if n, err := strconv.Atoi(os.Getenv("HELPER_FAKE_FLOOD")); err == nil {
		return runFloodServer(n)
	}
	pageSize, _ := strconv.Atoi(os.Getenv("HELPER_PAGE_SIZE"))
	s := mcp.NewServer(&mcp.Implementation{Name: "helper", Version: "1"}, &mcp.ServerOptions{PageSize: pageSize})
	id := os.Getenv("HELPER_ID")
	// HELPER_PID_FILE receives the process id at start; HELPER_INIT_DELAY
	// holds up the answer to initialize (or server/discover), so a test can act while the
	// client is connecting.
	if f := os.Getenv("HELPER_PID_FILE"); f != "" {
		if err := os.WriteFile(f, []byte(strconv.Itoa(os.Getpid())), 0o600); err != nil {
			return err
		}
	}
	// HELPER_INIT_GATE names a file whose existence the answer to
	// initialize (or server/discover) waits for.
	if gate := os.Getenv("HELPER_INIT_GATE"); gate != "" {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				for method == "initialize" || method == "server/discover" {
					if _, err := os.Stat(gate); err == nil {
						break
					}
					time.Sleep(10 * time.Millisecond)
				}
				return next(ctx, method, req)
			}
		})
	}
	if d, err := time.ParseDuration(os.Getenv("HELPER_INIT_DELAY")); err == nil {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method == "initialize" || method == "server/discover" {
					time.Sleep(d)
				}
				return next(ctx, method, req)
			}
		})
	}
	// HELPER_LIST_HANG_GATE names a file: while it exists, tools/list is
	// never answered (the request waits for its cancellation).
	if gate := os.Getenv("HELPER_LIST_HANG_GATE"); gate != "" {
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if _, err := os.Stat(gate); err == nil && method == "tools/list" {
					<-ctx.Done()
					return nil, ctx.Err()
				}
				return next(ctx, method, req)
			}
		})
	}
	// HELPER_FIRST_LIST_DELAY holds up the answer to the first tools/list
	// after computing it, so a later list can finish first; the tool "grow"
	// adds a tool "extra" (the SDK sends tools/list_changed).
	if d, err := time.ParseDuration(os.Getenv("HELPER_FIRST_LIST_DELAY")); err == nil {
		var once sync.Once
		s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				res, err := next(ctx, method, req)
				if method == "tools/list" {
					once.Do(func() { time.Sleep(d) })
				}
				return res, err
			}
		})
		mcp.AddTool(s, &mcp.Tool{Name: "grow"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			mcp.AddTool(s, &mcp.Tool{Name: "extra"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			return &mcp.CallToolResult{}, nil, nil
		})
	}
	// HELPER_FAKE_HUGE_BYTES makes the helper a fake of a misbehaving
	// server: "huge" answers a text of that many bytes, once "wait" is in
	// flight; "wait" answers once "release" has been called.
	if n, err := strconv.Atoi(os.Getenv("HELPER_FAKE_HUGE_BYTES")); err == nil {
		waiting, released := make(chan struct{}), make(chan struct{})
		var waitOnce, releaseOnce sync.Once
		mcp.AddTool(s, &mcp.Tool{Name: "wait"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			waitOnce.Do(func() { close(waiting) })
			select {
			case <-released:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "released"}}}, nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "release"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			releaseOnce.Do(func() { close(released) })
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil, nil
		})
		mcp.AddTool(s, &mcp.Tool{Name: "huge"}, func(ctx context.Context, _ *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			select {
			case <-waiting:
			case <-ctx.Done():
				return nil, nil, ctx.Err()
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: strings.Repeat("x", n)}}}, nil, nil
		})
	}
	for _, name := range strings.Split(os.Getenv("HELPER_TOOLS"), ",") {
		if name == "" {
			continue
		}
		mcp.AddTool(s, &mcp.Tool{Name: name}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: id + ":" + name}}}, nil, nil
		})
	}
	if uri := os.Getenv("HELPER_RESOURCE"); uri != "" {
		s.AddResource(&mcp.Resource{Name: "helper", URI: uri}, func(_ context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: req.Params.URI, Text: "from " + id}}}, nil
		})
	}
	type getenvIn struct {
		Name string `json:"name"`
	}
	mcp.AddTool(s, &mcp.Tool{Name: "getenv"}, func(_ context.Context, _ *mcp.CallToolRequest, in getenvIn) (*mcp.CallToolResult, any, error) {
		v, ok := os.LookupEnv(in.Name)
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%v:%s", ok, v)}}}, nil, nil
	})
	mcp.AddTool(s, &mcp.Tool{Name: "meta"}, func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
		b, err := json.Marshal(req.Params.Meta)
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
	})
	// "rich" answers richResult, "args" the raw arguments it received.
	s.AddTool(&mcp.Tool{Name: "rich", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return richResult(), nil
	})
	s.AddTool(&mcp.Tool{Name: "args", InputSchema: map[string]any{"type": "object"}}, func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(req.Params.Arguments)}}}, nil
	})
	// With HELPER_CAPS, "caps" answers the capabilities the client
	// declared in initialize.
	if os.Getenv("HELPER_CAPS") != "" {
		mcp.AddTool(s, &mcp.Tool{Name: "caps"}, func(_ context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			b, err := json.Marshal(req.Session.InitializeParams().Capabilities)
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: string(b)}}}, nil, nil
		})
	}
	mcp.AddTool(s, &mcp.Tool{Name: "getwd"}, func(context.Context, *mcp.CallToolRequest, any) (*mcp.CallToolResult, any, error) {
		wd, err := os.Getwd()
		if err != nil {
			return nil, nil, err
		}
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: wd}}}, nil, nil
	})
	// HELPER_LEAK names a variable whose value the server leaks: on stderr
	// at start (split across two writes) and at exit (a last line without
	// a newline), and in the message and data of the JSON-RPC error the
	// tool "leak" answers (once plainly, once \u-escaped, once as a key).
	leak := os.Getenv(os.Getenv("HELPER_LEAK"))
	if os.Getenv("HELPER_LEAK") != "" {
		fmt.Fprint(os.Stderr, "start: token="+leak[:2])
		fmt.Fprint(os.Stderr, leak[2:]+" end of start line\n")
		s.AddTool(&mcp.Tool{Name: "leak", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			data := fmt.Sprintf(`{"detail": "sent token=%s <kept>", "escaped": "\u%04x%s", %q: "key", "code": 7}`, leak, leak[0], leak[1:], leak)
			return nil, &jsonrpc.Error{Code: -32042, Message: "refused token=" + leak, Data: json.RawMessage(data)}
		})
	}
	// With HELPER_CANCEL_FILE, "block" reports progress once (when asked
	// for it) and then waits for its call to be cancelled, writing why to
	// that file: what the server was told.
	if f := os.Getenv("HELPER_CANCEL_FILE"); f != "" {
		mcp.AddTool(s, &mcp.Tool{Name: "block"}, func(ctx context.Context, req *mcp.CallToolRequest, _ any) (*mcp.CallToolResult, any, error) {
			if tok := req.Params.GetProgressToken(); tok != nil {
				if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{ProgressToken: tok, Progress: 1}); err != nil {
					return nil, nil, err
				}
			}
			<-ctx.Done()
			return nil, nil, os.WriteFile(f, []byte(context.Cause(ctx).Error()), 0o600)
		})
	}
	// HELPER_EXECUTION lists every tool with members mcp.Tool lacks.
	if os.Getenv("HELPER_EXECUTION") != "" {
		testupstream.ListWithExecution(s)
	}
	err := s.Run(context.Background(), &mcp.StdioTransport{})
	if os.Getenv("HELPER_LEAK") != "" {
		fmt.Fprint(os.Stderr, "exit: token="+leak+" last words")
	}
	return err
}

// runFloodServer is a fake of a misbehaving stdio server, written by hand
// because an SDK server cannot be made to do this: once initialized, it
// writes n notifications/tools/list_changed in one burst, then one
// notifications/message saying "flood done", and answers every other call
// with an empty result.
func runFloodServer(n int) error {
	out := bufio.NewWriter(os.Stdout)
	send := func(v any) error {
		b, err := json.Marshal(v)
		if err != nil {
			return err
		}
		out.Write(append(b, '\n'))
		return out.Flush()
	}
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 64<<10), 1<<20)
	for in.Scan() {
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProtocolVersion string `json:"protocolVersion"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &m); err != nil {
			return err
		}
		var err error
		switch {
		case m.Method == "initialize":
			err = send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{
				"protocolVersion": m.Params.ProtocolVersion,
				"capabilities":    map[string]any{"tools": map[string]any{"listChanged": true}, "logging": map[string]any{}},
				"serverInfo":      map[string]any{"name": "flood", "version": "1"},
			}})
		case m.Method == "notifications/initialized":
			note := []byte(`{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}` + "\n")
			for range n {
				out.Write(note)
			}
			err = send(map[string]any{"jsonrpc": "2.0", "method": "notifications/message", "params": map[string]any{"level": "info", "data": "flood done"}})
		case m.ID != nil:
			err = send(map[string]any{"jsonrpc": "2.0", "id": m.ID, "result": map[string]any{}})
		}
		if err != nil {
			return err
		}
	}
	return in.Err()
}
