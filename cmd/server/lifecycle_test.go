package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	nethttp "net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"syscall"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/telemetry"
)

// secretArgument is an argument value that must never reach telemetry.
const secretArgument = "s3cr3t-argument-value-4f1c"

func TestTelemetry(t *testing.T) {
	wantHash := everythingCatalogHash(t)
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp", "", "--page-size", "2")
			ctx := context.Background()
			listNames(t, s.session, "")
			_, next := listNames(t, s.session, gateway.StartCursor)
			listNames(t, s.session, next)
			calls := []string{"test_simple_text", "test_error_handling", "test_audio_content", "no_such_tool"}
			for _, name := range calls {
				s.session.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: map[string]any{"note": secretArgument}})
			}
			if err := s.stop(); err != nil {
				t.Fatalf("server exit: %v\n%s", err, s.stderr)
			}

			sessions, recorded, err := telemetry.ReadAll(ctx, []string{s.telemetry}, telemetry.Window{})
			if err != nil {
				t.Fatal(err)
			}
			if len(sessions) != 1 {
				t.Fatalf("%d sessions recorded, want 1: %+v", len(sessions), sessions)
			}
			got := sessions[0]
			// The go-sdk client speaks 2026-07-28 on both transports, served
			// without protocol sessions on both, so its requests form a
			// usage session attributed by caller.
			want := telemetry.Session{
				ID: got.ID, Start: got.Start, End: got.End,
				Transport: string(m), ClientName: "toolprof-test", ClientVersion: "1.2.3",
				ProtocolVersion: "2026-07-28", Profile: "core", ServerVersion: version.Version,
				CatalogHash: wantHash, ToolsListCalls: 3, ToolsListPages: 3, Attribution: telemetry.AttributionCaller,
			}
			if got.ID == "" || got.Start.IsZero() || got.End.Before(got.Start) {
				t.Errorf("session id %q start %v end %v: want an id and start <= end", got.ID, got.Start, got.End)
			}
			if !reflect.DeepEqual(got, want) {
				t.Errorf("session\n got %+v\nwant %+v", got, want)
			}
			var outcomes []telemetry.Outcome
			for i, c := range recorded {
				outcomes = append(outcomes, c.Outcome)
				if c.Session != got.ID || c.Seq != uint64(i+1) || c.Tool != calls[i] || c.RequestBytes == 0 {
					t.Errorf("call %d = %+v", i, c)
				}
				if c.Outcome != telemetry.OutcomeUnknownTool && c.ResponseBytes == 0 {
					t.Errorf("call %d (%s): no response size", i, c.Tool)
				}
			}
			wantOutcomes := []telemetry.Outcome{telemetry.OutcomeOK, telemetry.OutcomeToolError, telemetry.OutcomeDenied, telemetry.OutcomeUnknownTool}
			if !reflect.DeepEqual(outcomes, wantOutcomes) {
				t.Errorf("outcomes %v, want %v", outcomes, wantOutcomes)
			}
			assertNotStored(t, s.telemetry, secretArgument)
		})
	}
}

// assertNotStored fails if any file under dir contains secret.
func assertNotStored(t *testing.T, dir, secret string) {
	t.Helper()
	files := 0
	filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files++
		b, err := os.ReadFile(path)
		if err != nil {
			t.Error(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s holds an argument value", path)
		}
		return nil
	})
	if files == 0 {
		t.Errorf("no telemetry files in %s", dir)
	}
}

// everythingCatalogHash connects to the everything-server directly and
// hashes its catalog.
func everythingCatalogHash(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bins.everything)}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var c catalog.Catalog
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			t.Fatal(err)
		}
		c.Tools = append(c.Tools, tool)
	}
	h, err := c.Hash()
	if err != nil {
		t.Fatal(err)
	}
	return h
}

// An exploration session is served full, or the --max-profile ceiling when
// full lies beyond it, and the telemetry records what it was served (and
// whether only read tools, under --read-only) so that the derivation does
// not learn from it as if it had seen every tool.
func TestExploreServesFullAndMarks(t *testing.T) {
	tests := []struct {
		name         string
		flags        []string
		wantProfile  string
		wantReadOnly bool
	}{
		{name: "full", flags: nil, wantProfile: "full"},
		{name: "ceiling", flags: []string{"--max-profile", "standard"}, wantProfile: "standard"},
		{name: "read-only", flags: []string{"--read-only"}, wantProfile: "full", wantReadOnly: true},
	}
	for _, tt := range tests {
		for _, m := range modes {
			t.Run(tt.name+"/"+string(m), func(t *testing.T) {
				// Per-session exploration is for protocol sessions: 2026-07-28
				// callers are picked by a stable hash (TestSessionlessListingIsStable).
				s := start(t, m, "/mcp", "2025-11-25", append([]string{"--explore", "1"}, tt.flags...)...)
				if !tt.wantReadOnly {
					names, _ := listNames(t, s.session, "")
					if !reflect.DeepEqual(names, membership[tt.wantProfile]) {
						t.Errorf("exploration session lists %v, want %s", names, tt.wantProfile)
					}
					res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_audio_content"})
					if err != nil || res.IsError {
						t.Errorf("exploration call outside core: %v %+v, want forwarded", err, res)
					}
				}
				if want := instructions[tt.wantProfile]; s.session.InitializeResult().Instructions != want {
					t.Errorf("instructions %q, want %s's", s.session.InitializeResult().Instructions, tt.wantProfile)
				}
				if err := s.stop(); err != nil {
					t.Fatal(err)
				}
				sessions, _, err := telemetry.ReadAll(context.Background(), []string{s.telemetry}, telemetry.Window{})
				if err != nil || len(sessions) != 1 {
					t.Fatalf("sessions %+v, %v", sessions, err)
				}
				if got := sessions[0]; !got.Exploration || got.Profile != tt.wantProfile || got.ReadOnly != tt.wantReadOnly {
					t.Errorf("session profile %q exploration %v read-only %v, want %s, marked, read-only %v", got.Profile, got.Exploration, got.ReadOnly, tt.wantProfile, tt.wantReadOnly)
				}
			})
		}
	}
}

func TestRawArgumentsForwarded(t *testing.T) {
	// Keys out of order and nested: a gateway that decoded and re-encoded
	// the arguments would sort them.
	args := json.RawMessage(`{"name":"Ada","email":"ada@example.org","address":{"street":"1 Way","city":"X"},"contactMethod":"email"}`)
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := start(t, m, "/mcp/standard", "", "--profile", "standard")
			res, err := s.session.CallTool(context.Background(), &mcp.CallToolParams{Name: "json_schema_2020_12_tool", Arguments: args})
			if err != nil || res.IsError {
				t.Fatalf("call: %v %+v", err, res)
			}
			want := `"arguments":` + string(args)
			log := s.upstreamLog(t, func(log string) bool { return strings.Contains(log, want) })
			if !strings.Contains(log, want) {
				t.Errorf("upstream did not receive the arguments byte for byte; log:\n%s", log)
			}
		})
	}
}

func TestCancelledCall(t *testing.T) {
	s := start(t, overStdio, "", "", "--profile", "standard")
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := s.session.CallTool(ctx, &mcp.CallToolParams{Name: "test_tool_with_progress"})
		done <- err
	}()
	// The upstream sleeps 150 ms in this tool; cancel once the call is out.
	s.upstreamCalls(t, "test_tool_with_progress")
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("call: %v, want cancelled", err)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}
	_, calls, err := telemetry.ReadAll(context.Background(), []string{s.telemetry}, telemetry.Window{})
	if err != nil || len(calls) != 1 || calls[0].Outcome != telemetry.OutcomeCancelled {
		t.Errorf("calls %+v, %v: want one cancelled call", calls, err)
	}
}

// TestNoProfilesFileServesFull: with no profiles file named and the
// default one absent (day one) every tool is served as full, and stderr
// and the health warnings say so.
func TestNoProfilesFileServesFull(t *testing.T) {
	if _, err := os.Stat(defaultProfilesPath); !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("the test needs no %s in the package directory: %v", defaultProfilesPath, err)
	}
	for _, m := range modes {
		t.Run(string(m), func(t *testing.T) {
			s := startFlags(t, m, "/mcp", "", nil)
			names, _ := listNames(t, s.session, "")
			if !reflect.DeepEqual(names, membership["full"]) {
				t.Errorf("lists %v, want every tool", names)
			}
			if !strings.Contains(s.stderr.String(), `serving every tool as profile "full"`) {
				t.Errorf("stderr does not say full is served:\n%s", s.stderr)
			}
		})
	}
	code, out, stderr := runServer(t, nil, append([]string{"--health"}, upstreamArgs(filepath.Join(t.TempDir(), "log"))...)...)
	var h gateway.Health
	if err := json.Unmarshal([]byte(out), &h); code != 0 || err != nil {
		t.Fatalf("--health: exit %d, %v\n%s", code, err, stderr)
	}
	if !slices.ContainsFunc(h.Warnings, func(w string) bool { return strings.Contains(w, "no profiles file") && strings.Contains(w, "day one") }) {
		t.Errorf("health warnings %q do not say every tool is served on day one", h.Warnings)
	}
}

// TestNamedProfilesFileMustExist: a profiles file named by --profiles or
// $TOOLPROF_PROFILES that is missing or unreadable exits 1 naming it,
// rather than serving every tool.
func TestNamedProfilesFileMustExist(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "profiles.genrated.toml")
	cases := []struct {
		name  string
		env   []string
		args  []string
		wants []string
	}{
		{"missing --profiles", nil, []string{"--profiles", missing}, []string{"--profiles " + missing, "does not exist"}},
		{"missing $TOOLPROF_PROFILES", []string{"TOOLPROF_PROFILES=" + missing}, nil, []string{"$TOOLPROF_PROFILES " + missing, "does not exist"}},
		{"unreadable --profiles", nil, []string{"--profiles", dir}, []string{dir, "is a directory"}},
		{"--profiles wins over a missing $TOOLPROF_PROFILES", []string{"TOOLPROF_PROFILES=" + missing}, []string{"--profiles", profilesFile}, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			args := append(append(c.args, "--health"), upstreamArgs(filepath.Join(t.TempDir(), "log"))...)
			code, _, stderr := runServer(t, c.env, args...)
			want := 1
			if c.wants == nil {
				want = 0
			}
			if code != want {
				t.Errorf("exit %d, want %d; stderr:\n%s", code, want, stderr)
			}
			for _, w := range c.wants {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "serving every tool") {
				t.Errorf("stderr says every tool is served:\n%s", stderr)
			}
		})
	}
}

// warningProfiles names a tool the everything-server does not offer.
const warningProfiles = `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["test_simple_text", "gone_tool"]
`

func TestStartupWarningAndHealth(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.generated.toml")
	if err := os.WriteFile(path, []byte(warningProfiles), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bins.server, append([]string{"--profiles", path, "--health"}, upstreamArgs(filepath.Join(t.TempDir(), "log"))...)...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("--health: %v\n%s", err, &stderr)
	}
	if n := strings.Count(stderr.String(), "gone_tool"); !strings.Contains(stderr.String(), "level=WARN msg=profiles") || n != 1 {
		t.Errorf("stderr names gone_tool %d times, want one start-up warning:\n%s", n, &stderr)
	}
	var h gateway.Health
	if err := json.Unmarshal(stdout.Bytes(), &h); err != nil {
		t.Fatalf("health %q: %v", &stdout, err)
	}
	if h.Default != "core" || !reflect.DeepEqual(h.Profiles, []string{"core", "full"}) || h.Upstream.Tools != len(membership["full"]) {
		t.Errorf("health = %+v", h)
	}
	if len(h.Warnings) != 1 || !strings.Contains(h.Warnings[0], "gone_tool") {
		t.Errorf("health warnings %q, want the missing tool", h.Warnings)
	}
}

func TestMaxProfileCeiling(t *testing.T) {
	t.Run("http", func(t *testing.T) {
		s := start(t, overHTTP, "/mcp/standard", "", "--max-profile", "standard")
		if names, _ := listNames(t, s.session, ""); !reflect.DeepEqual(names, membership["standard"]) {
			t.Errorf("/mcp/standard lists %v", names)
		}
		base := strings.TrimSuffix(s.url, "/mcp/standard")
		resp, err := nethttp.Post(base+"/mcp/full", "application/json", strings.NewReader(`{}`))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != nethttp.StatusForbidden || !strings.Contains(string(body), `ceiling profile "standard"`) || !strings.Contains(string(body), "core, standard") {
			t.Errorf("/mcp/full: %d %q, want 403 naming the ceiling and the servable profiles", resp.StatusCode, body)
		}
	})
	t.Run("stdio", func(t *testing.T) {
		args := append([]string{"--profiles", profilesFile, "--telemetry", t.TempDir(), "--profile", "full", "--max-profile", "standard"},
			upstreamArgs(filepath.Join(t.TempDir(), "log"))...)
		cmd := exec.Command(bins.server, args...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		err := cmd.Run()
		var ee *exec.ExitError
		if !errors.As(err, &ee) || ee.ExitCode() != 2 || !strings.Contains(stderr.String(), `ceiling profile "standard"`) {
			t.Errorf("--profile full --max-profile standard: %v\n%s\nwant exit 2 naming the ceiling", err, &stderr)
		}
	})
}

func TestStdioShutdown(t *testing.T) {
	t.Run("stdin EOF", func(t *testing.T) {
		dir := t.TempDir()
		cmd := exec.Command(bins.server, append([]string{"--profiles", profilesFile, "--telemetry", dir},
			upstreamArgs(filepath.Join(t.TempDir(), "log"))...)...)
		cmd.Stdin = strings.NewReader("")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			t.Fatalf("exit after stdin EOF: %v (want 0)\n%s", err, &stderr)
		}
	})
	t.Run("SIGTERM", func(t *testing.T) {
		s := start(t, overStdio, "", "")
		listNames(t, s.session, "")
		// The server's process: the client session's command.
		if err := signalServer(s, syscall.SIGTERM); err != nil {
			t.Fatal(err)
		}
		if err := s.session.Wait(); err != nil && !errors.Is(err, mcp.ErrConnectionClosed) {
			t.Logf("session wait: %v", err)
		}
		if err := s.stop(); err != nil {
			t.Fatalf("exit after SIGTERM: %v (want 0)\n%s", err, s.stderr)
		}
		sessions, _, err := telemetry.ReadAll(context.Background(), []string{s.telemetry}, telemetry.Window{})
		if err != nil || len(sessions) != 1 || sessions[0].End.IsZero() {
			t.Errorf("sessions %+v, %v: want one ended session flushed", sessions, err)
		}
	})
}

func signalServer(s *served, sig os.Signal) error {
	if s.cmd == nil || s.cmd.Process == nil {
		return errors.New("no server process")
	}
	return s.cmd.Process.Signal(sig)
}

func TestUsageErrors(t *testing.T) {
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "no upstream command"},
		{[]string{"--page-size", "0", "--", "x"}, "--page-size 0"},
		{[]string{"--explore", "1.5", "--", "x"}, "--explore 1.5"},
		{[]string{"--http", "0.0.0.0:8080", "--", "x"}, "not a loopback address"},
		{[]string{"--http", "nonsense", "--", "x"}, "want HOST:PORT"},
		{[]string{"--no-such-flag"}, "no-such-flag"},
		{[]string{"--max-handshake-tokens", "-1", "--", "x"}, "--max-handshake-tokens -1: must not be negative"},
		{[]string{"--max-handshake-bytes", "-5", "--", "x"}, "--max-handshake-bytes -5: must not be negative"},
		{[]string{"--icons", "strip", "--", "x"}, `--icons "strip": want keep or drop`},
	}
	for _, c := range cases {
		var stderr bytes.Buffer
		t.Setenv(cursorKeyEnv, "")
		err := run(context.Background(), c.args, strings.NewReader(""), io.Discard, &stderr)
		if code := exitCode(err, io.Discard); code != 2 || !strings.Contains(err.Error()+stderr.String(), c.want) {
			t.Errorf("run %q: %v (exit %d), want exit 2 saying %q", c.args, err, code, c.want)
		}
	}
}

func TestBadCursorKey(t *testing.T) {
	const secret = "zz-not-hex-secret"
	t.Setenv(cursorKeyEnv, secret)
	err := run(context.Background(), []string{"--", "x"}, strings.NewReader(""), io.Discard, io.Discard)
	if exitCode(err, io.Discard) != 2 || !strings.Contains(err.Error(), cursorKeyEnv) || strings.Contains(err.Error(), secret) {
		t.Errorf("bad key: %v, want exit 2 naming the variable but not its value", err)
	}
	t.Setenv(cursorKeyEnv, "00112233") // hex, but short
	if err := run(context.Background(), []string{"--", "x"}, strings.NewReader(""), io.Discard, io.Discard); exitCode(err, io.Discard) != 2 {
		t.Errorf("short key: %v, want exit 2", err)
	}
}

func TestBadProfilesFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.generated.toml")
	if err := os.WriteFile(path, []byte("version = 1\ndefault = \"core\"\nbogus = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Setenv(cursorKeyEnv, "")
	err := run(context.Background(), []string{"--profiles", path, "--", "x"}, strings.NewReader(""), io.Discard, io.Discard)
	if err == nil || !strings.Contains(err.Error(), path) || !strings.Contains(err.Error(), "bogus") {
		t.Errorf("bad profiles file: %v, want an error naming the file and the key", err)
	}
}

// The tools a profile's destructive rule removed are named, with the
// setting that allows them, once on stderr at start and once in --health.
func TestRemovedToolsNamedOnceAtStart(t *testing.T) {
	path := profilesWithPolicy(t, "version = 1\ndestructive = [\"test_image_content\", \"test_error_handling\"]\n")
	want := `profile \"core\" serves 1 of the 3 offered tools it names: the destructive rule removed test_error_handling, test_image_content (set allow_destructive = true under [[profile]] name = \"core\" in ` + filepath.Join(filepath.Dir(path), "profiles.toml") + ` to serve them)`
	stdout, stderr, err := runHealth(t, nil, "--profiles", path)
	if err != nil {
		t.Fatalf("--health: %v\n%s", err, stderr)
	}
	if n := strings.Count(stderr, want); n != 1 || strings.Count(stderr, "test_error_handling") != 2 { // core and standard
		t.Errorf("--health stderr names the removal %d times, want once:\n%s", n, stderr)
	}
	var h gateway.Health
	if err := json.Unmarshal([]byte(stdout), &h); err != nil {
		t.Fatalf("health %q: %v", stdout, err)
	}
	unquoted := strings.ReplaceAll(want, `\"`, `"`)
	if n := slices.Index(h.Warnings, unquoted); n < 0 || slices.Contains(h.Warnings[n+1:], unquoted) {
		t.Errorf("health warnings %q, want %q once", h.Warnings, unquoted)
	}
	s := start(t, overStdio, "", "", "--profiles", path, "--max-handshake-tokens", "1000000")
	s.session.Close()
	s.cmd.Wait()
	if n := strings.Count(s.stderr.String(), want); n != 1 {
		t.Errorf("start-up stderr names the removal %d times, want once:\n%s", n, s.stderr)
	}
}

// TestIconsFlag: --icons drop lists the upstream's tools without icons in
// a profile that does not say (here day one's full); the default keeps
// them.
func TestIconsFlag(t *testing.T) {
	icons := testupstream.IconServer(t)
	for _, c := range []struct {
		flags     []string
		wantIcons bool
	}{
		{nil, true},
		{[]string{"--icons", "keep"}, true},
		{[]string{"--icons", "drop"}, false},
	} {
		args := append([]string{"--telemetry", t.TempDir()}, c.flags...)
		rc := startRawUpstream(t, append(args, "--", icons))
		rc.handshake("1", "2025-11-25")
		rc.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
		r := rc.recv()
		if r.Error != nil || !strings.Contains(r.line, `"name":"draw"`) {
			t.Fatalf("%q: tools/list: %s", c.flags, r.line)
		}
		if got := strings.Contains(r.line, `"icons":`); got != c.wantIcons {
			t.Errorf("%q: icons listed %v, want %v: %s", c.flags, got, c.wantIcons, r.line)
		}
	}
}
