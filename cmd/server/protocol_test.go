package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/tokens"
)

// listPages pages tools/list from the start cursor.
func listPages(t *testing.T, cs *mcp.ClientSession) (names []string, pages int) {
	t.Helper()
	cursor := gateway.StartCursor
	for cursor != "" {
		res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
		if err != nil {
			t.Fatalf("tools/list: %v", err)
		}
		for _, tl := range res.Tools {
			names = append(names, tl.Name)
		}
		cursor = res.NextCursor
		pages++
	}
	return names, pages
}

// TestProtocolVersionsThroughGateway: a go-sdk v1.8.0 client negotiates
// 2026-07-28 through the built gateway in front of the real
// everything-server, over stdio and HTTP, and lists, pages and calls; a
// client asking for 2025-11-25 is served that.
func TestProtocolVersionsThroughGateway(t *testing.T) {
	for _, m := range modes {
		for _, tt := range []struct{ ask, want string }{{"", "2026-07-28"}, {"2025-11-25", "2025-11-25"}} {
			t.Run(fmt.Sprintf("%s/%s", m, tt.want), func(t *testing.T) {
				s := start(t, m, "/mcp/full", tt.ask, "--page-size", "4", "--profile", "full")
				if got := s.session.InitializeResult().ProtocolVersion; got != tt.want {
					t.Fatalf("negotiated %s, want %s", got, tt.want)
				}
				names, pages := listPages(t, s.session)
				if len(names) < 8 || pages < 2 || !slices.IsSorted(names) {
					t.Errorf("listed %d tools in %d pages, want them all in name order over several", len(names), pages)
				}
				res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text", Arguments: map[string]any{}})
				if err != nil || res.IsError {
					t.Fatalf("call: %v %+v", err, res)
				}
			})
		}
	}
}

// writeTokens writes a tokens file.
func writeTokens(t *testing.T, path, src string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// TestTokensFile: one URL serves each token its profile; the
// --auth-token-file token joins the file's, bound to nothing; an unknown
// token is 401; a broken edit keeps the last good tokens, and health says
// so.
func TestTokensFile(t *testing.T) {
	const coreToken, plainToken = "core-tok-91c2", "plain-tok-77ab"
	dir := t.TempDir()
	file, single := filepath.Join(dir, "tokens.toml"), filepath.Join(dir, "token")
	good := fmt.Sprintf("[[token]]\nname = \"core-team\"\nsha256 = %q\nprofile = \"core\"\n", tokens.HashToken(coreToken))
	writeTokens(t, file, good)
	os.WriteFile(single, []byte(plainToken+"\n"), 0o600)
	base, s := startHTTPServer(t, nil, "--tokens-file", file, "--auth-token-file", single, "--profile", "standard")
	list := func(token string) []string {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: base + "/mcp", MaxRetries: -1, HTTPClient: &nethttp.Client{Transport: bearer{token}}}, nil)
		if err != nil {
			t.Fatalf("connect: %v", err)
		}
		defer cs.Close()
		names, _ := listPages(t, cs)
		return names
	}
	if n := len(list(coreToken)); n != 3 {
		t.Errorf("core token listed %d tools, want core's 3", n)
	}
	if n := len(list(plainToken)); n != 8 {
		t.Errorf("--auth-token-file token listed %d tools, want the default (standard) 8", n)
	}
	if status, _, _ := rawPost(t, base+"/mcp", strings.NewReader(initializeBody), -1, map[string]string{"Authorization": "Bearer guess"}); status != 401 {
		t.Errorf("unknown token: %d, want 401", status)
	}
	writeTokens(t, file, good+"profle = \"x\"\n")
	health := func() gateway.Health {
		req, _ := nethttp.NewRequest(nethttp.MethodGet, base+"/healthz", nil)
		req.Header.Set("Authorization", "Bearer "+coreToken)
		resp, err := nethttp.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var h gateway.Health
		b, _ := io.ReadAll(resp.Body)
		json.Unmarshal(b, &h)
		return h
	}
	deadline := time.Now().Add(20 * time.Second)
	for (health().Tokens == nil || health().Tokens.Problem == "") && time.Now().Before(deadline) {
		time.Sleep(50 * time.Millisecond)
	}
	if h := health(); h.Tokens == nil || !strings.Contains(h.Tokens.Problem, "tokens.toml:5") {
		t.Fatalf("health after a broken edit: %+v", h.Tokens)
	}
	if n := len(list(coreToken)); n != 3 {
		t.Errorf("after a broken edit the core token listed %d tools, want the last good binding", n)
	}
	if err := s.stopHTTP(); err != nil {
		t.Fatal(err)
	}
	for _, tok := range []string{coreToken, plainToken} {
		if strings.Contains(s.stderr.String(), tok) {
			t.Errorf("stderr holds a token")
		}
		assertNotStored(t, s.telemetry, tok)
	}
}

// TestTokensFileAtStart: a tokens file that does not parse, or binds a
// profile that cannot be served, stops the server with file:line.
func TestTokensFileAtStart(t *testing.T) {
	dir := t.TempDir()
	h := tokens.HashToken("x")
	for _, tt := range []struct {
		name, src, want string
	}{
		{"syntax", "[[token]]\nsha256 = \"" + h + "\nx", "tokens.toml:2"},
		{"clear token", "\n[[token]]\nsha256 = \"letmein\"\n", "tokens.toml:2: token[0].sha256"},
		{"unknown profile", "[[token]]\nname = \"ops\"\nsha256 = \"" + h + "\"\nprofile = \"nope\"\n", `tokens.toml:1: token "ops": profile "nope": no such profile`},
		{"beyond the ceiling", "[[token]]\nsha256 = \"" + h + "\"\nprofile = \"full\"\n", `ceiling profile "standard"`},
	} {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "tokens.toml")
			writeTokens(t, file, tt.src)
			var stderr strings.Builder
			t.Setenv(cursorKeyEnv, "")
			args := append([]string{"--profiles", profilesFile, "--telemetry", filepath.Join(dir, "tel"), "--http", "127.0.0.1:0", "--tokens-file", file, "--max-profile", "standard", "--health"}, upstreamArgs(filepath.Join(dir, "up.log"))...)
			err := run(context.Background(), args, strings.NewReader(""), io.Discard, &stderr)
			if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(fmt.Sprint(err), tt.want) {
				t.Errorf("%v (exit %d), want exit 2 saying %q", err, code, tt.want)
			}
		})
	}
	var stderr strings.Builder
	err := run(context.Background(), []string{"--tokens-file", filepath.Join(dir, "tokens.toml"), "--", "x"}, strings.NewReader(""), io.Discard, &stderr)
	if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(fmt.Sprint(err), "applies to --http only") {
		t.Errorf("--tokens-file over stdio: %v (exit %d)", err, code)
	}
}
