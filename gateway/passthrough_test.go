package gateway

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/upstream"
)

// relayGateway serves the everything-server through an upstream.Set whose
// callbacks reach the gateway, as cmd/server wires them.
func relayGateway(t testing.TB) *Gateway {
	t.Helper()
	return relayGatewayCmd(t, testupstream.EverythingServer(t))
}

// relayGatewayCmd is relayGateway with the upstream started as command args.
func relayGatewayCmd(t testing.TB, command string, args ...string) *Gateway {
	t.Helper()
	return relayGatewayOpts(t, Options{}, command, args...)
}

// relayGatewayOpts is relayGatewayCmd with gateway options (their Upstream
// is the set it starts).
func relayGatewayOpts(t testing.TB, gopts Options, command string, args ...string) *Gateway {
	t.Helper()
	var ref atomic.Pointer[Gateway]
	gopts.Upstream = relaySet(t, &ref, nil, command, args...)
	g, err := New(context.Background(), gopts)
	if err != nil {
		gopts.Upstream.(*upstream.Set).Close()
		t.Fatal(err)
	}
	ref.Store(g)
	t.Cleanup(func() { g.Close() })
	return g
}

// relaySet starts the upstream set of relayGatewayOpts, relaying what its
// server sends during a call to the gateway ref will hold; tweak, when
// set, changes its client options first.
func relaySet(t testing.TB, ref *atomic.Pointer[Gateway], tweak func(*upstream.Options), command string, args ...string) *upstream.Set {
	t.Helper()
	opts := upstream.Options{
		ProtocolVersion: "2025-11-25",
		OnProgress: func(ctx context.Context, server string, p *mcp.ProgressNotificationParams) {
			ref.Load().Progress(ctx, server, p)
		},
		OnLog: func(ctx context.Context, server string, p *mcp.LoggingMessageParams) { ref.Load().Log(ctx, server, p) },
		OnResourceUpdated: func(ctx context.Context, server string, p *mcp.ResourceUpdatedNotificationParams) {
			ref.Load().ResourceUpdated(ctx, server, p)
		},
		OnElicit: func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
			return ref.Load().Elicit(ctx, server, p)
		},
		OnCreateMessage: func(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
			return ref.Load().CreateMessage(ctx, server, p)
		},
		OnReconnected: func(server string) {
			if g := ref.Load(); g != nil {
				g.Reconnected(context.Background(), server)
			}
		},
		Backoff: upstream.Backoff{Initial: 10 * time.Millisecond, Max: time.Second},
		OnPromptsChanged: func(server string) {
			if g := ref.Load(); g != nil {
				g.PromptsChanged(server)
			}
		},
		OnToolsChanged: func(server string) {
			if g := ref.Load(); g != nil {
				g.ToolsChanged(context.Background(), server)
			}
		},
	}
	if tweak != nil {
		tweak(&opts)
	}
	doc := &launch.Resolved{Version: 1, Servers: []launch.ResolvedServer{{Name: "everything", Transport: launch.Stdio, Command: command, Args: args}}}
	set, err := upstream.StartSet(context.Background(), doc, upstream.SetOptions{Client: opts, RequireAll: true})
	if err != nil {
		t.Fatal(err)
	}
	return set
}

// connectWith is connect to the default profile with client options, at
// protocol 2025-11-25.
func connectWith(t testing.TB, g *Gateway, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectSession(t, g, "", opts, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
}

func TestPassThroughFeatures(t *testing.T) {
	g := relayGateway(t)
	updated := make(chan string, 4)
	cs := connectWith(t, g, &mcp.ClientOptions{ResourceUpdatedHandler: func(_ context.Context, r *mcp.ResourceUpdatedNotificationRequest) {
		updated <- r.Params.URI
	}})
	ctx := context.Background()

	caps := cs.InitializeResult().Capabilities
	if caps.Resources == nil || !caps.Resources.Subscribe || caps.Prompts == nil || caps.Completions == nil || caps.Logging == nil || caps.Tools == nil || !caps.Tools.ListChanged {
		t.Errorf("capabilities %+v: want the upstream's (resources with subscribe, prompts, completions, logging) and tools with listChanged", caps)
	}
	resources, err := cs.ListResources(ctx, nil)
	if err != nil || !hasResource(resources.Resources, "test://static-text") {
		t.Errorf("resources/list = %+v, %v", resources, err)
	}
	templates, err := cs.ListResourceTemplates(ctx, nil)
	if err != nil || len(templates.ResourceTemplates) != 1 || templates.ResourceTemplates[0].URITemplate != "test://template/{id}/data" {
		t.Errorf("resources/templates/list = %+v, %v", templates, err)
	}
	read, err := cs.ReadResource(ctx, &mcp.ReadResourceParams{URI: "test://template/42/data"})
	if err != nil || len(read.Contents) != 1 || !strings.Contains(read.Contents[0].Text, "42") {
		t.Errorf("resources/read of a templated URI = %+v, %v", read, err)
	}
	prompts, err := cs.ListPrompts(ctx, nil)
	if err != nil || len(prompts.Prompts) == 0 {
		t.Errorf("prompts/list = %+v, %v", prompts, err)
	}
	prompt, err := cs.GetPrompt(ctx, &mcp.GetPromptParams{Name: "test_simple_prompt"})
	if err != nil || len(prompt.Messages) == 0 {
		t.Errorf("prompts/get = %+v, %v", prompt, err)
	}
	if _, err := cs.Complete(ctx, &mcp.CompleteParams{Ref: &mcp.CompleteReference{Type: "ref/prompt", Name: "test_prompt_with_arguments"}, Argument: mcp.CompleteParamsArgument{Name: "arg1", Value: "a"}}); err != nil {
		t.Errorf("completion/complete: %v", err)
	}
	if _, err := cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: "forged"}); err == nil {
		t.Error("prompts/list with a cursor the gateway never issued succeeded")
	}
	// The everything-server announces the watched resource every 3 s to
	// subscribers.
	if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Fatalf("subscribe: %v", err)
	}
	select {
	case uri := <-updated:
		if uri != "test://watched-resource" {
			t.Errorf("update for %q", uri)
		}
	case <-time.After(10 * time.Second):
		t.Error("no notifications/resources/updated relayed")
	}
	if err := cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: "test://watched-resource"}); err != nil {
		t.Errorf("unsubscribe: %v", err)
	}
}

func hasResource(rs []*mcp.Resource, uri string) bool {
	for _, r := range rs {
		if r.URI == uri {
			return true
		}
	}
	return false
}

// TestProgressRoutedByToken: two sessions calling at once with the same
// progress token each get exactly their own call's notifications, under
// their own token.
func TestProgressRoutedByToken(t *testing.T) {
	g := relayGateway(t)
	type seen struct {
		mu     sync.Mutex
		tokens []any
	}
	var a, b seen
	handler := func(s *seen) *mcp.ClientOptions {
		return &mcp.ClientOptions{ProgressNotificationHandler: func(_ context.Context, r *mcp.ProgressNotificationClientRequest) {
			s.mu.Lock()
			s.tokens = append(s.tokens, r.Params.ProgressToken)
			s.mu.Unlock()
		}}
	}
	csA, csB := connectWith(t, g, handler(&a)), connectWith(t, g, handler(&b))
	var wg sync.WaitGroup
	for _, cs := range []*mcp.ClientSession{csA, csB} {
		wg.Go(func() {
			p := &mcp.CallToolParams{Name: "test_tool_with_progress", Arguments: map[string]any{}}
			p.SetProgressToken("same")
			if res, err := cs.CallTool(context.Background(), p); err != nil || res.IsError {
				t.Errorf("call: %v %+v", err, res)
			}
		})
	}
	wg.Wait()
	for name, s := range map[string]*seen{"a": &a, "b": &b} {
		s.mu.Lock()
		if len(s.tokens) != 3 {
			t.Errorf("session %s got %d progress notifications, want its own 3: %v", name, len(s.tokens), s.tokens)
		}
		for _, tok := range s.tokens {
			if tok != "same" {
				t.Errorf("session %s got token %v, want its own %q", name, tok, "same")
			}
		}
		s.mu.Unlock()
	}
}

// TestLogsAndElicitationReachTheCaller: what an upstream sends during a call
// (log messages, elicitation and sampling requests) goes to the calling
// session only.
func TestLogsAndElicitationReachTheCaller(t *testing.T) {
	g := relayGateway(t)
	var callerLogs, otherLogs atomic.Int32
	caller := connectWith(t, g, &mcp.ClientOptions{
		LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { callerLogs.Add(1) },
		ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": "ada"}}, nil
		},
		CreateMessageHandler: func(_ context.Context, r *mcp.CreateMessageRequest) (*mcp.CreateMessageResult, error) {
			prompt := r.Params.Messages[0].Content.(*mcp.TextContent).Text
			return &mcp.CreateMessageResult{Model: "test", Role: "assistant", Content: &mcp.TextContent{Text: "echo " + prompt}}, nil
		},
	})
	other := connectWith(t, g, &mcp.ClientOptions{LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { otherLogs.Add(1) }})
	ctx := context.Background()
	for _, cs := range []*mcp.ClientSession{caller, other} {
		if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "debug"}); err != nil {
			t.Fatal(err)
		}
	}
	if res, err := caller.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("call: %v %+v", err, res)
	}
	if n := callerLogs.Load(); n != 3 {
		t.Errorf("caller got %d log messages by the time its result arrived, want 3", n)
	}
	if n := otherLogs.Load(); n != 0 {
		t.Errorf("a session that made no call got %d log messages", n)
	}
	res, err := caller.CallTool(ctx, &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "name?"}})
	if err != nil || res.IsError {
		t.Fatalf("elicitation call: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; !strings.Contains(text, "action=accept") || !strings.Contains(text, "ada") {
		t.Errorf("elicitation result %q: want the caller's answer", text)
	}
	res, err = caller.CallTool(ctx, &mcp.CallToolParams{Name: "test_sampling", Arguments: map[string]any{"prompt": "hello"}})
	if err != nil || res.IsError {
		t.Fatalf("sampling call: %v %+v", err, res)
	}
	if text := res.Content[0].(*mcp.TextContent).Text; text != "LLM response: echo hello" {
		t.Errorf("sampling result %q: want the caller's sample", text)
	}
}

// TestToolsChangedNotifiesSessions: the upstream's tools/list_changed
// updates the list and reaches connected sessions; the placeholder tool
// used to trigger the SDK never shows.
func TestToolsChangedNotifiesSessions(t *testing.T) {
	g := relayGateway(t)
	changed := make(chan struct{}, 4)
	cs := connectWith(t, g, &mcp.ClientOptions{ToolListChangedHandler: func(context.Context, *mcp.ToolListChangedRequest) { changed <- struct{}{} }})
	ctx := context.Background()
	before := g.cat().hash
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_trigger_tool_change", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("trigger: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed reached the session")
	}
	list, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range list.Tools {
		names = append(names, tool.Name)
	}
	if !strings.Contains(strings.Join(names, " "), "__transient_tool_for_list_changed") || strings.Contains(strings.Join(names, " "), listChangedProbe) {
		t.Errorf("tools after the change %q: want the new tool and never %s", names, listChangedProbe)
	}
	if g.cat().hash == before || g.Health().Upstream.CatalogHash != g.cat().hash {
		t.Error("the catalog hash did not follow the change")
	}
}

// TestPromptsChangedNotifiesSessions: the upstream's prompts/list_changed
// reaches connected sessions, and the new prompt is listed.
func TestPromptsChangedNotifiesSessions(t *testing.T) {
	g := relayGateway(t)
	changed := make(chan struct{}, 4)
	cs := connectWith(t, g, &mcp.ClientOptions{PromptListChangedHandler: func(context.Context, *mcp.PromptListChangedRequest) { changed <- struct{}{} }})
	ctx := context.Background()
	if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_trigger_prompt_change", Arguments: map[string]any{}}); err != nil || res.IsError {
		t.Fatalf("trigger: %v %+v", err, res)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("no prompts/list_changed reached the session")
	}
	list, err := cs.ListPrompts(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range list.Prompts {
		names = append(names, p.Name)
	}
	joined := strings.Join(names, " ")
	if !strings.Contains(joined, "__transient_prompt_for_list_changed") || strings.Contains(joined, promptChangedProbe) {
		t.Errorf("prompts after the change %q: want the new prompt and never %s", names, promptChangedProbe)
	}
}

// TestSubscriptionsCounted: the upstream is subscribed once for any number
// of sessions, and unsubscribed when the last of them unsubscribes or ends.
func TestSubscriptionsCounted(t *testing.T) {
	log := filepath.Join(t.TempDir(), "upstream.log")
	g := relayGatewayCmd(t, "sh", "-c", `tee "$0" | "$1"`, log, testupstream.EverythingServer(t))
	a, b := connectWith(t, g, nil), connectWith(t, g, nil)
	ctx := context.Background()
	const uri = "test://watched-resource"
	count := func(method string) int {
		data, err := os.ReadFile(log)
		if err != nil {
			t.Fatal(err)
		}
		return strings.Count(string(data), `"method":"`+method+`"`)
	}
	// waitFor polls the log: tee may write it after the upstream answered.
	waitFor := func(method string, want int) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for count(method) != want && time.Now().Before(deadline) {
			time.Sleep(5 * time.Millisecond)
		}
		if got := count(method); got != want {
			t.Errorf("upstream saw %d %s, want %d", got, method, want)
		}
	}
	for _, cs := range []*mcp.ClientSession{a, b} {
		if err := cs.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
			t.Fatal(err)
		}
	}
	waitFor("resources/subscribe", 1)
	if err := a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	// b still holds it: a round trip later, still no unsubscribe upstream.
	if _, err := b.ListTools(ctx, nil); err != nil {
		t.Fatal(err)
	}
	waitFor("resources/unsubscribe", 0)
	b.Close()
	waitFor("resources/unsubscribe", 1)
}

// TestLevelRestoredAfterReconnection: an upstream that restarts gets the
// logging level sessions had set, so their calls still log.
func TestLevelRestoredAfterReconnection(t *testing.T) {
	g := relayGateway(t)
	var logs atomic.Int32
	cs := connectWith(t, g, &mcp.ClientOptions{LoggingMessageHandler: func(context.Context, *mcp.LoggingMessageRequest) { logs.Add(1) }})
	ctx := context.Background()
	if err := cs.SetLoggingLevel(ctx, &mcp.SetLoggingLevelParams{Level: "info"}); err != nil {
		t.Fatal(err)
	}
	set := g.opts.Upstream.(*upstream.Set)
	pid := set.Health()[0].PID
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		h := set.Health()[0]
		if h.State == upstream.StateReady && h.PID != pid {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream never came back: %+v", h)
		}
		time.Sleep(5 * time.Millisecond)
	}
	// The level is restored on its own goroutine right after reconnection.
	deadline = time.Now().Add(10 * time.Second)
	for logs.Load() == 0 && time.Now().Before(deadline) {
		if res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_logging", Arguments: map[string]any{}}); err != nil {
			t.Fatal(err)
		} else if res.IsError {
			time.Sleep(10 * time.Millisecond)
		}
	}
	if logs.Load() == 0 {
		t.Error("no log messages after the upstream restarted: its logging level was not restored")
	}
}

// TestElicitationWithCallsInFlight: with two sessions' calls in flight on
// one upstream, each elicitation goes to the session of the newest call at
// the moment it is asked: A's to A while A's call is alone, B's to B once
// B's call is the newest, and each answer reaches its own call.
func TestElicitationWithCallsInFlight(t *testing.T) {
	g := relayGateway(t)
	type asker struct {
		asked   chan string
		release chan struct{}
	}
	newAsker := func(name string) (*asker, *mcp.ClientOptions) {
		a := &asker{asked: make(chan string, 2), release: make(chan struct{})}
		return a, &mcp.ClientOptions{ElicitationHandler: func(_ context.Context, r *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			a.asked <- r.Params.Message
			<-a.release
			return &mcp.ElicitResult{Action: "accept", Content: map[string]any{"username": name}}, nil
		}}
	}
	askA, optsA := newAsker("ada")
	askB, optsB := newAsker("bob")
	csA, csB := connectWith(t, g, optsA), connectWith(t, g, optsB)
	results := map[string]chan string{"A": make(chan string, 1), "B": make(chan string, 1)}
	call := func(name string, cs *mcp.ClientSession) {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "from " + name}})
		if err != nil || res.IsError {
			t.Errorf("call of %s: %v %+v", name, err, res)
			results[name] <- ""
			return
		}
		results[name] <- res.Content[0].(*mcp.TextContent).Text
	}
	wait := func(a *asker, want string) {
		t.Helper()
		select {
		case got := <-a.asked:
			if got != want {
				t.Errorf("asked %q, want %q", got, want)
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("never asked %q", want)
		}
	}
	go call("A", csA)
	wait(askA, "from A")
	go call("B", csB)
	wait(askB, "from B")
	close(askB.release)
	close(askA.release)
	for name, want := range map[string]string{"A": "ada", "B": "bob"} {
		if got := <-results[name]; !strings.Contains(got, want) {
			t.Errorf("session %s's call got %q, want its own answer %q", name, got, want)
		}
	}
	select {
	case m := <-askA.asked:
		t.Errorf("A was asked again: %q", m)
	case m := <-askB.asked:
		t.Errorf("B was asked again: %q", m)
	default:
	}
}
