package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"golang.org/x/oauth2"

	"github.com/toolprof/toolprof/internal/fakeoauth"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/launch"
)

// TestOAuthTokensScrubbedFromUpstreamErrors: an OAuth server answers
// tools/call with a JSON-RPC error quoting the bearer token it received
// and a value the test gives it (the refresh token, or the client secret
// a dynamic registration obtained), plainly, JSON-escaped in its data and
// as a data key. The tokens are ones the fake authorization server's
// token endpoint issued (a refresh at start, then one on a 401 before
// every later call, more than the scrubber keeps past tokens): none
// reaches the caller, the logs or health.
func TestOAuthTokensScrubbedFromUpstreamErrors(t *testing.T) {
	for _, tt := range []struct {
		name    string
		dynamic bool // tokens from a login with a dynamically registered client
	}{
		{"refreshed tokens", false},
		{"registered client secret", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := newProtected(t, "read")
			var mu sync.Mutex
			var extra string // the other value the server quotes
			s := mcp.NewServer(&mcp.Implementation{Name: "echoer", Version: "1"}, nil)
			mcp.AddTool(s, &mcp.Tool{Name: "echo"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
				return &mcp.CallToolResult{}, nil, nil
			})
			s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
				return func(ctx context.Context, m string, r mcp.Request) (mcp.Result, error) {
					if m != "tools/call" {
						return next(ctx, m, r)
					}
					tok := strings.TrimPrefix(r.GetExtra().Header.Get("Authorization"), "Bearer ")
					mu.Lock()
					x := extra
					mu.Unlock()
					data, _ := json.Marshal(map[string]any{"detail": "sent " + tok + " and " + x, tok: "as a key"})
					data = []byte(strings.Replace(string(data), tok[:3], fmt.Sprintf(`\u%04x%s`, tok[0], tok[1:3]), 1))
					return nil, &jsonrpc.Error{Code: -32000, Message: "token Bearer " + tok + " lacks scope; also " + x, Data: data}
				}
			})
			p.handler = p.as.Protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil), p.url, "read")
			if tt.dynamic {
				p.srv.OAuth = &launch.ResolvedOAuth{}
				login := p.client(t, Options{Login: &LoginFlow{RedirectURL: "http://127.0.0.1:1/callback", Fetch: fakeoauth.Approve}})
				if err := login.Start(context.Background()); err != nil {
					t.Fatal(err)
				}
				login.Close()
			} else {
				p.login(t, []string{"read"}, -time.Minute) // refreshed at start
			}
			var logs syncbuf.Buffer
			c := p.client(t, Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			var out []string
			var secrets []string
			// More refreshes than the scrubber keeps past tokens: the
			// current refresh token and client secret stay scrubbed.
			for round := range 2 * maxSecrets {
				if round > 0 {
					p.as.ExpireAccess() // the next call's 401 refreshes it
				}
				e, _, _ := p.store.Get(ResourceKey(&p.srv))
				mu.Lock()
				extra = e.RefreshToken
				if tt.dynamic {
					extra = e.ClientSecret
				}
				mu.Unlock()
				err := callEcho(c)
				var rpc *jsonrpc.Error
				if !errors.As(err, &rpc) {
					t.Fatalf("call %d: %v, want the server's JSON-RPC error", round, err)
				}
				e, _, _ = p.store.Get(ResourceKey(&p.srv))
				secrets = append(secrets, e.AccessToken, e.RefreshToken, extra)
				if !strings.Contains(rpc.Message, "lacks scope") || !strings.Contains(rpc.Message, launch.Redaction) {
					t.Errorf("call %d: message %q, want the server's words with the token redacted", round, rpc.Message)
				}
				if !json.Valid(rpc.Data) {
					t.Errorf("call %d: data %s is not JSON", round, rpc.Data)
				}
				out = append(out, rpc.Message, string(rpc.Data))
			}
			if n := p.as.Refreshes(); n < 1 {
				t.Errorf("%d refreshes: the tokens were not issued by the token endpoint", n)
			}
			hj, _ := json.Marshal(c.Health())
			out = append(out, logs.String(), string(hj))
			for _, sec := range secrets {
				for _, o := range out {
					if sec != "" && strings.Contains(o, sec) {
						t.Errorf("output holds a secret %q: %s", sec, o)
					}
				}
			}
		})
	}
}

// TestOAuthCurrentSecretsAlwaysScrubbed: the client secret and the current
// refresh token stay scrubbed however many access tokens are handed out
// after them, even when the token file cannot be read to learn them again
// (here it is made readable by others, which the store refuses).
func TestOAuthCurrentSecretsAlwaysScrubbed(t *testing.T) {
	p := newProtected(t, "read")
	p.srv.OAuth = &launch.ResolvedOAuth{}
	login := p.client(t, Options{Login: &LoginFlow{RedirectURL: "http://127.0.0.1:1/callback", Fetch: fakeoauth.Approve}})
	if err := login.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	login.Close()
	c := p.client(t, Options{})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	e, _, err := p.store.Get(ResourceKey(&p.srv))
	if err != nil || e.ClientSecret == "" || e.RefreshToken == "" {
		t.Fatalf("stored entry: secret %v, refresh token %v, err %v; want both", e.ClientSecret != "", e.RefreshToken != "", err)
	}
	if err := os.Chmod(p.store.Path(), 0o644); err != nil {
		t.Fatal(err)
	}
	for i := range 3 * maxSecrets {
		c.oauth.handedOut(&oauth2.Token{AccessToken: fmt.Sprintf("access-token-%04d", i)})
		for what, v := range map[string]string{"client secret": e.ClientSecret, "refresh token": e.RefreshToken} {
			if got := c.scrub("echo " + v); strings.Contains(got, v) {
				t.Fatalf("after %d access tokens the %s is not scrubbed: %q", i+1, what, got)
			}
		}
	}
	if got := c.scrub("echo access-token-0000"); !strings.Contains(got, "access-token-0000") {
		t.Errorf("the first of %d access tokens is still scrubbed: %q; want past tokens bounded by maxSecrets", 3*maxSecrets, got)
	}
}
