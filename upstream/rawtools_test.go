package upstream

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"sync/atomic"
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
// and other fields, and passes every byte through unchanged; an event over
// the limit is replaced by the too-large error response to its id (found
// in it, or the stream's call when the server writes it last, or none for
// a notification), and the next is kept.
func TestRawSSEBody(t *testing.T) {
	list := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"t","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"}}]}}`
	multi := strings.Replace(list, `"tools":`, "\ndata: \"tools\":", 1)
	huge := `{"jsonrpc":"2.0","id":7,"result":{"tools":[{"name":"t","description":"` + strings.Repeat("x", 300) + `","inputSchema":{"type":"object"}}]}}`
	idLast := `{"result":{"tools":[{"name":"t","description":"` + strings.Repeat("x", 300) + `"}]},"jsonrpc":"2.0","id":7}`
	note := `{"jsonrpc":"2.0","method":"notifications/message","params":{"data":"` + strings.Repeat("x", 300) + `"}}`
	tooLarge := func(size int) string {
		return "data: " + string(tooLargeResponse(json.RawMessage("7"), int64(size), 250)) + "\n\n"
	}
	cases := []struct {
		name   string
		stream string
		want   bool   // the definition with execution is kept
		out    string // what the SDK reads; "" for the stream unchanged
	}{
		{"LF", "event: message\nid: 1\ndata: " + list + "\n\n", true, ""},
		{"CRLF", "event: message\r\ndata: " + list + "\r\n\r\n", true, ""},
		{"data on two lines", ": comment\ndata: " + multi + "\n\n", true, ""},
		{"no blank line yet", "data: " + list + "\n", false, ""},
		{"over the limit, then kept", "data: " + huge + "\n\ndata: " + list + "\n\n", true, tooLarge(len(huge)+8) + "data: " + list + "\n\n"},
		{"over the limit only", "id: 3\ndata: " + huge + "\n\n", false, "id: 3\n" + tooLarge(len(huge)+14)},
		{"over the limit, id last", "data: " + idLast + "\n\n", false, tooLarge(len(idLast) + 8)},
		{"notification over the limit dropped", "data: " + note + "\n\ndata: " + list + "\n\n", true, "data: " + list + "\n\n"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var r rawTools
			id, _ := r.request(&jsonrpc.Request{ID: mustID(t, 7), Method: "tools/list"})
			body := &rawSSEBody{ReadCloser: io.NopCloser(iotest.OneByteReader(strings.NewReader(c.stream))), r: &r, limit: 250,
				ids: []jsonrpc.ID{id}, call: json.RawMessage("7")}
			got, err := io.ReadAll(body)
			want := cmp.Or(c.out, c.stream)
			if err != nil || string(got) != want {
				t.Fatalf("read %q, %v; want %q", got, err, want)
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

// fakeUnansweredLists stands in front of a real go-sdk server over
// streamable HTTP (httpToolServer's, answering with application/json) and
// answers tools/list itself with an SSE stream per post; a GET resuming a
// stream (Last-Event-ID) gets resume, fed the real server's answer to the
// listing. A fake, since the real server does not end a stream unanswered.
type fakeUnansweredLists struct {
	real   http.Handler
	post   func(w http.ResponseWriter)
	resume func(w http.ResponseWriter, answer []byte)

	mu     sync.Mutex
	answer []byte // the real server's answer to the last tools/list
}

func (f *fakeUnansweredLists) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	if req.Method == http.MethodGet && req.Header.Get("Last-Event-ID") != "" {
		f.mu.Lock()
		answer := f.answer
		f.mu.Unlock()
		w.Header().Set("Content-Type", "text/event-stream")
		f.resume(w, answer)
		return
	}
	if req.Method != http.MethodPost {
		f.real.ServeHTTP(w, req)
		return
	}
	body, err := io.ReadAll(req.Body)
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	req.Body = io.NopCloser(bytes.NewReader(body))
	var m struct{ Method string }
	if json.Unmarshal(body, &m) != nil || m.Method != "tools/list" {
		f.real.ServeHTTP(w, req)
		return
	}
	rec := httptest.NewRecorder()
	f.real.ServeHTTP(rec, req)
	f.mu.Lock()
	f.answer = rec.Body.Bytes()
	f.mu.Unlock()
	w.Header().Set("Content-Type", "text/event-stream")
	f.post(w)
}

// TestRawToolsForgetsUnansweredLists: a tools/list call whose HTTP answer
// ends without its response (a stream that ends, breaks or is refused, a
// resumption that ends too) is forgotten once the answer ends, so that
// calls awaiting responses do not pile up; one whose stream the client
// resumes is still read on the resumption.
func TestRawToolsForgetsUnansweredLists(t *testing.T) {
	write := func(s string) func(w http.ResponseWriter) {
		return func(w http.ResponseWriter) { io.WriteString(w, s) }
	}
	resumable := write("id: s1\nretry: 1\ndata:\n\n") // a priming event, then the end
	answered := func(w http.ResponseWriter, answer []byte) {
		io.WriteString(w, "id: s2\ndata: "+string(bytes.TrimSpace(answer))+"\n\n")
	}
	cases := []struct {
		name    string
		post    func(w http.ResponseWriter)
		resume  func(w http.ResponseWriter, answer []byte)
		wantRaw bool // the listing is read, on the resumption
	}{
		{name: "a stream that ends unanswered", post: write(": nothing\n\n")},
		{name: "a stream that breaks", post: func(w http.ResponseWriter) {
			io.WriteString(w, "data: {\"jsonrpc\":")
			w.(http.Flusher).Flush()
			conn, _, err := http.NewResponseController(w).Hijack()
			if err == nil {
				conn.Close()
			}
		}},
		{name: "refused", post: func(w http.ResponseWriter) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"refused"}}`)
		}},
		{name: "a resumption that ends unanswered", post: resumable, resume: func(w http.ResponseWriter, _ []byte) {
			io.WriteString(w, ": nothing\n\n")
		}},
		{name: "answered on the resumption", post: resumable, resume: answered, wantRaw: true},
		// The SDK keeps the last event id when an event's id is empty.
		{name: "an empty id keeps the last", post: write("id: s1\nretry: 1\ndata:\n\nid:\ndata:\n\n"), resume: answered, wantRaw: true},
		// The SDK retries a resumption that fails in transport with the
		// same Last-Event-ID. The post's connection is closed, so that the
		// failed GET is on a new one, which net/http does not retry itself.
		{name: "a resumption that fails in transport, retried", post: func(w http.ResponseWriter) {
			w.Header().Set("Connection", "close")
			resumable(w)
		}, resume: func() func(w http.ResponseWriter, answer []byte) {
			var failed atomic.Bool
			return func(w http.ResponseWriter, answer []byte) {
				if !failed.Swap(true) {
					if conn, _, err := http.NewResponseController(w).Hijack(); err == nil {
						conn.Close()
					}
					return
				}
				answered(w, answer)
			}
		}(), wantRaw: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "http-tools", Version: "1"}, nil)
			s.AddTool(&mcp.Tool{Name: "a", InputSchema: map[string]any{"type": "object"}}, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return &mcp.CallToolResult{}, nil
			})
			testupstream.ListWithExecution(s)
			fake := &fakeUnansweredLists{
				real:   mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{JSONResponse: true}),
				post:   c.post,
				resume: c.resume,
			}
			srv := httptest.NewServer(fake)
			t.Cleanup(srv.Close)
			set := startSet(t, `{"mcpServers": {"only": {"type": "http", "url": "`+srv.URL+`"}}}`, nil, SetOptions{RequireAll: true})
			client := set.Clients()[0]
			_, err := client.ListTools(context.Background())
			if c.wantRaw != (err == nil) {
				t.Fatalf("ListTools: %v, want it to succeed only when answered", err)
			}
			if _, ok := client.RawTool("a"); ok != c.wantRaw {
				t.Errorf("RawTool(a) kept = %v, want %v", ok, c.wantRaw)
			}
			if pending, resumes := client.raw.awaiting(); pending != 0 || resumes != 0 {
				t.Errorf("%d tools/list calls await responses, %d streams a resumption; want none once the answer ended", pending, resumes)
			}
		})
	}
}

// TestRawToolsResumesBounded: calls whose streams ended resumable but are
// never resumed (the client gave up) are forgotten past maxResumes, so
// they do not pile up either.
func TestRawToolsResumesBounded(t *testing.T) {
	var r rawTools
	for i := range 3 * maxResumes {
		id := mustID(t, int64(i+1))
		r.request(&jsonrpc.Request{ID: id, Method: "tools/list"})
		r.unanswered([]jsonrpc.ID{id}, fmt.Sprintf("stream-%d_0", i))
	}
	if pending, resumes := r.awaiting(); pending > maxResumes || resumes > maxResumes {
		t.Errorf("%d calls pending, %d streams awaiting a resumption; want at most %d of each", pending, resumes, maxResumes)
	}
}
