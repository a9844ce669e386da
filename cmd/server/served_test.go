package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/testupstream"
)

// npmServer returns the path of an npm MCP server that e2e/node_modules
// holds (make e2e-deps installs the pinned ones), or skips the test.
func npmServer(t *testing.T, name string) string {
	t.Helper()
	bin, err := filepath.Abs(filepath.Join("..", "..", "e2e", "node_modules", ".bin", name))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(bin); err != nil {
		t.Skipf("e2e/node_modules lacks %s (run make e2e-deps to install the pinned npm servers): %v", name, err)
	}
	return bin
}

// direct connects a client straight to the server command, without the
// gateway: what the server itself says.
func direct(t *testing.T, command string, args ...string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
		Connect(ctx, &mcp.CommandTransport{Command: exec.Command(command, args...)}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect to %s directly: %v", command, err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// connectPath opens a client session on path (e.g. "/mcp/NAME").
func (l *launched) connectPath(t *testing.T, path string) *mcp.ClientSession {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1"}, nil).
		Connect(ctx, &mcp.StreamableClientTransport{Endpoint: l.base + path, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: "2025-11-25"})
	if err != nil {
		t.Fatalf("connect %s: %v\nstderr:\n%s", path, err, l.stderr)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// untilTerm are sh arguments running command, stdin kept, until SIGTERM,
// which it takes as a clean exit. The npm everything-server keeps running
// once its stdin closes (its timers hold node up), so the gateway
// terminates it on shutdown, and an exit by signal would fail the
// gateway's own exit status, which these tests do not examine.
func untilTerm(command string) []string {
	return []string{"-c", `exec 3<&0; "$0" <&3 3<&- & child=$!; trap 'kill $child; exit 0' TERM; wait $child`, command}
}

// writeProfilesFiles writes a generated profiles file and profiles.toml
// beside it, and returns the generated file's path.
func writeProfilesFiles(t *testing.T, generated, policy string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(path, []byte(generated), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles.toml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestRealUpstreamInstructions: the npm everything-server's own
// instructions (1,579 bytes) reach the client through the gateway after the
// profile's, under a heading naming the server; profiles.toml
// upstream_instructions drops or replaces them.
func TestRealUpstreamInstructions(t *testing.T) {
	everything := npmServer(t, "mcp-server-everything")
	sent := direct(t, everything).InitializeResult().Instructions
	if len(sent) < 1000 {
		t.Fatalf("the everything-server sent %d bytes of instructions, want its instructions.md", len(sent))
	}
	profilesPath := writeProfilesFiles(t, `version = 1
default = "keep"

[[profile]]
name = "keep"
tools = ["echo"]
instructions = "Keep profile."

[[profile]]
name = "dropped"
tools = ["echo"]
instructions = "Dropped profile."

[[profile]]
name = "replaced"
tools = ["echo"]
`, `version = 1

[[profile]]
name = "dropped"
upstream_instructions = "drop"

[[profile]]
name = "replaced"
[profile.upstream_instructions]
everything = "Call echo to test."
`)
	file := writeLaunch(t, map[string]any{"everything": map[string]any{"command": "sh", "args": untilTerm(everything)}})
	l := startLaunch(t, file, nil, "--profiles", profilesPath)
	l.waitServing(t)
	heading := "## Instructions of MCP server \"everything\"\n\n"
	cases := []struct{ path, want string }{
		{"/mcp", "Keep profile.\n\n" + heading + strings.TrimRight(sent, " \t\r\n")},
		{"/mcp/dropped", "Dropped profile."},
		{"/mcp/replaced", heading + "Call echo to test."},
	}
	for _, c := range cases {
		if got := l.connectPath(t, c.path).InitializeResult().Instructions; got != c.want {
			t.Errorf("%s: instructions (%d bytes)\n%.300q\nwant (%d bytes)\n%.300q", c.path, len(got), got, len(c.want), c.want)
		}
	}
}

// rawListing runs cmd as a stdio MCP server and lists its tools with
// hand-written JSON-RPC lines (no SDK in between): every tool definition
// exactly as the server sent it, over every page.
func rawListing(t *testing.T, cmd *exec.Cmd) []json.RawMessage {
	t.Helper()
	return rawListingOf(t, cmd, 0)
}

// rawListingOf is rawListing, listing again until at least want tools are
// listed or 30 seconds passed: a gateway started with --launch serves each
// upstream's tools once it is ready.
func rawListingOf(t *testing.T, cmd *exec.Cmd, want int) []json.RawMessage {
	t.Helper()
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close()
		cmd.Process.Kill()
		cmd.Wait()
	}()
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 64<<20)
	call := func(id int, method, params string) json.RawMessage {
		t.Helper()
		if _, err := fmt.Fprintf(stdin, `{"jsonrpc":"2.0","id":%d,"method":%q,"params":%s}`+"\n", id, method, params); err != nil {
			t.Fatal(err)
		}
		for sc.Scan() {
			var resp struct {
				ID     *int            `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal(sc.Bytes(), &resp) != nil || resp.ID == nil || *resp.ID != id {
				continue // a notification, or a request of the server's
			}
			if resp.Error != nil {
				t.Fatalf("%s: %s", method, resp.Error)
			}
			return resp.Result
		}
		t.Fatalf("%s: no answer (%v)", method, sc.Err())
		return nil
	}
	call(1, "initialize", `{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}`)
	fmt.Fprintln(stdin, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	id := 1
	list := func() []json.RawMessage {
		var tools []json.RawMessage
		params := `{}`
		for {
			id++
			var page struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			}
			if err := json.Unmarshal(call(id, "tools/list", params), &page); err != nil {
				t.Fatal(err)
			}
			tools = append(tools, page.Tools...)
			if page.NextCursor == "" {
				return tools
			}
			params = fmt.Sprintf(`{"cursor":%q}`, page.NextCursor)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		tools := list()
		if len(tools) >= want || time.Now().After(deadline) {
			return tools
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// canonical is v's JSON with object keys sorted and no insignificant space.
func canonical(t *testing.T, raw json.RawMessage) string {
	t.Helper()
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// rawHTTPListing lists the tools of the stateless streamable HTTP server
// at url with hand-written POSTs (no SDK in between), over every page.
func rawHTTPListing(t *testing.T, url string) []json.RawMessage {
	t.Helper()
	var tools []json.RawMessage
	params := `{}`
	for id := 1; ; id++ {
		req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/list","params":%s}`, id, params)))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Accept", "application/json, text/event-stream")
		req.Header.Set("MCP-Protocol-Version", "2025-11-25")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			t.Fatalf("tools/list over HTTP: %s %v\n%s", resp.Status, err, body)
		}
		if strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
			for line := range strings.Lines(string(body)) {
				if data, ok := strings.CutPrefix(strings.TrimRight(line, "\r\n"), "data: "); ok {
					body = []byte(data) // the stream of one call holds its answer alone
				}
			}
		}
		var msg struct {
			Result struct {
				Tools      []json.RawMessage `json:"tools"`
				NextCursor string            `json:"nextCursor"`
			} `json:"result"`
		}
		if err := json.Unmarshal(body, &msg); err != nil {
			t.Fatalf("tools/list over HTTP: %v\n%s", err, body)
		}
		tools = append(tools, msg.Result.Tools...)
		if msg.Result.NextCursor == "" {
			return tools
		}
		params = fmt.Sprintf(`{"cursor":%q}`, msg.Result.NextCursor)
	}
}

// everythingHTTP starts the everything-server over stateless streamable
// HTTP and returns its endpoint.
func everythingHTTP(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	srv := exec.Command(bins.everything, "-http", addr)
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("everything-server -http %s: not listening", addr)
		}
	}
	return "http://" + addr + "/mcp"
}

// executionHTTP starts a go-sdk server over stateless streamable HTTP
// whose tools carry an execution member, two to a page, and returns its
// endpoint.
func executionHTTP(t *testing.T) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "tasks", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for _, name := range []string{"a", "b", "c"} {
		s.AddTool(&mcp.Tool{Name: name, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	testupstream.ListWithExecution(s)
	srv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{Stateless: true}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestServedToolsAsListed: every tool the gateway lists is the upstream's
// definition byte for byte (after JSON canonicalisation) but for the one
// _meta key the gateway adds: execution (taskSupport) and annotations the
// upstream left out are neither dropped nor filled in, whether the
// upstream is a stdio or a streamable HTTP server. Upstreams: the go-sdk
// everything-server over stdio and over HTTP, the npm filesystem server,
// and a go-sdk server over HTTP listing execution members.
func TestServedToolsAsListed(t *testing.T) {
	stdio := func(command ...string) (map[string]any, []json.RawMessage) {
		return map[string]any{"command": command[0], "args": command[1:]}, rawListing(t, exec.Command(command[0], command[1:]...))
	}
	remote := func(url string) (map[string]any, []json.RawMessage) {
		return map[string]any{"type": "http", "url": url}, rawHTTPListing(t, url)
	}
	cases := []struct {
		name     string
		upstream func(t *testing.T) (map[string]any, []json.RawMessage)
	}{
		{"everything-server", func(*testing.T) (map[string]any, []json.RawMessage) { return stdio(bins.everything) }},
		{"npm filesystem server", func(t *testing.T) (map[string]any, []json.RawMessage) {
			return stdio(npmServer(t, "mcp-server-filesystem"), t.TempDir())
		}},
		{"everything-server over HTTP", func(t *testing.T) (map[string]any, []json.RawMessage) { return remote(everythingHTTP(t)) }},
		{"execution over HTTP", func(t *testing.T) (map[string]any, []json.RawMessage) { return remote(executionHTTP(t)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			entry, listed := c.upstream(t)
			want := map[string]string{}
			for _, raw := range listed {
				var tool struct{ Name string }
				json.Unmarshal(raw, &tool)
				want[tool.Name] = canonical(t, raw)
			}
			gw := exec.Command(bins.server, "--telemetry", t.TempDir(), "--launch", writeLaunch(t, map[string]any{"only": entry}))
			served := rawListingOf(t, gw, len(want))
			if len(served) != len(want) {
				t.Errorf("the gateway lists %d tools, the upstream %d", len(served), len(want))
			}
			for _, raw := range served {
				var tool map[string]any
				if err := json.Unmarshal(raw, &tool); err != nil {
					t.Fatal(err)
				}
				meta, _ := tool["_meta"].(map[string]any)
				if _, ok := meta[gateway.MetaEffect]; !ok {
					t.Errorf("tool %v lacks _meta %q", tool["name"], gateway.MetaEffect)
				}
				delete(meta, gateway.MetaEffect)
				name, _ := tool["name"].(string)
				upstreamHas := strings.Contains(want[name], `"_meta":`)
				if len(meta) == 0 && !upstreamHas {
					delete(tool, "_meta")
				}
				b, _ := json.Marshal(tool)
				if got := canonical(t, b); got != want[name] {
					t.Errorf("tool %q served as\n%s\nthe upstream lists\n%s", name, got, want[name])
				}
			}
		})
	}
}
