package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/syncbuf"
)

// startHTTPServer starts the built server on 127.0.0.1:0 in front of the
// everything-server (behind tee) with flags, and returns its base URL and
// what it has written to stderr.
func startHTTPServer(t *testing.T, env []string, flags ...string) (base string, s *served) {
	t.Helper()
	dir := t.TempDir()
	s = &served{upstream: filepath.Join(dir, "upstream.log"), telemetry: filepath.Join(dir, "telemetry"), stderr: &syncbuf.Buffer{}}
	args := append([]string{"--profiles", profilesFile, "--telemetry", s.telemetry, "--http", "127.0.0.1:0"}, flags...)
	args = append(args, upstreamArgs(s.upstream)...)
	cmd := exec.Command(bins.server, args...)
	cmd.Env = append(append(os.Environ(), "TOOLPROF_CURSOR_KEY="+cursorKeyHex), env...)
	s.cmd = cmd
	base, s.stopHTTP = startHTTP(t, cmd, s.stderr)
	s.url = base + "/mcp"
	return base, s
}

// bearer adds an Authorization header to every request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *nethttp.Request) (*nethttp.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return nethttp.DefaultTransport.RoundTrip(r)
}

// rawPost posts body to u with the headers a streamable HTTP client sends.
func rawPost(t *testing.T, u string, body io.Reader, length int64, header map[string]string) (int, nethttp.Header, string) {
	t.Helper()
	req, err := nethttp.NewRequest(nethttp.MethodPost, u, body)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = length
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	for k, v := range header {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(b)
}

const initializeBody = `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0"}}}`

func TestAuthToken(t *testing.T) {
	const token = "tok-3b9f1c0e7d2a-secret"
	file := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(file, []byte(token+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	base, s := startHTTPServer(t, nil, "--auth-token-file", file)
	cases := []struct {
		name, auth, challenge string
	}{
		{"no header", "", `Bearer realm="toolprof"`},
		{"wrong token", "Bearer not-" + token, `Bearer realm="toolprof", error="invalid_token"`},
		{"token as basic", "Basic " + token, `Bearer realm="toolprof"`},
		{"token prefix", "Bearer " + token[:len(token)-1], `Bearer realm="toolprof", error="invalid_token"`},
	}
	for _, c := range cases {
		for _, path := range []string{"/mcp", "/mcp/full", "/healthz"} {
			h := map[string]string{}
			if c.auth != "" {
				h["Authorization"] = c.auth
			}
			status, hdr, body := rawPost(t, base+path, strings.NewReader(initializeBody), -1, h)
			if status != nethttp.StatusUnauthorized || hdr.Get("WWW-Authenticate") != c.challenge {
				t.Errorf("%s on %s: %d, WWW-Authenticate %q, want 401 with %q", c.name, path, status, hdr.Get("WWW-Authenticate"), c.challenge)
			}
			if strings.Contains(body, token) {
				t.Errorf("%s: the 401 body echoes the token", c.name)
			}
		}
	}
	// The scheme is case-insensitive (RFC 9110).
	for _, auth := range []string{"Bearer " + token, "bearer " + token, "BEARER " + token, "Bearer  " + token + " "} {
		if status, _, body := rawPost(t, base+"/healthz", strings.NewReader(initializeBody), -1, map[string]string{"Authorization": auth}); status != nethttp.StatusOK {
			t.Errorf("Authorization %q: %d %q, want 200", strings.Replace(auth, token, "TOKEN", 1), status, body)
		}
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1, HTTPClient: &nethttp.Client{Transport: bearer{token}}}, nil)
	if err != nil {
		t.Fatalf("connect with the token: %v", err)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
		t.Errorf("call with the token: %v", err)
	}
	cs.Close()
	if err := s.stopHTTP(); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(s.stderr.String(), token) {
		t.Errorf("stderr holds the token:\n%s", s.stderr)
	}
	assertNotStored(t, s.telemetry, token)
}

func TestMaxBodyBytes(t *testing.T) {
	base, _ := startHTTPServer(t, nil, "--max-body-bytes", "1024")
	big := `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2048) + `"}}`
	cases := []struct {
		name   string
		body   string
		length int64 // -1: chunked, no Content-Length
		status int
	}{
		{"over the limit with a length", big, int64(len(big)), nethttp.StatusRequestEntityTooLarge},
		{"over the limit, chunked", big, -1, nethttp.StatusRequestEntityTooLarge},
		{"within the limit", initializeBody, int64(len(initializeBody)), nethttp.StatusOK},
	}
	// A session, so that requests also take the path of an established
	// session (which reads the body to watch for a disconnection).
	_, hdr, _ := rawPost(t, base+"/mcp", strings.NewReader(initializeBody), -1, nil)
	session := hdr.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatal("initialize gave no session id")
	}
	for _, c := range cases {
		for _, h := range []map[string]string{nil, {"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}} {
			if h != nil && c.body == initializeBody {
				continue // initialize opens sessions only
			}
			// io.MultiReader hides the length, so the client sends chunks.
			var body io.Reader = strings.NewReader(c.body)
			if c.length < 0 {
				body = io.MultiReader(body)
			}
			status, _, msg := rawPost(t, base+"/mcp", body, c.length, h)
			if status != c.status {
				t.Errorf("%s (session header %v): %d %q, want %d", c.name, h != nil, status, msg, c.status)
			}
		}
	}
	ping := `{"jsonrpc":"2.0","id":9,"method":"ping"}`
	if status, _, msg := rawPost(t, base+"/mcp", strings.NewReader(ping), -1, map[string]string{"Mcp-Session-Id": session, "Mcp-Protocol-Version": "2025-11-25"}); status != nethttp.StatusOK {
		t.Errorf("ping within the limit on the session: %d %q", status, msg)
	}
}

// The server refuses a Host header naming another machine (DNS rebinding)
// and listens on loopback unless told otherwise.
func TestHTTPExposure(t *testing.T) {
	base, _ := startHTTPServer(t, nil)
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	if host := u.Hostname(); host != "127.0.0.1" {
		t.Errorf("listens on %s, want 127.0.0.1", host)
	}
	for _, host := range []string{"evil.example", "evil.example:" + u.Port(), "192.0.2.1:" + u.Port()} {
		for _, path := range []string{"/mcp", "/mcp/full", "/mcp/nosuch", "/healthz"} {
			status, _, body := rawPost(t, base+path, strings.NewReader(initializeBody), -1, map[string]string{"Host": host})
			if status != nethttp.StatusForbidden || strings.Contains(body, `"upstream"`) {
				t.Errorf("Host %s on %s: %d %q, want 403", host, path, status, body)
			}
		}
	}
	if status, _, body := rawPost(t, base+"/mcp", strings.NewReader(initializeBody), -1, map[string]string{"Host": "localhost:" + u.Port()}); status != nethttp.StatusOK {
		t.Errorf("Host localhost: %d %q, want 200", status, body)
	}
}

func TestHardeningUsageErrors(t *testing.T) {
	dir := t.TempDir()
	empty := filepath.Join(dir, "empty")
	os.WriteFile(empty, []byte(" \n"), 0o600)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"--max-body-bytes", "-1", "--", "x"}, "--max-body-bytes -1: must not be negative"},
		{[]string{"--call-timeout", "-1s", "--", "x"}, "--call-timeout -1s: must not be negative"},
		{[]string{"--auth-token-file", empty, "--", "x"}, "applies to --http only"},
		{[]string{"--http", "127.0.0.1:0", "--auth-token-file", filepath.Join(dir, "absent"), "--", "x"}, "absent"},
		{[]string{"--http", "127.0.0.1:0", "--auth-token-file", empty, "--", "x"}, "the file is empty"},
		{[]string{"--read-timeout", "-1s", "--", "x"}, "--read-timeout -1s: must not be negative"},
		{[]string{"--idle-conn-timeout", "-1s", "--", "x"}, "--idle-conn-timeout -1s: must not be negative"},
		{[]string{"--max-connections", "-1", "--", "x"}, "--max-connections -1: must not be negative"},
		{[]string{"--http", "127.0.0.1:0", "--allow-origin", "app.example.com", "--", "x"}, `origin "app.example.com": want scheme://host[:port]`},
		{[]string{"--http", "127.0.0.1:0", "--allow-origin", "https://a.example,null", "--", "x"}, `origin "null"`},
		{[]string{"--allow-origin", "https://a.example", "--", "x"}, "applies to --http only"},
		{[]string{"--http", "0.0.0.0:0", "--allow-remote", "--", "x"}, "--allow-remote without --auth-token-file or --tokens-file"},
		{[]string{"--http", "127.0.0.1:0", "--no-auth", "--", "x"}, "--no-auth applies to --allow-remote only"},
		{[]string{"--allow-remote", "--no-auth", "--", "x"}, "--allow-remote applies to --http only"},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		t.Setenv(cursorKeyEnv, "")
		err := run(context.Background(), c.args, strings.NewReader(""), io.Discard, &stderr)
		if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(fmt.Sprint(err)+stderr.String(), c.want) {
			t.Errorf("run %q: %v (exit %d), want exit 2 saying %q", c.args, err, code, c.want)
		}
	}
}

// --allow-remote is accepted with a token check, or with --no-auth.
func TestAllowRemoteWithAuth(t *testing.T) {
	token := filepath.Join(t.TempDir(), "token")
	os.WriteFile(token, []byte("secret-token\n"), 0o600)
	for _, args := range [][]string{
		{"--http", "0.0.0.0:0", "--allow-remote", "--auth-token-file", token, "--", "x"},
		{"--http", "0.0.0.0:0", "--allow-remote", "--tokens-file", filepath.Join(t.TempDir(), "tokens.toml"), "--", "x"},
		{"--http", "0.0.0.0:0", "--allow-remote", "--no-auth", "--", "x"},
	} {
		if _, err := parseFlags(args, io.Discard); err != nil {
			t.Errorf("parseFlags %q: %v, want accepted", args, err)
		}
	}
}

// Browser origins: foreign ones are refused on every path, loopback ones,
// those --allow-origin lists (repeated or comma-separated) and requests
// without an Origin are served.
func TestAllowOrigin(t *testing.T) {
	base, _ := startHTTPServer(t, nil, "--allow-origin", "https://app.example.com,https://b.example", "--allow-origin", "http://c.example:8080")
	cases := []struct {
		origin string
		status int
	}{
		{"", nethttp.StatusOK},
		{"http://evil.example", nethttp.StatusForbidden},
		{"null", nethttp.StatusForbidden},
		{"http://app.example.com", nethttp.StatusForbidden},
		{"http://localhost:5173", nethttp.StatusOK},
		{"http://127.0.0.1:3000", nethttp.StatusOK},
		{"https://app.example.com", nethttp.StatusOK},
		{"https://b.example", nethttp.StatusOK},
		{"http://c.example:8080", nethttp.StatusOK},
	}
	for _, c := range cases {
		for _, path := range []string{"/mcp", "/healthz"} {
			h := map[string]string{}
			if c.origin != "" {
				h["Origin"] = c.origin
			}
			if status, _, body := rawPost(t, base+path, strings.NewReader(initializeBody), -1, h); status != c.status {
				t.Errorf("Origin %q on %s: %d %q, want %d", c.origin, path, status, body, c.status)
			}
		}
	}
	if status, _, _ := rawPost(t, base+"/mcp/nosuch", strings.NewReader(initializeBody), -1, map[string]string{"Origin": "http://evil.example"}); status != nethttp.StatusForbidden {
		t.Errorf("foreign Origin on an unknown profile: %d, want 403", status)
	}
}

// --max-body-bytes is the limit in force, above the SDK's 4 MiB default
// too; 0 is that default.
func TestMaxBodyBytesAboveSDKDefault(t *testing.T) {
	body := `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"t","version":"0","pad":"` +
		strings.Repeat("x", 5_000_000) + `"}}}`
	for _, c := range []struct {
		flag   string
		status int
	}{
		{"8000000", nethttp.StatusOK},
		{"0", nethttp.StatusRequestEntityTooLarge},
	} {
		base, _ := startHTTPServer(t, nil, "--max-body-bytes", c.flag)
		for _, length := range []int64{int64(len(body)), -1} {
			var r io.Reader = strings.NewReader(body)
			if length < 0 {
				r = io.MultiReader(r) // chunked
			}
			if status, _, msg := rawPost(t, base+"/mcp", r, length, nil); status != c.status {
				t.Errorf("--max-body-bytes %s, 5 MB body (length %d): %d %.200q, want %d", c.flag, length, status, msg, c.status)
			}
		}
	}
}

// A POST body must be one JSON value: the SDK would serve the first of two
// concatenated messages and drop the second unseen.
func TestPostBodyOneJSONValue(t *testing.T) {
	base, _ := startHTTPServer(t, nil)
	_, hdr, _ := rawPost(t, base+"/mcp", strings.NewReader(initializeBody), -1, nil)
	session := map[string]string{"Mcp-Session-Id": hdr.Get("Mcp-Session-Id"), "Mcp-Protocol-Version": "2025-11-25"}
	ping := `{"jsonrpc":"2.0","id":2,"method":"ping"}`
	cases := []struct {
		name   string
		body   string
		header map[string]string
		status int
		code   int
		want   string
	}{
		{"two messages", ping + ping, session, 400, -32700, "more after its first JSON value"},
		{"two messages, a space between", ping + "\n " + `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":2}}`, session, 400, -32700, "one message, or one batch array, per POST"},
		{"two initializes", initializeBody + initializeBody, nil, 400, -32700, "more after its first JSON value"},
		{"trailing garbage", ping + "}", session, 400, -32700, "more after its first JSON value"},
		{"not JSON", "{nope", session, 400, -32700, "not JSON"},
		{"a string", `"ping"`, session, 400, -32600, "JSON string"},
		{"one message, trailing white space", ping + "\r\n", session, 200, 0, ""},
		// The SDK holds ids as int64: these would be answered under
		// another value (1, -2^63, 0, 100, 1).
		{"fractional id", `{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, session, 400, -32600, "id 1.5 cannot be answered under the same value"},
		{"id beyond int64", `{"jsonrpc":"2.0","id":1e30,"method":"ping"}`, session, 400, -32600, "id 1e30"},
		{"negative zero id", `{"jsonrpc":"2.0","id":-0,"method":"ping"}`, session, 400, -32600, "id -0"},
		{"exponent id", `{"jsonrpc":"2.0","id":1E+2,"method":"ping"}`, session, 400, -32600, "id 1E+2"},
		{"fractional id in a batch", `[{"jsonrpc":"2.0","id":1.0,"method":"ping"}]`, session, 400, -32600, "id 1.0"},
		// It decodes them as float64 first: 2^53+1 would be answered as
		// 2^53, the largest int64 as -2^63.
		{"id past 2^53", `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, session, 400, -32600, "id 9007199254740993"},
		{"largest int64 id", `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`, session, 400, -32600, "id 9223372036854775807"},
		{"id 2^53", `{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}`, session, 200, 0, ""},
		// The SDK ignores a member "ID": the id answered is "id".
		{"ID beside the id", `{"jsonrpc":"2.0","id":1.5,"ID":2,"method":"ping"}`, session, 400, -32600, "id 1.5"},
		{"string id", `{"jsonrpc":"2.0","id":"1.5","method":"ping"}`, session, 200, 0, ""},
	}
	for _, c := range cases {
		status, _, body := rawPost(t, base+"/mcp", strings.NewReader(c.body), -1, c.header)
		if status != c.status {
			t.Errorf("%s: %d %q, want %d", c.name, status, body, c.status)
			continue
		}
		if c.code == 0 {
			// Served under the id sent.
			var req struct {
				ID json.RawMessage `json:"id"`
			}
			json.Unmarshal([]byte(c.body), &req)
			if !strings.Contains(body, `"id":`+string(req.ID)+`,`) {
				t.Errorf("%s: %q, want the answer of id %s", c.name, body, req.ID)
			}
			continue
		}
		var resp struct {
			ID    any `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := json.Unmarshal([]byte(body), &resp); err != nil || resp.Error.Code != c.code || !strings.Contains(resp.Error.Message, c.want) || resp.ID != nil {
			t.Errorf("%s: %q (%v), want JSON-RPC error %d saying %q", c.name, body, err, c.code, c.want)
		}
	}
}

// A default profile beyond --max-profile is a usage error over HTTP as it
// is over stdio: /mcp would refuse every request.
func TestCeilingUsageErrorOverHTTP(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	args := append([]string{"--profiles", profilesFile, "--telemetry", t.TempDir(), "--http", "127.0.0.1:0", "--profile", "full", "--max-profile", "standard"},
		upstreamArgs(filepath.Join(t.TempDir(), "log"))...)
	cmd := exec.CommandContext(ctx, bins.server, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), `ceiling profile "standard"`) {
		t.Errorf("--http --profile full --max-profile standard: %v\n%s\nwant exit 2 naming the ceiling", err, &stderr)
	}
}
