package upstream

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"testing/iotest"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
)

// httpToolServer is a real go-sdk server over streamable HTTP listing
// tools a, b and c with execution, two to a page.
func httpToolServer(t *testing.T, jsonResponse bool) string {
	t.Helper()
	s := mcp.NewServer(&mcp.Implementation{Name: "http-tools", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for _, name := range []string{"a", "b", "c"} {
		s.AddTool(&mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{}, nil
		})
	}
	testupstream.ListWithExecution(s)
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: jsonResponse})
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestRawToolsAsListed: a server's tools are kept as it listed them,
// members mcp.Tool drops included, whether it is a stdio server or an HTTP
// one answering with an SSE stream or with application/json, across pages.
func TestRawToolsAsListed(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name  string
		entry func(t *testing.T) string
		tools []string
	}{
		{"stdio", func(*testing.T) string {
			return stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_TOOLS": "a,b,c", "HELPER_PAGE_SIZE": "2", "HELPER_EXECUTION": "1"})
		}, []string{"a", "b", "c", "getenv", "getwd"}},
		{"HTTP, SSE answers", func(t *testing.T) string {
			return `{"type": "http", "url": "` + httpToolServer(t, false) + `"}`
		}, []string{"a", "b", "c"}},
		{"HTTP, JSON answers", func(t *testing.T) string {
			return `{"type": "http", "url": "` + httpToolServer(t, true) + `"}`
		}, []string{"a", "b", "c"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := startSet(t, `{"mcpServers": {"only": `+c.entry(t)+`}}`, nil, SetOptions{})
			tools, err := s.ListTools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			parsed := map[string]*mcp.Tool{}
			for _, tool := range tools {
				parsed[tool.Name] = tool
			}
			for _, name := range c.tools {
				if parsed[name] == nil {
					t.Fatalf("tool %q not listed; listed %q", name, toolNames(tools))
				}
				raw, ok := s.RawTool(name)
				if !ok {
					t.Errorf("RawTool(%q): no definition kept", name)
					continue
				}
				var def struct {
					Name      string          `json:"name"`
					Execution json.RawMessage `json:"execution"`
				}
				if err := json.Unmarshal(raw, &def); err != nil {
					t.Fatal(err)
				}
				if def.Name != name || string(def.Execution) != testupstream.Execution {
					t.Errorf("RawTool(%q) = %s, want the definition with execution %s", name, raw, testupstream.Execution)
				}
			}
		})
	}
}

// TestRawSSEBody: the SSE reader takes each event's message however the
// stream is cut into reads, with CRLF or LF line endings, multi-line data
// and other fields, skips an event over the limit and keeps the next, and
// passes every byte through unchanged.
func TestRawSSEBody(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}}`
	multi := strings.Replace(list, `"tools":`, "\ndata: \"tools\":", 1)
	huge := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"t","description":"` + strings.Repeat("x", 300) + `","inputSchema":{"type":"object"}}]}}`
	cases := []struct {
		name   string
		stream string
		want   bool // the definition with execution is kept
	}{
		{"LF", "event: message\nid: 1\ndata: " + list + "\n\n", true},
		{"CRLF", "event: message\r\ndata: " + list + "\r\n\r\n", true},
		{"data on two lines", ": comment\ndata: " + multi + "\n\n", true},
		{"no blank line yet", "data: " + list + "\n", false},
		{"over the limit, then kept", "data: " + huge + "\n\ndata: " + list + "\n\n", true},
		{"over the limit only", "data: " + huge + "\n\n", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r rawTools
			r.request(&jsonrpc.Request{ID: mustID(t, 7), Method: "tools/list"})
			body := &rawSSEBody{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(c.stream))), r: &r, limit: 250}
			got, err := io.ReadAll(body)
			if err != nil || string(got) != c.stream {
				t.Fatalf("read %q, %v; want the stream unchanged", got, err)
			}
			raw, ok := r.tool("t")
			if ok != c.want || ok && !strings.Contains(string(raw), `"execution"`) {
				t.Errorf("tool t kept = %v (%s), want %v", ok, raw, c.want)
			}
		})
	}
}

func mustID(t *testing.T, v int64) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(float64(v))
	if err != nil {
		t.Fatal(err)
	}
	return id
}
