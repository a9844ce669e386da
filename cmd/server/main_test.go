package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/opcontext"
)

// Built once in TestMain: the server under test and its real upstream.
var bins struct {
	server, everything string
}

// profilesFile is the test profiles file: core, standard and full over the
// everything-server's tools, default core.
const profilesFile = "../../gateway/testdata/profiles.generated.toml"

// cursorKeyHex is the cursor key the tests give the server, so that they can
// mint cursors the server accepts (as a replica sharing the key would).
const cursorKeyHex = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "toolprof-server-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	// Every server under test reads its operating-context sidecar from a
	// missing file unless a test names another: the real home is never read.
	os.Setenv(opcontext.EnvPath, filepath.Join(dir, "no-operating-context.toml"))
	bins.server = filepath.Join(dir, "server")
	bins.everything = filepath.Join(dir, "everything-server")
	var wg sync.WaitGroup
	errs := make([]error, 2)
	wg.Go(func() { errs[0] = testupstream.Build("github.com/toolprof/toolprof/cmd/server", bins.server) })
	wg.Go(func() { errs[1] = testupstream.Build(testupstream.EverythingServerPkg, bins.everything) })
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// The exact membership of each profile in the test profiles file.
var membership = map[string][]string{
	"core": {"test_error_handling", "test_image_content", "test_simple_text"},
	"standard": {
		"json_schema_2020_12_tool", "test_audio_content", "test_embedded_resource", "test_error_handling",
		"test_image_content", "test_multiple_content_types", "test_simple_text", "test_tool_with_progress",
	},
	"full": sortedEverything(),
}

var instructions = map[string]string{
	"core":     "core: text, image and error tools of the everything-server.\n",
	"standard": "standard: content tools of every type, progress and schema tools.\n",
	"full":     "full: every tool of the everything-server.\n",
}

func sortedEverything() []string {
	s := slices.Clone(testupstream.EverythingTools)
	slices.Sort(s)
	return s
}

// served is one running server under test and what can be observed of it.
type served struct {
	session   *mcp.ClientSession
	upstream  string // file with every byte the gateway sent the upstream
	telemetry string
	stderr    *syncbuf.Buffer
	url       string // HTTP only: the /mcp endpoint
	stopHTTP  func() error
	cmd       *exec.Cmd
}

// upstreamArgs runs the real everything-server behind tee, which copies
// every message the gateway sends upstream into log: an observer
// independent of the gateway's own code.
func upstreamArgs(log string) []string {
	return []string{"--", "sh", "-c", `tee "$0" | "$1"`, log, bins.everything}
}

type mode string

const (
	overStdio mode = "stdio"
	overHTTP  mode = "http"
)

var modes = []mode{overStdio, overHTTP}

// start runs the built server with flags in mode m and connects a client
// (for HTTP, to path, e.g. "/mcp" or "/mcp/full").
func start(t *testing.T, m mode, path string, protocol string, flags ...string) *served {
	t.Helper()
	return startEnv(t, m, path, protocol, nil, flags...)
}

// startEnv is start with env added to the server's environment.
func startEnv(t *testing.T, m mode, path string, protocol string, env []string, flags ...string) *served {
	t.Helper()
	return startFlags(t, m, path, protocol, env, append([]string{"--profiles", profilesFile}, flags...)...)
}

// startFlags is startEnv without the test profiles file: only flags name one.
func startFlags(t *testing.T, m mode, path string, protocol string, env []string, flags ...string) *served {
	t.Helper()
	dir := t.TempDir()
	s := &served{upstream: filepath.Join(dir, "upstream.log"), telemetry: filepath.Join(dir, "telemetry"), stderr: &syncbuf.Buffer{}}
	args := append([]string{"--telemetry", s.telemetry}, flags...)
	if m == overHTTP {
		args = append(args, "--http", "127.0.0.1:0")
	}
	args = append(args, upstreamArgs(s.upstream)...)
	cmd := exec.Command(bins.server, args...)
	cmd.Env = append(os.Environ(), "TOOLPROF_CURSOR_KEY="+cursorKeyHex)
	cmd.Env = append(cmd.Env, env...) // the last value of a key wins
	s.cmd = cmd
	var transport mcp.Transport
	switch m {
	case overStdio:
		cmd.Stderr = s.stderr
		transport = &mcp.CommandTransport{Command: cmd}
	case overHTTP:
		var base string
		base, s.stopHTTP = startHTTP(t, cmd, s.stderr)
		s.url = base + path
		transport = &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-test", Version: "1.2.3"}, nil).
		Connect(ctx, transport, &mcp.ClientSessionOptions{ProtocolVersion: protocol})
	if err != nil {
		t.Fatalf("connect (%s): %v\nserver stderr:\n%s", m, err, s.stderr)
	}
	s.session = cs
	t.Cleanup(func() { cs.Close() })
	return s
}

// legacyProtocol is the protocol version of tests of what only protocol
// sessions have (per-session groups and exploration, relayed elicitation,
// one recorded session per connection): over HTTP the go-sdk client
// otherwise speaks 2026-07-28, served without protocol sessions.
const legacyProtocol = "2025-11-25"

// startHTTP starts cmd (an HTTP server) and returns its base URL and a
// function stopping it with SIGTERM, which must make it exit 0. The server is
// stopped at the end of the test if not before.
func startHTTP(t testing.TB, cmd *exec.Cmd, stderr *syncbuf.Buffer) (string, func() error) {
	t.Helper()
	pipe, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	copied := make(chan struct{})
	go func() {
		defer close(copied)
		re := regexp.MustCompile(`on (http://\S+)/mcp`)
		sc := bufio.NewScanner(pipe)
		for sc.Scan() {
			line := sc.Text()
			stderr.Write([]byte(line + "\n"))
			if m := re.FindStringSubmatch(line); m != nil {
				addr <- m[1]
			}
		}
	}()
	var once sync.Once
	var waitErr error
	stop := func() error {
		once.Do(func() {
			cmd.Process.Signal(syscall.SIGTERM)
			<-copied
			waitErr = cmd.Wait()
		})
		return waitErr
	}
	t.Cleanup(func() {
		if err := stop(); err != nil {
			t.Errorf("server after SIGTERM: %v (want exit 0)\nstderr:\n%s", err, stderr)
		}
	})
	select {
	case a := <-addr:
		return a, stop
	case <-copied:
		t.Fatalf("server exited before listening:\n%s", stderr)
	case <-time.After(20 * time.Second):
		t.Fatalf("server did not listen:\n%s", stderr)
	}
	return "", nil
}

// stop ends the session and the server, and returns how the server exited.
func (s *served) stop() error {
	err := s.session.Close() // stdio: closes the server's stdin and waits for it to exit
	if s.stopHTTP != nil {
		err = s.stopHTTP()
	}
	return err
}

// upstreamLog waits until the upstream log satisfies done (tee may write
// the log after the upstream has answered) and returns it; after 10 s it
// returns the log as it is.
func (s *served) upstreamLog(t *testing.T, done func(string) bool) string {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		b, err := os.ReadFile(s.upstream)
		if err != nil {
			t.Fatal(err)
		}
		if done(string(b)) || time.Now().After(deadline) {
			return string(b)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// upstreamCalls returns the names of the tools the gateway called upstream,
// once the log shows a call to last (the test's final call: calls reach
// the upstream in order over one pipe, so every earlier one is logged too).
func (s *served) upstreamCalls(t *testing.T, last string) []string {
	t.Helper()
	var names []string
	s.upstreamLog(t, func(log string) bool {
		names = toolCalls(log)
		return slices.Contains(names, last)
	})
	return names
}

// toolCalls returns the tools called in a log of JSON-RPC messages.
func toolCalls(log string) []string {
	var names []string
	for line := range strings.Lines(log) {
		var msg struct {
			Method string `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &msg) == nil && msg.Method == "tools/call" {
			names = append(names, msg.Params.Name)
		}
	}
	return names
}

func listNames(t *testing.T, cs *mcp.ClientSession, cursor string) ([]string, string) {
	t.Helper()
	res, err := cs.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: cursor})
	if err != nil {
		t.Fatalf("tools/list cursor %q: %v", cursor, err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names, res.NextCursor
}

// wireCode returns the JSON-RPC error code of err, or 0.
func wireCode(err error) int64 {
	var werr *jsonrpc.Error
	if errors.As(err, &werr) {
		return werr.Code
	}
	return 0
}

func TestAllowedToolIsForwarded(t *testing.T) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp", "")
			res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"})
			if err != nil {
				t.Fatal(err)
			}
			if res.IsError || len(res.Content) != 1 || res.Content[0].(*mcp.TextContent).Text != "This is a simple text response for testing." {
				t.Errorf("result = %+v, want the upstream's text", res)
			}
			if got := s.upstreamCalls(t, "test_simple_text"); !reflect.DeepEqual(got, []string{"test_simple_text"}) {
				t.Errorf("upstream received calls %v, want [test_simple_text]", got)
			}
		})
	}
}

func TestAllowedToolResultIsFaithful(t *testing.T) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp/standard", "", "--profile", "standard")
			res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_multiple_content_types"})
			if err != nil {
				t.Fatal(err)
			}
			var kinds []string
			for _, c := range res.Content {
				kinds = append(kinds, fmt.Sprintf("%T", c))
			}
			want := []string{"*mcp.TextContent", "*mcp.ImageContent", "*mcp.EmbeddedResource"}
			if !reflect.DeepEqual(kinds, want) {
				t.Errorf("content types %v, want %v", kinds, want)
			}
			// An upstream tool error comes back as the upstream's isError result.
			res, err = s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_error_handling"})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "intentionally returns an error") {
				t.Errorf("result = %+v, want the upstream's isError result", res)
			}
		})
	}
}

func TestExcludedToolIsRefusedAndNeverForwarded(t *testing.T) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp", "")
			res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_audio_content"})
			if err != nil {
				t.Fatal(err)
			}
			if !res.IsError {
				t.Fatalf("result = %+v, want isError", res)
			}
			var env gateway.Envelope
			b, _ := json.Marshal(res.StructuredContent)
			if err := json.Unmarshal(b, &env); err != nil {
				t.Fatalf("structuredContent %s: %v", b, err)
			}
			if env.Code != gateway.CodeToolNotInProfile || env.Retryable || env.Category != "policy" {
				t.Errorf("envelope = %+v", env)
			}
			for _, want := range []string{`"test_audio_content"`, `"core"`, "full, standard"} {
				if !strings.Contains(env.Message, want) {
					t.Errorf("message %q does not name %s", env.Message, want)
				}
			}
			if len(env.SuggestedActions) != 2 || !strings.Contains(env.SuggestedActions[0], "full") || !strings.Contains(env.SuggestedActions[1], "standard") {
				t.Errorf("suggested actions %q, want the profiles full and standard", env.SuggestedActions)
			}
			if text := res.Content[0].(*mcp.TextContent).Text; text != env.Message {
				t.Errorf("text %q, want the envelope's message", text)
			}
			// A forwarded call afterwards proves the upstream log is live.
			if _, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
				t.Fatal(err)
			}
			if got := s.upstreamCalls(t, "test_simple_text"); !reflect.DeepEqual(got, []string{"test_simple_text"}) {
				t.Errorf("upstream received calls %v, want only [test_simple_text]", got)
			}
		})
	}
}

func TestUnknownToolIsInvalidParams(t *testing.T) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp", "")
			_, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "no_such_tool"})
			if wireCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), "no_such_tool") {
				t.Errorf("error = %v, want JSON-RPC -32602 naming the tool", err)
			}
			if _, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"}); err != nil {
				t.Fatal(err)
			}
			if got := s.upstreamCalls(t, "test_simple_text"); !reflect.DeepEqual(got, []string{"test_simple_text"}) {
				t.Errorf("upstream received calls %v, want only the later [test_simple_text]", got)
			}
		})
	}
}

func TestUnknownProfileName(t *testing.T) {
	t.Run("stdio flag", func(t *testing.T) {
		checkUnknownProfile(t, []string{"--profile", "nope"}, nil)
	})
	t.Run("stdio env", func(t *testing.T) {
		checkUnknownProfile(t, nil, []string{"TOOLPROF_PROFILE=nope"})
	})
	t.Run("http path", func(t *testing.T) {
		s := start(t, overHTTP, "/mcp", "")
		url := strings.TrimSuffix(s.url, "/mcp") + "/mcp/nope"
		_, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: url, MaxRetries: -1}, nil)
		if err == nil || !strings.Contains(err.Error(), "Not Found") {
			t.Errorf("connect to /mcp/nope: %v, want Not Found", err)
		}
		body := httpGet(t, url)
		for _, want := range []string{`"nope"`, "core, full, standard"} {
			if !strings.Contains(body, want) {
				t.Errorf("404 body %q lacks %s", body, want)
			}
		}
	})
}

func checkUnknownProfile(t *testing.T, flags, env []string) {
	t.Helper()
	args := append([]string{"--profiles", profilesFile, "--telemetry", t.TempDir()}, flags...)
	args = append(args, upstreamArgs(filepath.Join(t.TempDir(), "log"))...)
	cmd := exec.Command(bins.server, args...)
	cmd.Env = append(os.Environ(), env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	err := cmd.Run()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 2 {
		t.Fatalf("exit: %v, want status 2; stderr:\n%s", err, &stderr)
	}
	for _, want := range []string{`unknown profile "nope"`, "core, full, standard"} {
		if !strings.Contains(stderr.String(), want) {
			t.Errorf("stderr %q lacks %q", stderr.String(), want)
		}
	}
}

func TestNoCursorListsEveryAllowedTool(t *testing.T) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			// page size 2 < 3 tools: without a cursor paging must not apply.
			s := start(t, m, "/mcp", "", "--page-size", "2")
			names, next := listNames(t, s.session, "")
			if !reflect.DeepEqual(names, membership["core"]) || next != "" {
				t.Errorf("tools/list = %v next %q, want %v and no nextCursor", names, next, membership["core"])
			}
		})
	}
}

func TestPaging(t *testing.T) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp/standard", "", "--profile", "standard", "--page-size", "3")
			first, c1 := listNames(t, s.session, gateway.StartCursor)
			middle, c2 := listNames(t, s.session, c1)
			last, c3 := listNames(t, s.session, c2)
			all := membership["standard"]
			if !reflect.DeepEqual(first, all[0:3]) || c1 == "" {
				t.Errorf("first page %v next %q, want %v and a nextCursor", first, c1, all[0:3])
			}
			if !reflect.DeepEqual(middle, all[3:6]) || c2 == "" {
				t.Errorf("middle page %v next %q, want %v and a nextCursor", middle, c2, all[3:6])
			}
			if !reflect.DeepEqual(last, all[6:8]) || c3 != "" {
				t.Errorf("last page %v next %q, want %v and no nextCursor", last, c3, all[6:8])
			}
		})
	}
}

func TestCursorBeyondTheEnd(t *testing.T) {
	key, _ := hex.DecodeString(cursorKeyHex)
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp/standard", "", "--profile", "standard", "--page-size", "3")
			for _, offset := range []int{8, 9, 1 << 40} {
				names, next := listNames(t, s.session, gateway.EncodeCursor(key, "standard", offset))
				if len(names) != 0 || next != "" {
					t.Errorf("offset %d: %v next %q, want an empty page and no nextCursor", offset, names, next)
				}
			}
		})
	}
}

func TestBadCursorIsInvalidParams(t *testing.T) {
	key, _ := hex.DecodeString(cursorKeyHex)
	otherKey := bytes.Repeat([]byte{7}, 32)
	valid := gateway.EncodeCursor(key, "standard", 3)
	tampered := []byte(valid)
	tampered[len(tampered)/2] ^= 1
	cases := []struct {
		name, cursor, message string
	}{
		{"not base64", "%%%not-a-cursor", "not base64url"},
		{"not json", "bm90IGpzb24", "undecodable"},
		{"forged", gateway.EncodeCursor(otherKey, "standard", 3), "failed verification"},
		{"tampered", string(tampered), ""},
		{"other profile", gateway.EncodeCursor(key, "full", 3), `issued for profile "full"`},
	}
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp/standard", "", "--profile", "standard", "--page-size", "3")
			if names, _ := listNames(t, s.session, valid); !reflect.DeepEqual(names, membership["standard"][3:6]) {
				t.Fatalf("valid minted cursor: %v, want the middle page", names)
			}
			for _, c := range cases {
				_, err := s.session.ListTools(context.Background(), &mcp.ListToolsParams{Cursor: c.cursor})
				if wireCode(err) != jsonrpc.CodeInvalidParams || !strings.Contains(err.Error(), c.message) {
					t.Errorf("%s: error %v, want -32602 saying %q", c.name, err, c.message)
				}
			}
		})
	}
}

// TestInstructions checks each profile's instructions for a client opening
// with server/discover (2026-07-28) and one opening with initialize
// (2025-11-25), over stdio and HTTP.
func TestInstructions(t *testing.T) {
	for _, m := range modes {
		for _, protocol := range []string{"2026-07-28", "2025-11-25"} {
			for name, want := range instructions {
				t.Run(fmt.Sprintf("%s/%s/%s", m, protocol, name), func(t *testing.T) {
					s := start(t, m, "/mcp/"+name, protocol, "--profile", name)
					init := s.session.InitializeResult()
					// Both transports serve both generations: 2026-07-28 over
					// HTTP on the stateless handler.
					if init.ProtocolVersion != protocol {
						t.Errorf("protocol %s, want %s", init.ProtocolVersion, protocol)
					}
					if init.Instructions != want {
						t.Errorf("instructions %q, want %q", init.Instructions, want)
					}
				})
			}
		}
	}
}

func TestProfileCoreMembership(t *testing.T)     { checkMembership(t, "core") }
func TestProfileStandardMembership(t *testing.T) { checkMembership(t, "standard") }
func TestProfileFullMembership(t *testing.T)     { checkMembership(t, "full") }

func checkMembership(t *testing.T, profile string) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp/"+profile, "", "--profile", profile)
			names, _ := listNames(t, s.session, "")
			if !reflect.DeepEqual(names, membership[profile]) {
				t.Errorf("profile %s lists %v, want exactly %v", profile, names, membership[profile])
			}
			var paged []string
			for c := gateway.StartCursor; c != ""; {
				var page []string
				page, c = listNames(t, s.session, c)
				paged = append(paged, page...)
			}
			if !reflect.DeepEqual(paged, membership[profile]) {
				t.Errorf("profile %s pages through %v, want exactly %v", profile, paged, membership[profile])
			}
		})
	}
}

// httpGet returns the body of GET url.
func httpGet(t *testing.T, url string) string {
	t.Helper()
	resp, err := nethttp.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return string(b)
}
