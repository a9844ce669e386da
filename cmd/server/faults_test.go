package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	nethttp "net/http"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/rawmcp"
	"github.com/toolprof/toolprof/telemetry"
)

// An upstream slower than --call-timeout: the client gets upstream_timeout,
// the upstream is sent notifications/cancelled for that request (seen by
// tee, independent of the gateway), and the session goes on.
func TestCallTimeoutCancelsUpstream(t *testing.T) {
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			// test_tool_with_progress sleeps 150 ms upstream; 30 ms cuts it off.
			s := start(t, m, "/mcp", "", "--profile", "standard", "--call-timeout", "30ms")
			res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_tool_with_progress"})
			if err != nil {
				t.Fatal(err)
			}
			env := envelope(t, res)
			if env.Code != gateway.CodeUpstreamTimeout || !env.Retryable || !strings.Contains(env.Message, "30ms") {
				t.Errorf("envelope %+v, want retryable upstream_timeout naming 30ms", env)
			}
			log := s.upstreamLog(t, func(log string) bool { return strings.Contains(log, "notifications/cancelled") })
			callID, cancelledID := requestIDs(log, "test_tool_with_progress")
			if callID == "" || cancelledID != callID {
				t.Errorf("upstream log: call id %q, cancelled id %q, want the call cancelled:\n%s", callID, cancelledID, log)
			}
			if res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"}); err != nil || res.IsError {
				t.Errorf("next call: %v %+v", err, res)
			}
		})
	}
}

// An upstream that hangs: test_elicitation waits upstream for the client's
// answer to the elicitation the gateway relays, and this client never
// answers. Past --call-timeout the client gets upstream_timeout and the
// upstream is sent notifications/cancelled for that request (tee log).
func TestHangingUpstreamTimesOut(t *testing.T) {
	_, s := startHTTPServer(t, nil, "--profile", "full", "--call-timeout", "200ms")
	asked := make(chan struct{}, 1)
	withdrawn := make(chan struct{}, 1)
	release := make(chan struct{})
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		ElicitationHandler: func(ctx context.Context, _ *mcp.ElicitRequest) (*mcp.ElicitResult, error) {
			select {
			case asked <- struct{}{}:
			default:
			}
			// Never answers: the gateway withdraws the question when the
			// call times out (release only lets a failed test close the
			// session, which waits for its handlers).
			select {
			case <-ctx.Done():
				withdrawn <- struct{}{}
			case <-release:
			}
			return nil, errors.New("no answer")
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	defer close(release)
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_elicitation", Arguments: map[string]any{"message": "name?"}})
	if err != nil {
		t.Fatal(err)
	}
	select {
	case <-asked:
	default:
		t.Fatal("the elicitation never reached the client: the upstream was not waiting on it")
	}
	if env := envelope(t, res); env.Code != gateway.CodeUpstreamTimeout {
		t.Errorf("envelope %+v, want upstream_timeout", env)
	}
	select {
	case <-withdrawn:
	case <-time.After(10 * time.Second):
		t.Errorf("the client's elicitation handler is still waiting 10 s after the call timed out: the relayed elicitation was not withdrawn")
	}
	log := s.upstreamLog(t, func(log string) bool { return strings.Contains(log, "notifications/cancelled") })
	if callID, cancelledID := requestIDs(log, "test_elicitation"); callID == "" || cancelledID != callID {
		t.Errorf("upstream log: call id %q, cancelled id %q, want the call cancelled:\n%s", callID, cancelledID, log)
	}
}

// requestIDs finds, in a log of JSON-RPC messages, the id of the call of
// tool and the requestId of the first notifications/cancelled.
func requestIDs(log, tool string) (call, cancelled string) {
	for line := range strings.Lines(log) {
		var msg struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name      string          `json:"name"`
				RequestID json.RawMessage `json:"requestId"`
			} `json:"params"`
		}
		if json.Unmarshal([]byte(line), &msg) != nil {
			continue
		}
		switch {
		case msg.Method == "tools/call" && msg.Params.Name == tool:
			call = string(msg.ID)
		case msg.Method == "notifications/cancelled" && cancelled == "":
			cancelled = string(msg.Params.RequestID)
		}
	}
	return call, cancelled
}

// reloadProfiles is the test profiles file with test_audio_content added to
// core.
func reloadProfiles(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile(profilesFile)
	if err != nil {
		t.Fatal(err)
	}
	s := string(b)
	old := `"test_error_handling", "test_image_content", "test_simple_text"`
	if !strings.Contains(s, old) {
		t.Fatalf("%s: core's tool list is not %s", profilesFile, old)
	}
	return strings.Replace(s, old, `"test_audio_content", `+old, 1)
}

// replaceFile replaces path's content atomically, as an editor or the
// nightly job does.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

func healthOf(t *testing.T, base string) gateway.Health {
	t.Helper()
	resp, err := nethttp.Get(base + "/healthz")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var h gateway.Health
	if err := json.NewDecoder(resp.Body).Decode(&h); err != nil {
		t.Fatal(err)
	}
	return h
}

// The profiles file changes under a running HTTP server: a good file is
// served to the next session; a broken or removed one (the generated file
// or profiles.toml) is reported (health warnings, stderr) while the last
// good set keeps serving; fixing it clears the finding. Sessions already
// open keep working throughout.
func TestProfilesReplacedWhileRunning(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.generated.toml")
	orig, err := os.ReadFile(profilesFile)
	if err != nil {
		t.Fatal(err)
	}
	replaceFile(t, path, string(orig))
	base, s := startHTTPServer(t, nil, "--profiles", path)
	connectNew := func() *mcp.ClientSession {
		t.Helper()
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
			&mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cs.Close() })
		return cs
	}
	first := connectNew()
	if names, _ := listNames(t, first, ""); !reflect.DeepEqual(names, membership["core"]) {
		t.Fatalf("before: core lists %v", names)
	}
	withAudio := append([]string{"test_audio_content"}, membership["core"]...)
	brokenLine := "version = 1\ndefault = \"core\"\nbogus_key = 3\n"
	steps := []struct {
		name    string
		content string
		want    []string
		finding bool
	}{
		{"good file replaced", reloadProfiles(t), withAudio, false},
		{"broken file: last good kept", brokenLine, withAudio, true},
		{"removed: last good kept", "", withAudio, true},
		{"fixed: original served", string(orig), membership["core"], false},
	}
	for _, st := range steps {
		if st.content == "" {
			if err := os.Remove(path); err != nil {
				t.Fatal(err)
			}
		} else {
			replaceFile(t, path, st.content)
		}
		time.Sleep(reloadEvery) // the server looks at the files once per interval
		cs := connectNew()
		names, _ := listNames(t, cs, "")
		if !reflect.DeepEqual(names, st.want) {
			t.Errorf("%s: a new session lists %v, want %v", st.name, names, st.want)
		}
		h := healthOf(t, base)
		found := strings.Contains(strings.Join(h.Warnings, "\n"), "cannot be served")
		if found != st.finding || (found && !strings.Contains(strings.Join(h.Warnings, "\n"), path)) {
			t.Errorf("%s: health warnings %q, want a finding naming the file: %v", st.name, h.Warnings, st.finding)
		}
		if res, err := first.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"}); err != nil || res.IsError {
			t.Errorf("%s: the first session's call: %v %+v", st.name, err, res)
		}
	}
	// profiles.toml beside it is watched too. Once served, its removal
	// (an editor or a checkout replacing it) is a reload problem like a
	// broken file: its deny list stays in force, the finding names it, and
	// its return is a reload as any other.
	policy := filepath.Join(filepath.Dir(path), "profiles.toml")
	denied := []string{"test_error_handling", "test_image_content"}
	policySteps := []struct {
		name    string
		content string // "": removed
		want    []string
		finding bool
	}{
		{"profiles.toml denying test_simple_text", "version = 1\n\n[[profile]]\nname = \"core\"\ndeny = [\"test_simple_text\"]\n", denied, false},
		{"profiles.toml removed: its deny kept", "", denied, true},
		{"profiles.toml back", "version = 1\n\n[[profile]]\nname = \"core\"\ndeny = [\"test_simple_text\"]\n", denied, false},
		{"profiles.toml reduced to its version", "version = 1\n", membership["core"], false},
	}
	for _, st := range policySteps {
		if st.content == "" {
			if err := os.Remove(policy); err != nil {
				t.Fatal(err)
			}
		} else {
			replaceFile(t, policy, st.content)
		}
		time.Sleep(reloadEvery)
		if names, _ := listNames(t, connectNew(), ""); !reflect.DeepEqual(names, st.want) {
			t.Errorf("%s: a new session lists %v, want %v", st.name, names, st.want)
		}
		warnings := strings.Join(healthOf(t, base).Warnings, "\n")
		found := strings.Contains(warnings, policy+" was removed") && strings.Contains(warnings, "serving the last good profiles")
		if found != st.finding {
			t.Errorf("%s: health warnings %q, want the removal reported: %v", st.name, warnings, st.finding)
		}
	}
	if !strings.Contains(s.stderr.String(), "server: warning: profiles "+path+" changed but cannot be served ("+policy+" was removed") {
		t.Errorf("stderr does not report profiles.toml's removal:\n%s", s.stderr)
	}
	// A profile added by a reload is served at /mcp/NAME.
	replaceFile(t, path, string(orig)+"\n[[profile]]\nname = \"extra\"\ntools = [\"test_simple_text\"]\n")
	time.Sleep(reloadEvery)
	connectNew() // opens a session, which reloads
	extra, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: base + "/mcp/extra", MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("/mcp/extra after the reload added it: %v", err)
	}
	defer extra.Close()
	if names, _ := listNames(t, extra, ""); !reflect.DeepEqual(names, []string{"test_simple_text"}) {
		t.Errorf("/mcp/extra lists %v", names)
	}
	if !strings.Contains(s.stderr.String(), "bogus_key") {
		t.Errorf("stderr does not report the broken file's key:\n%s", s.stderr)
	}
}

// postRaw posts one JSON-RPC message on an HTTP session (id "" opens one)
// and returns the session id the server gives.
func postRaw(ctx context.Context, t *testing.T, url, session, body string) (string, error) {
	t.Helper()
	req, err := rawmcp.NewPost(ctx, url, session, "2025-11-25", body)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	if _, err := io.ReadAll(resp.Body); err != nil {
		return "", err
	}
	if resp.StatusCode >= 300 {
		return "", fmt.Errorf("%s: status %d", body, resp.StatusCode)
	}
	return resp.Header.Get("Mcp-Session-Id"), nil
}

// A client that drops its connection in the middle of a call: the upstream
// is sent notifications/cancelled for it (tee log), the call is recorded as
// cancelled, the session is recorded as ended, and no goroutine is left.
// The call is test_elicitation, which waits upstream until the client
// answers the elicitation the gateway relays to it: the client drops the
// connection when that request arrives, so the call is surely still
// running.
func TestClientDisconnectMidCall(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	dir := t.TempDir()
	teeLog := filepath.Join(dir, "upstream.log")
	telemetryDir := filepath.Join(dir, "telemetry")
	url, stderr, stop := inProcessServer(t, append([]string{"--profiles", profilesFile, "--profile", "full", "--telemetry", telemetryDir}, upstreamArgs(teeLog)...)...)
	s := &served{upstream: teeLog}

	ctx := context.Background()
	id, err := postRaw(ctx, t, url, "", strings.Replace(initializeBody, `"capabilities":{}`, `"capabilities":{"elicitation":{"form":{}}}`, 1))
	if err != nil || id == "" {
		t.Fatalf("initialize: %q %v", id, err)
	}
	if _, err := postRaw(ctx, t, url, id, `{"jsonrpc":"2.0","method":"notifications/initialized"}`); err != nil {
		t.Fatal(err)
	}
	callCtx, drop := context.WithCancel(ctx)
	defer drop()
	req, err := rawmcp.NewPost(callCtx, url, id, "2025-11-25",
		`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"test_elicitation","arguments":{"message":"name?"}}}`)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(resp.Body)
	asked := false
	for !asked && sc.Scan() {
		asked = strings.Contains(sc.Text(), "elicitation/create")
	}
	if !asked {
		t.Fatalf("the call's stream ended without the elicitation request: %v", sc.Err())
	}
	drop() // closes the connection: no cancellation is sent by the client
	resp.Body.Close()
	log := s.upstreamLog(t, func(log string) bool { return strings.Contains(log, "notifications/cancelled") })
	if callID, cancelledID := requestIDs(log, "test_elicitation"); callID == "" || cancelledID != callID {
		t.Errorf("upstream log: call id %q, cancelled id %q, want the call cancelled upstream:\n%s", callID, cancelledID, log)
	}
	nethttp.DefaultClient.CloseIdleConnections()
	if err := stop(); err != nil {
		t.Fatalf("server: %v\n%s", err, stderr)
	}
	sessions, calls, err := telemetry.ReadAll(ctx, []string{telemetryDir}, telemetry.Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 1 || calls[0].Outcome != telemetry.OutcomeCancelled {
		t.Errorf("calls %+v, want one cancelled", calls)
	}
	if len(sessions) != 1 || sessions[0].End.IsZero() {
		t.Errorf("sessions %+v, want one ended", sessions)
	}
}

// The upstream process is killed while a call is running in it (at its
// first progress notification, relayed to the client): the client gets
// upstream_unavailable, the call is recorded as upstream_error, health shows
// the restart, and calls succeed again once the upstream is back.
func TestUpstreamKilledMidCall(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "telemetry")
	p := startServerProc(t, "--profile", "standard", "--telemetry", dir)
	before := healthOf(t, p.base)
	if len(before.Upstreams) != 1 || before.Upstreams[0].PID == 0 {
		t.Fatalf("health upstreams %+v, want one with a pid", before.Upstreams)
	}
	pid := before.Upstreams[0].PID
	var once sync.Once
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(context.Context, *mcp.ProgressNotificationClientRequest) {
			once.Do(func() { syscall.Kill(pid, syscall.SIGKILL) })
		},
	}).Connect(context.Background(), &mcp.StreamableClientTransport{Endpoint: p.base + "/mcp", MaxRetries: -1}, &mcp.ClientSessionOptions{ProtocolVersion: legacyProtocol})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_tool_with_progress", Meta: mcp.Meta{"progressToken": "p1"}})
	if err != nil {
		t.Fatal(err)
	}
	if env := envelope(t, res); env.Code != gateway.CodeUpstreamUnavailable || !env.Retryable {
		t.Errorf("envelope %+v, want retryable upstream_unavailable", env)
	}
	deadline := time.Now().Add(20 * time.Second)
	for {
		h := healthOf(t, p.base).Upstreams[0]
		if h.Restarts == 1 && h.PID != pid && h.State == "ready" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("upstream health %+v, want ready again after one restart", h)
		}
		time.Sleep(50 * time.Millisecond)
	}
	if res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_simple_text"}); err != nil || res.IsError {
		t.Errorf("after the restart: %v %+v", err, res)
	}
	cs.Close()
	if err := p.term(); err != nil {
		t.Fatalf("exit: %v\n%s", err, p.stderr)
	}
	_, calls, err := telemetry.ReadAll(context.Background(), []string{dir}, telemetry.Window{})
	if err != nil || len(calls) != 2 || calls[0].Outcome != telemetry.OutcomeUpstreamError || calls[1].Outcome != telemetry.OutcomeOK {
		t.Errorf("calls %+v, %v: want upstream_error then ok", calls, err)
	}
}
