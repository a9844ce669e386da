package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
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

// relayCase is one tools/call made through the relay and through the
// SDK's client, which must look the same to the gateway.
type relayCase struct {
	name     string
	helper   map[string]string // the helper server's environment; nil: the everything-server
	vars     map[string]string // the launch environment
	proto    string            // offered protocol; "": the default
	maxBytes int
	tool     string
	args     string
	token    string // progress token; "": none
	// onProgress, at the first progress notification: "kill" the server,
	// "cancel" the call, "close" the Set; "": nothing.
	onProgress string
	timeout    time.Duration // the call's deadline; 0: none
	relayed    bool          // the relay sends it when on
}

// relayRun is what a call showed: what the gateway gets back, what the
// telemetry hooks saw, and what the server was told.
type relayRun struct {
	Result, Raw, Err string
	Kinds            []string // the error's classes, as the gateway maps them
	Progress         []string
	Sent             []string // the sending middleware's view of each tools/call
	IDs              []string // OnRequestID's: the request it was told of
	Asked            []string // the server's requests during the call
	Told             string   // what the server's "block" saw end its call
	Health           State
}

type relayIDKey struct{}

func runRelayCase(t *testing.T, c relayCase, sdk bool) (run relayRun, idTypes []string) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	told := filepath.Join(dir, "told")
	var entry string
	if c.helper != nil {
		self, err := os.Executable()
		if err != nil {
			t.Fatal(err)
		}
		env := map[string]string{helperEnv: "1", "HELPER_CANCEL_FILE": told}
		for k, v := range c.helper {
			env[k] = v
		}
		entry = stdioEntry(self, env)
	} else {
		entry = stdioEntry(testupstream.EverythingServer(t), nil)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if c.timeout > 0 {
		ctx, cancel = context.WithTimeout(ctx, c.timeout)
		defer cancel()
	}
	var (
		mu     sync.Mutex
		victim int
		acted  bool
		idLen  int // the last tools/call id's length on the wire
		set    *Set
		closed = make(chan struct{})
	)
	if c.onProgress != "close" {
		close(closed)
	}
	opts := Options{
		ProtocolVersion: c.proto,
		MaxMessageBytes: c.maxBytes,
		Backoff:         Backoff{Initial: time.Hour}, // no reconnection while observed
		sdkCalls:        sdk,
		OnElicit: func(_ context.Context, _ string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			mu.Lock()
			run.Asked = append(run.Asked, "elicit "+p.Message)
			mu.Unlock()
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		},
		OnCreateMessage: func(_ context.Context, _ string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			mu.Lock()
			run.Asked = append(run.Asked, "sample "+p.Messages[0].Content.(*mcp.TextContent).Text)
			mu.Unlock()
			return &mcp.CreateMessageResult{Role: "assistant", Model: "m", Content: &mcp.TextContent{Text: "forty-two"}}, nil
		},
		OnProgress: func(_ context.Context, _ string, p *mcp.ProgressNotificationParams) {
			mu.Lock()
			defer mu.Unlock()
			run.Progress = append(run.Progress, fmt.Sprintf("%v %v/%v %s", p.ProgressToken, p.Progress, p.Total, p.Message))
			if acted {
				return
			}
			acted = true
			switch c.onProgress {
			case "kill":
				if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
					t.Errorf("kill: %v", err)
				}
			case "cancel":
				cancel()
			case "close":
				go func(s *Set) {
					defer close(closed)
					s.Close()
				}(set)
			}
		},
		// As package otelmcp does: the trace context in the params' _meta,
		// a context of its own passed on.
		SendingMiddleware: func(next mcp.MethodHandler) mcp.MethodHandler {
			return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
				if method != "tools/call" {
					return next(ctx, method, req)
				}
				p := req.GetParams()
				meta := map[string]any{"traceparent": "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}
				for k, v := range p.GetMeta() {
					meta[k] = v
				}
				p.SetMeta(meta)
				tool := p.(*mcp.CallToolParams).Name
				res, err := next(context.WithValue(ctx, relayIDKey{}, tool), method, req)
				r, _ := res.(*mcp.CallToolResult)
				mu.Lock()
				run.Sent = append(run.Sent, fmt.Sprintf("%s %s %T result=%T isError=%v err=%v", method, tool, req, res, r != nil && r.IsError, err))
				mu.Unlock()
				return res, err
			}
		},
		OnRequestID: func(ctx context.Context, id jsonrpc.ID) {
			tool, ok := ctx.Value(relayIDKey{}).(string)
			if !ok {
				return // the SDK's own requests
			}
			mu.Lock()
			run.IDs = append(run.IDs, tool)
			idTypes = append(idTypes, fmt.Sprintf("%T", id.Raw()))
			b, _ := json.Marshal(id.Raw())
			idLen = len(b)
			mu.Unlock()
		},
	}
	s := startSet(t, `{"mcpServers": {"a": `+entry+`}}`, c.vars, SetOptions{Client: opts})
	mu.Lock()
	victim, set = health(s, "a").PID, s
	mu.Unlock()

	p := &mcp.CallToolParamsRaw{Name: c.tool}
	if c.args != "" {
		p.Arguments = json.RawMessage(c.args)
	}
	if c.token != "" {
		p.Meta = mcp.Meta{"progressToken": c.token}
	}
	callCtx, take := CaptureResult(ctx)
	res, err := s.CallTool(callCtx, p)
	if raw := take(); err == nil {
		// The gateway reads the capture only for a call that succeeded.
		// A cancelled call's late answer lands in the SDK's capture or not
		// as the race goes, and the relay drops it: neither reaches a
		// client.
		run.Raw = string(raw)
	}
	if res != nil {
		b, merr := json.Marshal(res)
		if merr != nil {
			t.Fatal(merr)
		}
		run.Result = string(b)
	}
	if err != nil {
		run.Err = err.Error()
		var rpc *jsonrpc.Error
		if tl := (*TooLargeError)(nil); errors.As(err, &tl) {
			// The answer's size counts its id, the one thing that differs.
			mu.Lock()
			run.Err = strings.Replace(run.Err, fmt.Sprintf(" %d bytes", tl.Bytes), fmt.Sprintf(" %d bytes and the id", tl.Bytes-int64(idLen)), 1)
			mu.Unlock()
		}
		var tl *TooLargeError
		for _, k := range []struct {
			name string
			is   bool
		}{
			{"unavailable", errors.Is(err, ErrUnavailable)},
			{"canceled", errors.Is(err, context.Canceled)},
			{"deadline", errors.Is(err, context.DeadlineExceeded)},
			{"too large", errors.As(err, &tl)},
			{"jsonrpc", errors.As(err, &rpc)},
		} {
			if k.is {
				run.Kinds = append(run.Kinds, k.name)
			}
		}
		if rpc != nil {
			run.Kinds = append(run.Kinds, fmt.Sprint(rpc.Code, rpc.Message, string(rpc.Data)))
		}
	}
	if c.helper != nil && (c.onProgress == "cancel" || c.timeout > 0) {
		waitFor(t, "the server told of the cancellation", func() bool {
			b, err := os.ReadFile(told)
			run.Told = string(b)
			return err == nil && len(b) > 0
		})
	}
	if c.onProgress == "kill" {
		waitFor(t, "the session ended", func() bool { return health(s, "a").State == StateDown })
	}
	<-closed
	run.Health = health(s, "a").State
	s.Close()
	mu.Lock()
	defer mu.Unlock()
	return run, idTypes
}

// TestRelayAnswersAsTheSDK makes each call through the relay and through
// the SDK's client, against real servers, and requires the same answer,
// the same telemetry and the same effect on the server; and that the
// relay, when on, sent the plain ones (its ids are strings, the SDK's
// integers).
func TestRelayAnswersAsTheSDK(t *testing.T) {
	const secret = "relay-secret-5f4e3d"
	leaky := map[string]string{"HELPER_LEAK": "TOKEN", "TOKEN": "${TOKEN}"}
	cases := []relayCase{
		{name: "text", tool: "test_simple_text", relayed: true},
		{name: "every content type", helper: map[string]string{}, tool: "rich", relayed: true},
		{name: "arguments", helper: map[string]string{}, tool: "args", args: `{"b": [1, 2.50, "<&>"], "a": null}`, relayed: true},
		{name: "meta", helper: map[string]string{}, tool: "meta", token: "m-1", relayed: true},
		{name: "isError", tool: "test_error_handling", relayed: true},
		{name: "unknown tool", tool: "no_such_tool", relayed: true},
		{name: "JSON-RPC error scrubbed", helper: leaky, vars: map[string]string{"TOKEN": secret}, tool: "leak", relayed: true},
		{name: "oversized", helper: map[string]string{}, maxBytes: 8 << 10, tool: "args", args: `{"x": "` + strings.Repeat("x", 16<<10) + `"}`, relayed: true},
		{name: "progress", tool: "test_tool_with_progress", token: "p-1", relayed: true},
		{name: "elicitation during the call", tool: "test_elicitation", args: `{"message": "who?"}`, relayed: true},
		{name: "sampling during the call", tool: "test_sampling", args: `{"prompt": "meaning?"}`, relayed: true},
		{name: "cancelled by the client", helper: map[string]string{}, tool: "block", token: "c-1", onProgress: "cancel", relayed: true},
		{name: "timeout", helper: map[string]string{}, tool: "block", timeout: 300 * time.Millisecond, relayed: true},
		{name: "closed mid-call", tool: "test_tool_with_progress", token: "s-1", onProgress: "close", relayed: true},
		{name: "crash mid-call", tool: "test_tool_with_progress", token: "k-1", onProgress: "kill", relayed: true},
		{name: "2026-07-28 input required", proto: sessionlessVersion, tool: "test_input_required_result_elicitation"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, sdkIDs := runRelayCase(t, c, true)
			got, ids := runRelayCase(t, c, false)
			if !reflect.DeepEqual(got, want) {
				t.Errorf("relay on:\n%+v\nSDK only:\n%+v", got, want)
			}
			if caller := fmt.Sprint(got.Result, got.Raw, got.Err, got.Kinds); strings.Contains(caller, secret) {
				t.Errorf("the secret reached the caller: %+v", got)
			}
			wantType := "int64"
			if c.relayed {
				wantType = "string"
			}
			if len(ids) == 0 || strings.Count(strings.Join(ids, " "), wantType) != len(ids) || strings.Count(strings.Join(sdkIDs, " "), "int64") != len(sdkIDs) {
				t.Errorf("request ids relay on %v, SDK only %v: want %s with the relay on", ids, sdkIDs, wantType)
			}
		})
	}
}
