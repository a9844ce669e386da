package upstream

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/launch"
)

// redirectTarget records the credentials of every request it receives.
type redirectTarget struct {
	*httptest.Server
	mu  sync.Mutex
	got []string // "X-Api-Key|Authorization" of each request
}

func newRedirectTarget(t *testing.T) *redirectTarget {
	rt := &redirectTarget{}
	rt.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rt.mu.Lock()
		rt.got = append(rt.got, r.Header.Get("X-Api-Key")+"|"+r.Header.Get("Authorization"))
		rt.mu.Unlock()
		http.Error(w, "not here", http.StatusNotFound)
	}))
	t.Cleanup(rt.Close)
	return rt
}

func (rt *redirectTarget) received() []string {
	rt.mu.Lock()
	defer rt.mu.Unlock()
	return append([]string(nil), rt.got...)
}

// TestRedirectToAnotherOriginRefused: an HTTP upstream that redirects to
// another origin (another host name for the same address, another port)
// gets no declared header and no OAuth token there; the connection fails
// naming the upstream and the target's origin, never the target's query.
// A redirect within the server's origin is followed.
func TestRedirectToAnotherOriginRefused(t *testing.T) {
	const secret = "sekrit-header-value"
	elsewhere := newRedirectTarget(t)
	// localhost and 127.0.0.1 are one address but two origins.
	otherHost := strings.Replace(elsewhere.URL, "127.0.0.1", "localhost", 1)
	for _, tt := range []struct {
		name   string
		target string // where the upstream redirects; "" for its own /mcp
		oauth  bool
	}{
		{"declared headers, another host", otherHost, false},
		{"declared headers, another port", elsewhere.URL, false},
		{"oauth token, another host", otherHost, true},
		{"same origin followed", "", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := mcp.NewServer(&mcp.Implementation{Name: "moved", Version: "1"}, nil)
			mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "echoed"}}}, nil, nil
			})
			served := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
			var srv launch.ResolvedServer
			var opts Options
			redirect := func(w http.ResponseWriter, r *http.Request) {
				target := tt.target + "/mcp?leak=query-secret"
				if tt.target == "" {
					target = "/mcp"
				}
				http.Redirect(w, r, target, http.StatusTemporaryRedirect)
			}
			if tt.oauth {
				p := newProtected(t, "read")
				p.login(t, []string{"read"}, time.Hour)
				p.handler = http.HandlerFunc(redirect)
				srv, opts = p.srv, Options{Tokens: p.store}
			} else {
				ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if r.URL.Path == "/old" {
						redirect(w, r)
						return
					}
					served.ServeHTTP(w, r)
				}))
				t.Cleanup(ts.Close)
				doc := launch.Document{Servers: []launch.Server{{Name: "moved", Transport: launch.StreamableHTTP, URL: ts.URL + "/old", Source: "x.mcp.json:1",
					Headers: map[string]string{"X-Api-Key": "${KEY}", "Authorization": "Bearer ${KEY}"}}}}
				r, err := doc.Resolve(func(string) (string, bool) { return secret, true })
				if err != nil {
					t.Fatal(err)
				}
				srv = r.Servers[0]
			}
			before := len(elsewhere.received())
			opts.ConnectTimeout = 5 * time.Second
			opts.Backoff = Backoff{Initial: time.Hour, Max: time.Hour}
			c := NewClient(srv, opts)
			defer c.Close()
			err := c.Start(context.Background())
			if got := elsewhere.received()[before:]; len(got) > 0 {
				t.Errorf("the other origin received %q", got)
			}
			if tt.target == "" {
				if err != nil {
					t.Fatalf("Start: %v", err)
				}
				if _, err := c.CallTool(context.Background(), &mcp.CallToolParamsRaw{Name: "echo", Arguments: json.RawMessage(`{}`)}); err != nil {
					t.Errorf("call after a same-origin redirect: %v", err)
				}
				return
			}
			if err == nil {
				t.Fatal("Start succeeded through a redirect to another origin")
			}
			wantOrigin := tt.target
			for _, msg := range []string{err.Error(), c.Health().LastError} {
				if !strings.Contains(msg, `upstream "`+srv.Name+`"`) || !strings.Contains(msg, "refused a redirect") || !strings.Contains(msg, "another origin, "+wantOrigin) {
					t.Errorf("error %q, want it to name the upstream, the refusal and the origin %s", msg, wantOrigin)
				}
				if strings.Contains(msg, "query-secret") || strings.Contains(msg, secret) {
					t.Errorf("error %q quotes the redirect's query or a secret", msg)
				}
			}
		})
	}
}
