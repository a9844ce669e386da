package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolprof/toolprof/internal/testupstream"
)

func TestPassThrough(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	var (
		mu   sync.Mutex
		logs []string
	)
	s := startSet(t, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`, "b": `+stdioEntry(bin, nil)+`}}`, nil,
		SetOptions{Client: Options{ProtocolVersion: sessionlessVersion, OnLog: func(_ context.Context, server string, p *mcp.LoggingMessageParams) {
			mu.Lock()
			defer mu.Unlock()
			logs = append(logs, server+":"+p.Data.(string))
		}}})
	ctx := context.Background()
	b, ok := s.Client("b")
	if !ok {
		t.Fatal("no client b")
	}

	resources, err := b.ListResources(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources.Resources {
		uris = append(uris, r.URI)
	}
	if !slices.Contains(uris, "test://static-text") {
		t.Errorf("resources = %q", uris)
	}
	read, err := b.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://static-text"})
	if err != nil || len(read.Contents) != 1 || read.Contents[0].Text == "" {
		t.Errorf("read = %+v, %v", read, err)
	}
	templates, err := b.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) == 0 || templates.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Errorf("templates = %+v, %v", templates, err)
	}

	prompts, err := s.ListPrompts(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range prompts {
		names = append(names, p.Name)
	}
	if !slices.Contains(names, "a__test_simple_prompt") || !slices.Contains(names, "b__test_prompt_with_arguments") {
		t.Errorf("prompts = %q", names)
	}
	got, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "b__test_prompt_with_arguments", Arguments: map[string]string{"arg1": "one", "arg2": "two"}})
	if err != nil || len(got.Messages) == 0 {
		t.Fatalf("get prompt = %+v, %v", got, err)
	}
	if tc, ok := got.Messages[0].Content.(*mcp.TextContent); !ok || !strings.Contains(tc.Text, "one") || !strings.Contains(tc.Text, "two") {
		t.Errorf("prompt message = %+v", got.Messages[0].Content)
	}
	var rpc *jsonrpc.Error
	if _, err := s.GetPrompt(ctx, &mcp.GetPromptParams{Name: "zzz"}); !errors.As(err, &rpc) {
		t.Errorf("unknown prompt: %v, want a JSON-RPC error", err)
	}

	if res, err := b.Complete(ctx, &mcp.CompleteParams{
		Ref:      &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"},
		Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "o"},
	}); err != nil || res == nil {
		t.Errorf("complete = %+v, %v", res, err)
	}

	// The log level travels in the call's _meta, which is forwarded as is.
	logged := &mcp.CallToolParamsRaw{Name: "b__test_tool_with_logging", Meta: mcp.Meta{mcp.MetaKeyLogLevel: "info"}}
	if _, err := s.CallTool(ctx, logged); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "three log messages", func() bool { mu.Lock(); defer mu.Unlock(); return len(logs) >= 3 })
	mu.Lock()
	if logs[0] != "b:Tool execution started" {
		t.Errorf("logs = %q", logs)
	}
	mu.Unlock()
}

func TestCancellationPassesThrough(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	s := startSet(t, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`}}`, nil, SetOptions{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	defer cancel()
	_, err := call(ctx, s, "test_tool_with_progress", "")
	if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, ErrUnavailable) {
		t.Errorf("cancelled call: err = %v, want the context's error and not unavailable", err)
	}
	if h := health(s, "a"); h.State != StateReady {
		t.Errorf("after a cancelled call health = %+v", h)
	}
}

func TestRequireAllLeavesNothingRunning(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	bin := testupstream.EverythingServer(t)
	doc := resolve(t, `{"mcpServers": {"good": `+stdioEntry(bin, nil)+`, "gone": `+stdioEntry("/nonexistent/x", nil)+`}}`, nil)
	if _, err := StartSet(context.Background(), doc, SetOptions{RequireAll: true}); err == nil {
		t.Fatal("StartSet succeeded")
	}
}

func TestCloseLeavesNothingRunning(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := exec.Command(bin, "-http", addr, "-stateless=false")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { srv.Process.Kill(); srv.Wait() }()
	waitFor(t, "everything-server listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	doc := resolve(t, `{"mcpServers": {"r": {"url": "http://`+addr+`/"}, "s": `+stdioEntry(bin, nil)+`}}`, nil)
	s, err := StartSet(context.Background(), doc, SetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"r__test_simple_text", "s__test_simple_text"} {
		if _, err := call(context.Background(), s, name, ""); err != nil {
			t.Fatal(err)
		}
	}
	pid := health(s, "s").PID
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("stdio server %d still exists after Close (kill 0: %v)", pid, err)
	}
	for _, h := range s.Health() {
		if h.State != StateClosed {
			t.Errorf("%s state %s after Close", h.Name, h.State)
		}
	}
}

func TestSetResources(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	// "a" (the helper) also lists test://static-text and sorts first, so it
	// serves that URI; everything else only "b" has.
	helper := stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_ID": "A", "HELPER_RESOURCE": "test://static-text"})
	s := startSet(t, `{"mcpServers": {"b": `+stdioEntry(bin, nil)+`, "a": `+helper+`}}`, nil, SetOptions{})
	ctx := context.Background()
	resources, err := s.ListResources(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var uris []string
	for _, r := range resources {
		uris = append(uris, r.URI)
	}
	if want := []string{"test://static-text", "test://static-binary", "test://watched-resource"}; !slices.Equal(uris, want) {
		t.Errorf("resources = %q, want %q", uris, want)
	}
	templates, err := s.ListResourceTemplates(ctx)
	if err != nil || len(templates) != 1 || templates[0].URITemplate != "test://template/{id}/data" {
		t.Errorf("templates = %v, %v", templates, err)
	}
	for _, tt := range []struct{ uri, want string }{
		{"test://static-text", "from A"},                                                          // listed by both: a wins
		{"test://watched-resource", "Watched resource content"},                                   // listed by b only
		{"test://template/7/data", `{"id": "7", "templateTest": true, "data": "Data for ID: 7"}`}, // from b's template, found by trying
	} {
		res, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: tt.uri})
		if err != nil || len(res.Contents) != 1 || res.Contents[0].Text != tt.want {
			t.Errorf("read %s = %+v, %v; want %q", tt.uri, res, err, tt.want)
		}
	}
	var rpc *jsonrpc.Error
	if _, err := s.ReadResource(ctx, &mcp.ReadResourceParams{URI: "nope://x"}); !errors.As(err, &rpc) {
		t.Errorf("unknown resource: %v, want a JSON-RPC error", err)
	}
}

func TestInputRequiredPassesThrough(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	s := startSet(t, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`}}`, nil, SetOptions{Client: Options{ProtocolVersion: sessionlessVersion}})
	ctx := context.Background()
	// The input request goes back to the caller (the gateway's client
	// answers it), not to an SDK handler inside toolprof.
	res, err := call(ctx, s, "test_input_required_result_elicitation", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := res.InputRequests["user_name"].(*mcp.ElicitParams); !ok {
		t.Fatalf("result = %+v, want the upstream's input request for user_name", res)
	}
	retry := &mcp.CallToolParamsRaw{
		Name:           "test_input_required_result_elicitation",
		InputResponses: mcp.InputResponseMap{"user_name": &mcp.ElicitResult{Action: "accept", Content: map[string]any{"name": "Ada"}}},
		RequestState:   res.RequestState,
	}
	res, err = s.CallTool(ctx, retry)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "Hello, Ada!" {
		t.Errorf("retry answered %q", got)
	}
}

func TestServerRequestsReachHandlers(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	var mu sync.Mutex
	var asked []string
	// Servers make these requests on the protocol before 2026-07-28.
	s := startSet(t, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`}}`, nil, SetOptions{Client: Options{
		ProtocolVersion: "2025-11-25",
		OnElicit: func(_ context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			mu.Lock()
			asked = append(asked, server+":elicit:"+p.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		},
		OnCreateMessage: func(_ context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			asked = append(asked, server+":sample:"+p.Messages[0].Content.(*mcp.TextContent).Text)
			mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
	}})
	ctx := context.Background()
	res, err := call(ctx, s, "test_elicitation", `{"message": "who?"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "Elicitation result: action=accept, content=map[username:ada]" {
		t.Errorf("elicitation tool answered %q", got)
	}
	res, err = call(ctx, s, "test_sampling", `{"prompt": "meaning?"}`)
	if err != nil {
		t.Fatal(err)
	}
	if got := text(t, res); got != "LLM response: forty-two" {
		t.Errorf("sampling tool answered %q", got)
	}
	mu.Lock()
	defer mu.Unlock()
	if !slices.Equal(asked, []string{"a:elicit:who?", "a:sample:meaning?"}) {
		t.Errorf("handlers saw %q", asked)
	}
}
