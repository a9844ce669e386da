package main

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/fakeoauth"
	"github.com/toolprof/toolprof/oauthstore"
)

// browser is the stderr of profiler login, read by a person: every
// authorization URL printed is opened (redirects followed, to the loopback
// receiver), as a browser would after the user approved.
type browser struct {
	mu     sync.Mutex
	buf    bytes.Buffer
	opened int
	wg     sync.WaitGroup
}

var authURL = regexp.MustCompile(`(?m)^  (http://\S+)$`)

func (b *browser) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	for _, m := range authURL.FindAllStringSubmatch(string(p), -1) {
		b.opened++
		b.wg.Go(func() {
			if resp, err := http.Get(m[1]); err == nil {
				resp.Body.Close()
			}
		})
	}
	return len(p), nil
}

func (b *browser) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestLoginCommand(t *testing.T) {
	as := fakeoauth.New()
	defer as.Close()
	s := mcp.NewServer(&mcp.Implementation{Name: "protected", Version: "1"}, nil)
	var h http.Handler
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { h.ServeHTTP(w, r) }))
	defer ts.Close()
	h = as.Protect(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil), ts.URL+"/mcp", "read")
	as.Register("toolprof", "registered-secret-value")
	t.Setenv("CLIENT_SECRET", "registered-secret-value")
	dir := t.TempDir()
	tokens := filepath.Join(dir, "cfg", "tokens.json")
	t.Setenv(oauthstore.EnvPath, tokens)
	t.Setenv("PATH", dir) // no xdg-open
	pack := filepath.Join(dir, "pack.mcp.json")
	if err := os.WriteFile(pack, []byte(fmt.Sprintf(`{"mcpServers": {
  "remote": {"url": %q, "oauth": {"client_id": "toolprof", "client_secret": "${CLIENT_SECRET}"}},
  "plain": {"command": "x"}}}`, ts.URL+"/mcp")), 0o644); err != nil {
		t.Fatal(err)
	}

	b := &browser{}
	if err := run(context.Background(), []string{"login", "--launch", pack}, &bytes.Buffer{}, b); err != nil {
		t.Fatalf("login: %v\n%s", err, b)
	}
	b.wg.Wait()
	if b.opened != 1 || !strings.Contains(b.String(), `server "remote": logged in`) {
		t.Fatalf("stderr:\n%s\nwant one URL opened and the login reported", b)
	}
	info, err := os.Stat(tokens)
	if err != nil || info.Mode().Perm() != 0o600 {
		t.Fatalf("token file: %v, %v; want mode 0600", info, err)
	}
	entries, _ := oauthstore.Open(tokens).List()
	if len(entries) != 1 || entries[0].AccessToken == "" || entries[0].RefreshToken == "" {
		t.Fatalf("stored %v, want one entry with tokens", entries)
	}
	e := entries[0]

	// A second login finds the token valid and opens nothing.
	b2 := &browser{}
	if err := run(context.Background(), []string{"login", "--launch", pack, "--server", "remote"}, &bytes.Buffer{}, b2); err != nil {
		t.Fatal(err)
	}
	if b2.opened != 0 || !strings.Contains(b2.String(), "token valid, nothing to do") {
		t.Errorf("second login stderr:\n%s", b2)
	}

	var status bytes.Buffer
	if err := run(context.Background(), []string{"login", "--launch", pack, "--status"}, &status, b2); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(status.String(), "remote") || !strings.Contains(status.String(), "valid until") {
		t.Errorf("status:\n%s", status.String())
	}
	out := b.String() + b2.String() + status.String()
	for _, secret := range []string{e.AccessToken, e.RefreshToken, "registered-secret-value"} {
		if strings.Contains(out, secret) {
			t.Errorf("output holds a secret %q:\n%s", secret, out)
		}
	}

	for _, tt := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"login"}, "--launch FILE is required"},
		{[]string{"login", "--launch", pack, "--server", "plain"}, `declares no server "plain" with "oauth"`},
	} {
		err := run(context.Background(), tt.args, &bytes.Buffer{}, &bytes.Buffer{})
		if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
			t.Errorf("%v: %v, want %q", tt.args, err, tt.wantErr)
		}
	}
}
