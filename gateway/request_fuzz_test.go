package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/toolprof/toolprof/internal/rawmcp"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/profiles"
)

// rawSession is one streamable HTTP session driven with hand-written
// request bodies, so that any bytes can be sent as a tools/call's
// arguments.
type rawSession struct {
	url, id string
}

const fuzzProtocol = "2025-11-25"

func (s *rawSession) post(t testing.TB, body string) (int, []byte) {
	req, err := rawmcp.NewPost(context.Background(), s.url, s.id, fuzzProtocol, body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if id := resp.Header.Get("Mcp-Session-Id"); id != "" {
		s.id = id
	}
	return resp.StatusCode, b
}

// open initializes the session.
func (s *rawSession) open(t testing.TB) {
	s.id = ""
	status, b := s.post(t, `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+fuzzProtocol+`","capabilities":{},"clientInfo":{"name":"fuzz","version":"0"}}}`)
	if status != http.StatusOK || s.id == "" {
		t.Fatalf("initialize: %d %s", status, b)
	}
	if status, b := s.post(t, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); status != http.StatusAccepted {
		t.Fatalf("initialized: %d %s", status, b)
	}
}

// rpcReply is a JSON-RPC response as the fuzz test checks it.
type rpcReply struct {
	ID     json.RawMessage `json:"id"`
	Result *struct {
		IsError           bool            `json:"isError"`
		StructuredContent json.RawMessage `json:"structuredContent"`
		Content           []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
	} `json:"result"`
	Error *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// sseMessages returns the JSON of each "data:" line of an event stream, or
// the body itself when it is plain JSON.
func sseMessages(b []byte) [][]byte {
	if t := bytes.TrimSpace(b); len(t) > 0 && t[0] == '{' {
		return [][]byte{t}
	}
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if d, ok := bytes.CutPrefix(sc.Bytes(), []byte("data:")); ok {
			out = append(out, bytes.Clone(bytes.TrimSpace(d)))
		}
	}
	return out
}

// FuzzToolsCallRequest sends tools/call with any name and any bytes as its
// arguments through the gateway's HTTP handler, over a real loopback
// connection, to the core profile. Invariants: the server never panics;
// only tools core allows ever reach the upstream, and only with arguments
// that are a JSON object (or none); every answer is a well-formed JSON-RPC
// error (code and message) or a result, and every error result is a
// well-formed envelope with a documented code.
func FuzzToolsCallRequest(f *testing.F) {
	cat := everythingCatalog()
	up := &recordingFakeUpstream{tools: cat.Tools}
	set, err := profiles.Load("testdata/profiles.generated.toml")
	if err != nil {
		f.Fatal(err)
	}
	resolved, err := set.Resolve(cat.Tools)
	if err != nil {
		f.Fatal(err)
	}
	g, err := New(context.Background(), Options{Upstream: up, Profiles: resolved})
	if err != nil {
		f.Fatal(err)
	}
	allowed := g.cat().listed["core"]
	srv := httptest.NewUnstartedServer(g.HTTPHandler())
	var panics syncLog
	srv.Config.ErrorLog = log.New(&panics, "", 0)
	srv.Start()
	f.Cleanup(func() {
		g.Close()
		srv.Close()
	})
	s := &rawSession{url: srv.URL + "/mcp"}
	s.open(f)

	for _, name := range testupstream.EverythingTools[:4] {
		f.Add(name, []byte(`{"message":"hi"}`))
	}
	f.Add("test_simple_text", []byte(`{}`))
	f.Add("test_simple_text", []byte(`null`))
	f.Add("test_simple_text", []byte(`[1,2]`))
	f.Add("test_simple_text", []byte(`{"a":`))
	f.Add("test_simple_text", []byte(`"}}`))
	f.Add("no_such_tool", []byte(`{}`))
	f.Add("", []byte(``))
	f.Add("test_sampling", []byte(`{"prompt":"x"}`))
	f.Add("get_operating_context", []byte(`{"section":"x"}`))
	f.Add("test_simple_text\u0000", []byte("{\"\\ud800\":1}"))

	var id int
	f.Fuzz(func(t *testing.T, name string, args []byte) {
		id++
		n, _ := json.Marshal(name)
		body := fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":%s,"arguments":%s}}`, id+1, n, args)
		status, b := s.post(t, body)
		if status == http.StatusNotFound { // the session ended: open another
			s.open(t)
			status, b = s.post(t, body)
		}
		if p := panics.String(); strings.Contains(p, "panic") {
			t.Fatalf("the server panicked on %s:\n%s", body, p)
		}
		for _, c := range up.forwarded() {
			if !slices.Contains(allowed, c) {
				t.Fatalf("%q reached the upstream outside core (request %s)", c, body)
			}
		}
		for _, a := range up.forwardedArgs() {
			if a := bytes.TrimSpace(a); len(a) > 0 && string(a) != "null" && (a[0] != '{' || !json.Valid(a)) {
				t.Fatalf("arguments %q reached the upstream (request %s)", a, body)
			}
		}
		if status >= 500 {
			t.Fatalf("status %d for %s: %s", status, body, b)
		}
		if status != http.StatusOK {
			return // a refused HTTP request (such as unparseable JSON): nothing ran
		}
		msgs := sseMessages(b)
		if len(msgs) == 0 {
			t.Fatalf("no answer to %s: %s", body, b)
		}
		for _, m := range msgs {
			var r rpcReply
			if err := json.Unmarshal(m, &r); err != nil {
				t.Fatalf("answer %s is not JSON: %v", m, err)
			}
			switch {
			case r.Error != nil:
				if r.Error.Code == 0 || r.Error.Message == "" {
					t.Fatalf("malformed JSON-RPC error %s", m)
				}
			case r.Result != nil && r.Result.IsError && len(r.Result.StructuredContent) > 0:
				var env Envelope
				if err := json.Unmarshal(r.Result.StructuredContent, &env); err != nil || !slices.Contains(Codes(), env.Code) ||
					env.Message == "" || env.Category == "" || env.SuggestedActions == nil {
					t.Fatalf("malformed envelope %s", m)
				}
			case r.Result != nil:
			default:
				t.Fatalf("answer %s is neither a result nor an error", m)
			}
		}
	})
}

// syncLog is a log destination safe for concurrent writes.
type syncLog struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *syncLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

func (l *syncLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
