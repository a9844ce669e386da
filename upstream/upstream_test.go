package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
)

// sessionlessVersion is the protocol version whose requests carry the
// client's hop in _meta (SEP-2575) and whose servers return input-required
// results: what tests of those offer instead of ProtocolVersion.
const sessionlessVersion = "2026-07-28"

// gatewayUpstream is the interface the gateway serves from; the Set must
// satisfy it.
type gatewayUpstream interface {
	ListTools(ctx context.Context) ([]*mcp.Tool, error)
	CallTool(ctx context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error)
}

var _ gatewayUpstream = (*Set)(nil)
var _ gatewayUpstream = (*Client)(nil)

// resolve builds a Resolved document from .mcp.json text, with vars as the
// environment.
func resolve(t testing.TB, mcpJSON string, vars map[string]string) *launch.Resolved {
	t.Helper()
	f, err := launch.DecodeFile("test.mcp.json", []byte(mcpJSON))
	if err != nil {
		t.Fatal(err)
	}
	doc := launch.Merge(f.Servers, nil)
	doc.Separator = f.Separator
	r, err := doc.Resolve(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// stdioEntry is a .mcp.json entry running bin with env.
func stdioEntry(bin string, env map[string]string, args ...string) string {
	e := map[string]any{"command": bin}
	if env != nil {
		e["env"] = env
	}
	if args != nil {
		e["args"] = args
	}
	b, _ := json.Marshal(e)
	return string(b)
}

// helperEntry is a .mcp.json entry running the helper server.
func helperEntry(t *testing.T, id, tools string, pageSize int) string {
	t.Helper()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	return stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_ID": id, "HELPER_TOOLS": tools, "HELPER_PAGE_SIZE": fmt.Sprint(pageSize)})
}

func startSet(t *testing.T, mcpJSON string, vars map[string]string, opts SetOptions) *Set {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := StartSet(ctx, resolve(t, mcpJSON, vars), opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

func toolNames(tools []*mcp.Tool) []string {
	var names []string
	for _, t := range tools {
		names = append(names, t.Name)
	}
	return names
}

func text(t *testing.T, res *mcp.CallToolResult) string {
	t.Helper()
	if res == nil || len(res.Content) == 0 {
		t.Fatalf("empty result %+v", res)
	}
	tc, ok := res.Content[0].(*mcp.TextContent)
	if !ok {
		t.Fatalf("content %T, want text", res.Content[0])
	}
	return tc.Text
}

func call(ctx context.Context, u gatewayUpstream, name string, args string) (*mcp.CallToolResult, error) {
	p := &mcp.CallToolParamsRaw{Name: name}
	if args != "" {
		p.Arguments = json.RawMessage(args)
	}
	return u.CallTool(ctx, p)
}

// waitFor polls cond; a deadline only bounds a hung test, it is not the
// property under test.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func health(s *Set, name string) Health {
	for _, h := range s.Health() {
		if h.Name == name {
			return h
		}
	}
	return Health{}
}

func TestTwoEverythingServersNamespaced(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	ctx := context.Background()
	// Declared in reverse order: the result must not depend on it.
	s := startSet(t, `{"mcpServers": {"b": `+stdioEntry(bin, nil)+`, "a": `+stdioEntry(bin, nil)+`}}`, nil, SetOptions{})
	tools, err := s.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, server := range []string{"a", "b"} {
		for _, tool := range testupstream.EverythingTools {
			want = append(want, server+"__"+tool)
		}
	}
	if got := toolNames(tools); !slices.Equal(got, want) {
		t.Fatalf("tools =\n%q\nwant\n%q", got, want)
	}
	again, _ := s.ListTools(ctx)
	if !slices.Equal(toolNames(again), want) {
		t.Errorf("second listing differs: %q", toolNames(again))
	}
	for _, name := range []string{"a__test_simple_text", "b__test_simple_text"} {
		res, err := call(ctx, s, name, "")
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got := text(t, res); got != "This is a simple text response for testing." {
			t.Errorf("%s = %q", name, got)
		}
	}
	// The upstream's own JSON-RPC error comes back as a *jsonrpc.Error, and
	// a name no server owns is one too.
	for _, name := range []string{"a__no_such_tool", "c__test_simple_text", "test_simple_text"} {
		_, err := call(ctx, s, name, "")
		var rpc *jsonrpc.Error
		if !errors.As(err, &rpc) || errors.Is(err, ErrUnavailable) {
			t.Errorf("%s: err = %v, want a JSON-RPC error", name, err)
		}
	}
	// Results are returned as the upstream sent them: isError and every
	// content type.
	res, err := call(ctx, s, "b__test_error_handling", "")
	if err != nil || !res.IsError {
		t.Errorf("test_error_handling: res %+v err %v, want isError", res, err)
	}
	res, err = call(ctx, s, "a__test_multiple_content_types", "")
	if err != nil {
		t.Fatal(err)
	}
	var kinds []string
	for _, c := range res.Content {
		kinds = append(kinds, fmt.Sprintf("%T", c))
	}
	if !slices.Equal(kinds, []string{"*mcp.TextContent", "*mcp.ImageContent", "*mcp.EmbeddedResource"}) {
		t.Errorf("content kinds = %q", kinds)
	}
}

func TestCollisionDeterministic(t *testing.T) {
	ctx := context.Background()
	// Server "a" tool "b__c" and server "a__b" tool "c" are both "a__b__c".
	entries := []string{
		`"a": ` + helperEntry(t, "A", "b__c,only_a", 0),
		`"a__b": ` + helperEntry(t, "AB", "c,only_ab", 0),
	}
	for _, order := range [][]int{{0, 1}, {1, 0}} {
		s := startSet(t, `{"mcpServers": {`+entries[order[0]]+`, `+entries[order[1]]+`}}`, nil, SetOptions{})
		tools, err := s.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"a__args", "a__b__args", "a__b__c", "a__b__getenv", "a__b__getwd", "a__b__meta", "a__b__only_ab", "a__b__rich", "a__getenv", "a__getwd", "a__meta", "a__only_a", "a__rich"}
		if got := toolNames(tools); !slices.Equal(got, want) {
			t.Errorf("order %v: tools = %q\nwant %q", order, got, want)
		}
		res, err := call(ctx, s, "a__b__c", "")
		if err != nil {
			t.Fatal(err)
		}
		if got := text(t, res); got != "A:b__c" {
			t.Errorf("order %v: a__b__c answered by %q, want server a (sorts first)", order, got)
		}
		if h := health(s, "a__b"); !slices.Equal(h.Shadowed, []string{"c"}) {
			t.Errorf("order %v: a__b shadowed = %q, want [c]", order, h.Shadowed)
		}
		s.Close()
	}
}

func TestSeparatorConfigurable(t *testing.T) {
	servers := `"x": ` + helperEntry(t, "X", "t", 0) + `, "y": ` + helperEntry(t, "Y", "t", 0)
	for _, tt := range []struct {
		name, separator, file, want string
	}{
		{"set by the caller", ".", "", "y.t"},
		{"set by the launch document", "", `"separator": "-", `, "y-t"},
		{"the caller's wins over the document's", ".", `"separator": "-", `, "y.t"},
		{"default", "", "", "y__t"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := startSet(t, `{`+tt.file+`"mcpServers": {`+servers+`}}`, nil, SetOptions{Separator: tt.separator})
			tools, err := s.ListTools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			other := "x" + strings.TrimPrefix(tt.want, "y")
			if got := toolNames(tools); !slices.Contains(got, other) || !slices.Contains(got, tt.want) {
				t.Errorf("tools = %q, want %s and %s", got, other, tt.want)
			}
			res, err := call(context.Background(), s, tt.want, "")
			if err != nil || text(t, res) != "Y:t" {
				t.Errorf("%s: %v %v", tt.want, res, err)
			}
		})
	}
}

func TestSingleUpstreamNotNamespacedAndPaginated(t *testing.T) {
	var tools []string
	for i := range 7 {
		tools = append(tools, fmt.Sprintf("t%d", i))
	}
	// Pages of 2: ListTools must follow five cursors to see all twelve tools.
	s := startSet(t, `{"mcpServers": {"only": `+helperEntry(t, "O", strings.Join(tools, ","), 2)+`}}`, nil, SetOptions{})
	got, err := s.ListTools(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := append([]string{"args", "getenv", "getwd", "meta", "rich"}, tools...)
	slices.Sort(want)
	if !slices.Equal(toolNames(got), want) {
		t.Errorf("tools = %q\nwant %q", toolNames(got), want)
	}
	res, err := call(context.Background(), s, "t6", "")
	if err != nil || text(t, res) != "O:t6" {
		t.Errorf("t6: %v %v", res, err)
	}
}

func TestStdioEnvironmentAndCwd(t *testing.T) {
	const secret = "declared-secret-4c1d"
	t.Setenv("TOOLPROF_PARENT_ONLY", "parent-only-value")
	cwd := t.TempDir()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	entry, _ := json.Marshal(map[string]any{
		"command": self, "cwd": cwd,
		"env": map[string]string{helperEnv: "1", "GIVEN": "${TOKEN}"},
	})
	var logs bytes.Buffer
	s := startSet(t, `{"mcpServers": {"h": `+string(entry)+`}}`, map[string]string{"TOKEN": secret},
		SetOptions{Client: Options{Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}})
	ctx := context.Background()
	for _, tt := range []struct{ name, want string }{
		{"GIVEN", "true:" + secret},           // declared, resolved
		{"TOOLPROF_PARENT_ONLY", "false:"},    // not inherited
		{"PATH", "true:" + os.Getenv("PATH")}, // inherited by default
	} {
		res, err := call(ctx, s, "getenv", fmt.Sprintf(`{"name": %q}`, tt.name))
		if err != nil {
			t.Fatal(err)
		}
		if got := text(t, res); got != tt.want {
			t.Errorf("upstream sees %s = %q, want %q", tt.name, got, tt.want)
		}
	}
	res, err := call(ctx, s, "getwd", "")
	if err != nil || text(t, res) != cwd {
		t.Errorf("getwd = %v %v, want %s", res, err, cwd)
	}
	s.Close()
	entries, err := os.ReadDir(cwd)
	if err != nil || len(entries) != 0 {
		t.Errorf("upstream working directory has %v (err %v), want nothing written", entries, err)
	}
	if strings.Contains(logs.String(), secret) || !strings.Contains(logs.String(), "upstream connected") {
		t.Errorf("logs carry the secret or lack the connect event:\n%s", logs.String())
	}
}

func TestKilledMidCallRestarts(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	ctx := context.Background()
	var (
		mu      sync.Mutex
		killed  int
		victim  int
		changed = make(chan string, 10)
	)
	var s *Set
	opts := SetOptions{Client: Options{
		// Long enough that the outage is observable before the restart.
		Backoff: Backoff{Initial: 1500 * time.Millisecond, Max: 5 * time.Second},
		// Kill the upstream when its first progress notification arrives:
		// the tool then still sleeps 100ms before it could answer.
		OnProgress: func(_ context.Context, server string, p *mcp.ProgressNotificationParams) {
			mu.Lock()
			defer mu.Unlock()
			if server != "a" || killed > 0 || p.ProgressToken != "tok-1" {
				return
			}
			killed = victim
			if err := syscall.Kill(victim, syscall.SIGKILL); err != nil {
				t.Errorf("kill: %v", err)
			}
		},
		OnToolsChanged: func(server string) { changed <- server },
	}}
	s = startSet(t, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`, "b": `+stdioEntry(bin, nil)+`}}`, nil, opts)
	if _, err := s.ListTools(ctx); err != nil {
		t.Fatal(err)
	}
	before := health(s, "a")
	if before.State != StateReady || before.PID == 0 {
		t.Fatalf("health before = %+v", before)
	}
	mu.Lock()
	victim = before.PID
	mu.Unlock()

	_, err := s.CallTool(ctx, &mcp.CallToolParamsRaw{Name: "a__test_tool_with_progress", Meta: mcp.Meta{"progressToken": "tok-1"}})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("call whose upstream died: err = %v, want ErrUnavailable", err)
	}
	mu.Lock()
	if killed == 0 {
		t.Fatal("no progress notification arrived: the upstream was never killed")
	}
	mu.Unlock()

	waitFor(t, "a down", func() bool { return health(s, "a").Restarts > 0 })
	if h := health(s, "a"); h.State != StateDown {
		t.Fatalf("a health after the kill = %+v, want down until the backoff passes", h)
	}
	// During the outage a's tools fail fast; b's keep working.
	if _, err := call(ctx, s, "a__test_simple_text", ""); !errors.Is(err, ErrUnavailable) {
		t.Errorf("call during outage: err = %v, want ErrUnavailable", err)
	}
	tools, err := s.ListTools(ctx)
	if err != nil || !slices.Contains(toolNames(tools), "a__test_simple_text") {
		t.Errorf("during outage ListTools = %d tools, %v; want a's last known tools kept", len(tools), err)
	}
	if _, err := call(ctx, s, "b__test_simple_text", ""); err != nil {
		t.Errorf("other upstream during a's outage: %v", err)
	}

	waitFor(t, "a restarted", func() bool { return health(s, "a").State == StateReady })
	after := health(s, "a")
	if after.Restarts != 1 || after.PID == before.PID || after.PID == 0 {
		t.Errorf("health after = %+v, want 1 restart and a new pid (was %d)", after, before.PID)
	}
	res, err := s.CallTool(ctx, &mcp.CallToolParamsRaw{Name: "a__test_tool_with_progress", Meta: mcp.Meta{"progressToken": "tok-2"}})
	if err != nil || text(t, res) != "tok-2" {
		t.Errorf("after restart: %v %v", res, err)
	}
	select {
	case server := <-changed:
		if server != "a" {
			t.Errorf("tools changed for %q, want a", server)
		}
	case <-time.After(10 * time.Second):
		t.Error("no tools-changed callback after the restart")
	}
	if h := health(s, "b"); h.Restarts != 0 || h.State != StateReady {
		t.Errorf("b health = %+v, want untouched", h)
	}
}

func TestMissingAtStart(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	missing := "/nonexistent/toolprof-no-such-server"
	doc := `{"mcpServers": {"good": ` + stdioEntry(bin, nil) + `, "gone": ` + stdioEntry(missing, nil) + `}}`
	t.Run("others serve", func(t *testing.T) {
		s := startSet(t, doc, nil, SetOptions{Client: Options{Backoff: Backoff{Initial: time.Hour}}})
		ctx := context.Background()
		tools, err := s.ListTools(ctx)
		if err != nil {
			t.Fatal(err)
		}
		names := toolNames(tools)
		if len(names) != len(testupstream.EverythingTools) || !strings.HasPrefix(names[0], "good__") {
			t.Errorf("tools = %q, want only good's", names)
		}
		if _, err := call(ctx, s, "good__test_simple_text", ""); err != nil {
			t.Error(err)
		}
		if _, err := call(ctx, s, "gone__anything", ""); !errors.Is(err, ErrUnavailable) {
			t.Errorf("call to gone: %v, want ErrUnavailable", err)
		}
		h := health(s, "gone")
		if h.State != StateDown || !strings.Contains(h.LastError, missing) {
			t.Errorf("gone health = %+v", h)
		}
		if h := health(s, "good"); h.State != StateReady {
			t.Errorf("good health = %+v", h)
		}
	})
	t.Run("installed later", func(t *testing.T) {
		// The command appears after start: the retries pick it up and its
		// tools join the list, announced as a tools change.
		later := filepath.Join(t.TempDir(), "everything-server")
		changed := make(chan string, 10)
		s := startSet(t, `{"mcpServers": {"good": `+stdioEntry(bin, nil)+`, "late": `+stdioEntry(later, nil)+`}}`, nil,
			SetOptions{Client: Options{Backoff: Backoff{Initial: 20 * time.Millisecond, Max: 100 * time.Millisecond},
				OnToolsChanged: func(server string) { changed <- server }}})
		if h := health(s, "late"); h.State != StateDown {
			t.Fatalf("late health = %+v before install", h)
		}
		data, err := os.ReadFile(bin)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(later+".tmp", data, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(later+".tmp", later); err != nil {
			t.Fatal(err)
		}
		select {
		case server := <-changed:
			if server != "late" {
				t.Errorf("changed %q, want late", server)
			}
		case <-time.After(20 * time.Second):
			t.Fatal("no tools change once the server could start")
		}
		tools, err := s.ListTools(context.Background())
		if err != nil || len(tools) != 2*len(testupstream.EverythingTools) {
			t.Errorf("after install: %d tools, %v", len(tools), err)
		}
	})
	t.Run("require all", func(t *testing.T) {
		ctx := context.Background()
		s, err := StartSet(ctx, resolve(t, doc, nil), SetOptions{RequireAll: true})
		if err == nil {
			s.Close()
			t.Fatal("StartSet succeeded with a missing server and RequireAll")
		}
		if !strings.Contains(err.Error(), `upstream "gone"`) || strings.Contains(err.Error(), `upstream "good"`) {
			t.Errorf("err = %v, want naming gone only", err)
		}
	})
}

func TestToolListChanged(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	changed := make(chan string, 10)
	s := startSet(t, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`, "b": `+stdioEntry(bin, nil)+`}}`, nil,
		SetOptions{Client: Options{OnToolsChanged: func(server string) { changed <- server }}})
	ctx := context.Background()
	tools, err := s.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const transient = "__transient_tool_for_list_changed"
	if slices.Contains(toolNames(tools), "b__"+transient) {
		t.Fatal("transient tool listed before the trigger")
	}
	if _, err := call(ctx, s, "b__test_trigger_tool_change", ""); err != nil {
		t.Fatal(err)
	}
	select {
	case server := <-changed:
		if server != "b" {
			t.Errorf("changed server = %q, want b", server)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no tools/list_changed callback")
	}
	tools, err = s.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	names := toolNames(tools)
	if !slices.Contains(names, "b__"+transient) || slices.Contains(names, "a__"+transient) {
		t.Errorf("after change, tools = %q", names)
	}
}

// freePort returns a port nothing listens on at the moment of the call.
func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func TestStreamableHTTPWithHeader(t *testing.T) {
	const secret = "http-secret-7a6b5c"
	bin := testupstream.EverythingServer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	srv := exec.Command(bin, "-http", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	waitFor(t, "everything-server listening", func() bool {
		c, err := net.Dial("tcp", addr)
		if err == nil {
			c.Close()
		}
		return err == nil
	})
	// A recording proxy in front of the server sees what toolprof sends.
	target, _ := url.Parse("http://" + addr)
	var (
		mu    sync.Mutex
		auths []string
	)
	proxy := httputil.NewSingleHostReverseProxy(target)
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		// Without full duplex, writing the response's headers drains and
		// closes the request body while the proxy's transport may still
		// read it for its end; that read fails, and the transport drops
		// the connection under the answer being copied (golang/go#40747).
		if err := http.NewResponseController(w).EnableFullDuplex(); err != nil {
			t.Errorf("proxy: %v", err)
		}
		proxy.ServeHTTP(w, r)
	}))
	t.Cleanup(front.Close)

	var logs bytes.Buffer
	s := startSet(t, `{"mcpServers": {"remote": {"type": "http", "url": "`+front.URL+`/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`,
		map[string]string{"TOKEN": secret}, SetOptions{Client: Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))}})
	ctx := context.Background()
	tools, err := s.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools) != len(testupstream.EverythingTools) {
		t.Errorf("listed %d tools over HTTP, want %d", len(tools), len(testupstream.EverythingTools))
	}
	res, err := call(ctx, s, "test_simple_text", "")
	if err != nil || text(t, res) != "This is a simple text response for testing." {
		t.Fatalf("call over HTTP: %v %v", res, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(auths) == 0 {
		t.Fatal("proxy saw no requests")
	}
	for i, a := range auths {
		if a != "Bearer "+secret {
			t.Errorf("request %d Authorization = %q, want the resolved header", i, a)
		}
	}
	hj, _ := json.Marshal(s.Health())
	if strings.Contains(logs.String(), secret) || strings.Contains(string(hj), secret) {
		t.Errorf("secret in logs or health:\n%s\n%s", logs.String(), hj)
	}
}

func TestScrubbedErrors(t *testing.T) {
	// The secret is in the URL of an HTTP server nothing listens on: the
	// connection error would quote it.
	const secret = "url-secret-1e2d3c"
	port := freePort(t)
	s := startSet(t, fmt.Sprintf(`{"mcpServers": {"r": {"type": "http", "url": "http://127.0.0.1:%d/mcp?key=${KEY}"}}}`, port),
		map[string]string{"KEY": secret}, SetOptions{Client: Options{Backoff: Backoff{Initial: time.Hour}}})
	_, err := call(context.Background(), s, "x", "")
	h := health(s, "r")
	if !errors.Is(err, ErrUnavailable) || h.State != StateDown || h.LastError == "" {
		t.Fatalf("err = %v, health = %+v", err, h)
	}
	if strings.Contains(err.Error(), secret) || strings.Contains(h.LastError, secret) {
		t.Errorf("secret leaked: err %q, last error %q", err, h.LastError)
	}
	if !strings.Contains(h.LastError, "/mcp?key=${KEY}") {
		t.Errorf("last error %q does not show the URL as written", h.LastError)
	}
}

func TestStreamableHTTPServerRestart(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	addr := fmt.Sprintf("127.0.0.1:%d", freePort(t))
	var srv *exec.Cmd
	startServer := func() {
		// Stateful, so that the restarted server no longer knows the session.
		srv = exec.Command(bin, "-http", addr, "-stateless=false")
		if err := srv.Start(); err != nil {
			t.Fatal(err)
		}
		waitFor(t, "everything-server listening", func() bool {
			c, err := net.Dial("tcp", addr)
			if err == nil {
				c.Close()
			}
			return err == nil
		})
	}
	stopServer := func() { srv.Process.Kill(); srv.Wait() }
	startServer()
	t.Cleanup(func() { stopServer() })
	s := startSet(t, `{"mcpServers": {"r": {"url": "http://`+addr+`/"}}}`, nil,
		SetOptions{Client: Options{Backoff: Backoff{Initial: 50 * time.Millisecond, Max: 200 * time.Millisecond}}})
	ctx := context.Background()
	if _, err := call(ctx, s, "test_simple_text", ""); err != nil {
		t.Fatal(err)
	}
	stopServer()
	_, err := call(ctx, s, "test_simple_text", "")
	var rpc *jsonrpc.Error
	if !errors.Is(err, ErrUnavailable) || errors.As(err, &rpc) {
		t.Fatalf("call with the server gone: err = %v, want ErrUnavailable and no JSON-RPC error", err)
	}
	startServer()
	waitFor(t, "calls succeed again", func() bool {
		_, err := call(ctx, s, "test_simple_text", "")
		return err == nil
	})
	if h := health(s, "r"); h.Restarts < 1 || h.State != StateReady {
		t.Errorf("health = %+v, want a new session after the server came back", h)
	}
}

func TestHungAtStartDoesNotHoldOthers(t *testing.T) {
	bin := testupstream.EverythingServer(t)
	sleep, err := exec.LookPath("sleep")
	if err != nil {
		t.Fatal(err)
	}
	// "sleep" never answers initialize, and the caller's context has no
	// deadline: only ConnectTimeout lets StartSet return.
	doc := resolve(t, `{"mcpServers": {"good": `+stdioEntry(bin, nil)+`, "mute": `+stdioEntry(sleep, nil, "30")+`}}`, nil)
	s, err := StartSet(context.Background(), doc,
		SetOptions{Client: Options{ConnectTimeout: 300 * time.Millisecond, TerminateDuration: 50 * time.Millisecond, Backoff: Backoff{Initial: time.Hour}}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	h := health(s, "mute")
	if h.State != StateDown || !strings.Contains(h.LastError, "deadline exceeded") {
		t.Errorf("mute health = %+v, want down after the connect timeout", h)
	}
	if _, err := call(context.Background(), s, "good__test_simple_text", ""); err != nil {
		t.Error(err)
	}
}

func TestListToolsAllDown(t *testing.T) {
	s := startSet(t, `{"mcpServers": {"gone": `+stdioEntry("/nonexistent/toolprof-x", nil)+`}}`, nil,
		SetOptions{Client: Options{Backoff: Backoff{Initial: time.Hour}}})
	tools, err := s.ListTools(context.Background())
	if !errors.Is(err, ErrUnavailable) || tools != nil {
		t.Errorf("ListTools = %d tools, %v; want ErrUnavailable when no upstream was ever listed", len(tools), err)
	}
	var rpc *jsonrpc.Error
	if _, err := call(context.Background(), s, "anything", ""); !errors.Is(err, ErrUnavailable) || errors.As(err, &rpc) {
		t.Errorf("call with the only upstream down: %v, want ErrUnavailable", err)
	}
}

func TestMetaForwarded(t *testing.T) {
	s := startSet(t, `{"mcpServers": {"h": `+helperEntry(t, "H", "", 0)+`}}`, nil, SetOptions{Client: Options{ProtocolVersion: sessionlessVersion}})
	// The downstream client's own hop keys (SEP-2575) arrive with its call;
	// the rest of _meta is the request's and must reach the upstream.
	meta := mcp.Meta{
		"progressToken":               "p-1",
		"x-trace":                     "abc",
		mcp.MetaKeyProtocolVersion:    "1999-01-01",
		mcp.MetaKeyClientInfo:         map[string]any{"name": "downstream-client"},
		mcp.MetaKeyClientCapabilities: map[string]any{"bogus": true},
	}
	before := fmt.Sprint(meta)
	res, err := s.CallTool(context.Background(), &mcp.CallToolParamsRaw{Name: "meta", Meta: meta})
	if err != nil {
		t.Fatal(err)
	}
	var seen map[string]any
	if err := json.Unmarshal([]byte(text(t, res)), &seen); err != nil {
		t.Fatal(err)
	}
	if seen["progressToken"] != "p-1" || seen["x-trace"] != "abc" {
		t.Errorf("request meta lost: %v", seen)
	}
	if v, ok := seen[mcp.MetaKeyProtocolVersion]; !ok || v == "1999-01-01" {
		t.Errorf("downstream protocol version reached the upstream: %v", seen)
	}
	if info, ok := seen[mcp.MetaKeyClientInfo].(map[string]any); !ok || info["name"] != "toolprof" {
		t.Errorf("client info = %v, want toolprof's own", info)
	}
	if caps, ok := seen[mcp.MetaKeyClientCapabilities].(map[string]any); !ok || caps["bogus"] != nil {
		t.Errorf("downstream capabilities reached the upstream: %v", caps)
	}
	if after := fmt.Sprint(meta); after != before {
		t.Errorf("caller's _meta changed:\nbefore %s\nafter  %s", before, after)
	}
}
