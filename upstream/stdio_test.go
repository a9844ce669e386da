package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestOversizedAnswerSparesTheSession: a 20 MB answer (over the SDK's
// 16 MiB frame) fails its own call with a TooLargeError naming the limit,
// while a call in flight on the same session, later calls and the session
// itself go on.
func TestOversizedAnswerSparesTheSession(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	const huge = 20 << 20
	s := startSet(t, `{"mcpServers": {"h": `+stdioEntry(self, map[string]string{
		helperEnv: "1", "HELPER_ID": "h", "HELPER_FAKE_HUGE_BYTES": fmt.Sprint(huge)})+`}}`, nil, SetOptions{RequireAll: true})
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	type answer struct {
		text string
		err  error
	}
	waited := make(chan answer, 1)
	go func() {
		res, err := call(ctx, s, "wait", "")
		if err != nil {
			waited <- answer{err: err}
			return
		}
		waited <- answer{text: text(t, res)}
	}()
	_, err = call(ctx, s, "huge", "") // answered once "wait" is in flight
	var tl *TooLargeError
	if !errors.As(err, &tl) || !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge: %v, want a TooLargeError", err)
	}
	if tl.Limit != DefaultMaxMessageBytes || tl.Bytes <= huge || tl.Server != "h" || !strings.Contains(err.Error(), fmt.Sprint(DefaultMaxMessageBytes)) {
		t.Errorf("huge: %+v (%v), want over %d bytes against the %d limit", tl, err, huge, DefaultMaxMessageBytes)
	}
	var rpc *jsonrpc.Error
	if errors.As(err, &rpc) || errors.Is(err, ErrUnavailable) {
		t.Errorf("huge: %v is a JSON-RPC error or ErrUnavailable; want only ErrTooLarge", err)
	}
	if res, err := call(ctx, s, "release", ""); err != nil {
		t.Fatalf("release after the oversized answer: %v, %v", res, err)
	}
	if a := <-waited; a.err != nil || a.text != "released" {
		t.Errorf("call in flight: %q, %v; want it answered", a.text, a.err)
	}
	if h := health(s, "h"); h.State != StateReady || h.Restarts != 0 {
		t.Errorf("health = %+v, want the first session still ready", h)
	}
}

// TestLineGuard: lines within the limit pass unchanged; an oversized
// response is replaced by an error response with its id, whether the id
// comes first (Go SDK) or last (TypeScript SDK); an oversized request or
// notification is dropped.
func TestLineGuard(t *testing.T) {
	const limit = 100
	big := strings.Repeat("y", 3*limit)
	atLimit := `{"jsonrpc":"2.0","id":1,"result":{"t":"` + strings.Repeat("z", limit-42) + `"}}`
	if len(atLimit) != limit {
		t.Fatalf("atLimit is %d bytes", len(atLimit))
	}
	tests := []struct {
		name    string
		in      string
		want    string // the guard's output; "ERR(id)" stands for the error response for the first line
		dropped bool   // the first line is dropped without an answer
	}{
		{"small lines pass", "{\"a\":1}\n{\"b\":2}\r\n", "{\"a\":1}\n{\"b\":2}\r\n", false},
		{"a line at the limit passes", atLimit + "\r\n", atLimit + "\r\n", false},
		{"last line without newline", `{"a":1}`, `{"a":1}`, false},
		{"id first", `{"jsonrpc":"2.0","id":7,"result":{"t":"` + big + `"}}` + "\n{\"next\":1}\n", "ERR(7)\n{\"next\":1}\n", false},
		{"id last, string id", `{"result":{"t":"` + big + `","id":9},"jsonrpc":"2.0","id":"s-1"}` + "\r\n", `ERR("s-1")` + "\n", false},
		{"cut off by end of output", `{"jsonrpc":"2.0","id":3,"result":"` + big, "ERR(3)\n", false},
		{"notification dropped", `{"jsonrpc":"2.0","method":"notifications/message","params":{"d":"` + big + `"}}` + "\n{\"n\":2}\n", "{\"n\":2}\n", true},
		{"server request dropped", `{"jsonrpc":"2.0","id":4,"method":"sampling/createMessage","params":{"d":"` + big + `"}}` + "\n", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var dropped int64
			g := newLineGuard(strings.NewReader(tt.in), limit, func(n int64) { dropped += n })
			out, err := io.ReadAll(g)
			if err != nil {
				t.Fatal(err)
			}
			first, _, _ := strings.Cut(tt.in, "\n")
			size := int64(len(strings.TrimSuffix(first, "\r")))
			want := tt.want
			if i := strings.Index(want, "ERR("); i >= 0 {
				end := strings.Index(want[i:], ")")
				id := want[i+4 : i+end]
				data, _ := json.Marshal(tooLargeData{Toolprof: "message_too_large", Bytes: size, Limit: limit})
				resp, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": json.RawMessage(id), "error": map[string]any{"code": codeTooLarge, "message": "answer too large", "data": json.RawMessage(data)}})
				want = want[:i] + string(resp) + want[i+end+1:]
			}
			if !sameLines(t, string(out), want) {
				t.Errorf("out =\n%s\nwant\n%s", out, want)
			}
			if want := map[bool]int64{true: size}[tt.dropped]; dropped != want {
				t.Errorf("reported %d bytes dropped, want %d", dropped, want)
			}
		})
	}
}

// sameLines compares line by line, lines that are JSON as values.
func sameLines(t *testing.T, got, want string) bool {
	t.Helper()
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	if len(g) != len(w) {
		return false
	}
	for i := range g {
		var gv, wv any
		if json.Unmarshal([]byte(g[i]), &gv) == nil && json.Unmarshal([]byte(w[i]), &wv) == nil {
			gb, _ := json.Marshal(gv)
			wb, _ := json.Marshal(wv)
			if !bytes.Equal(gb, wb) {
				return false
			}
			continue
		}
		if g[i] != w[i] {
			return false
		}
	}
	return true
}

// TestCloseOfALingeringServerIsNoError: a stdio server that does not exit
// when its stdin closes (here a shell that runs the real server, then
// sleeps) is signalled by Close, and that end, which toolprof asked for,
// is not an error.
func TestCloseOfALingeringServerIsNoError(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc := resolve(t, `{"mcpServers": {"linger": `+stdioEntry("sh", map[string]string{helperEnv: "1", "HELPER_ID": "l"}, "-c", `"$0"; exec sleep 60`, self)+`}}`, nil)
	c := NewClient(doc.Servers[0], Options{TerminateDuration: 50 * time.Millisecond})
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Errorf("Close = %v, want nil: the server was stopped by toolprof", err)
	}
}

// TestCapabilitiesDoNotDependOnHandlers: a Client without elicitation and
// sampling handlers (the profiler's) declares to the server exactly what
// one with them (the gateway's) declares: ClientCapabilities, with roots,
// sampling and elicitation.
func TestCapabilitiesDoNotDependOnHandlers(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc := resolve(t, `{"mcpServers": {"h": `+stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_CAPS": "1"})+`}}`, nil)
	declared := map[string]map[string]any{}
	for name, opts := range map[string]Options{
		"no handlers": {},
		"gateway's handlers": {
			OnElicit: func(context.Context, string, *mcp.ElicitParams) (*mcp.ElicitResult, error) { return nil, nil },
			OnCreateMessage: func(context.Context, string, *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
				return nil, nil
			},
		},
	} {
		opts.ProtocolVersion = ProtocolVersion
		c := NewClient(doc.Servers[0], opts)
		if err := c.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		res, err := call(context.Background(), c, "caps", "")
		c.Close()
		if err != nil {
			t.Fatal(err)
		}
		var caps map[string]any
		if err := json.Unmarshal([]byte(text(t, res)), &caps); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"roots", "sampling", "elicitation"} {
			if _, ok := caps[k]; !ok {
				t.Errorf("%s: declared %s, without %s", name, text(t, res), k)
			}
		}
		declared[name] = caps
	}
	if !reflect.DeepEqual(declared["no handlers"], declared["gateway's handlers"]) {
		t.Errorf("declared %v without handlers, %v with them", declared["no handlers"], declared["gateway's handlers"])
	}
}

// TestUnavailableOwner: a name that no listing holds belongs to the server
// its prefix names (or the only server); while that one is not ready the
// name is unavailable, naming it, and otherwise unknown.
func TestUnavailableOwner(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	ready := stdioEntry(self, map[string]string{helperEnv: "1"})
	gone := stdioEntry("/nonexistent/toolprof-gone", nil)
	opts := SetOptions{Client: Options{Backoff: Backoff{Initial: time.Hour}}}
	two := startSet(t, `{"mcpServers": {"up": `+ready+`, "gone": `+gone+`}}`, nil, opts)
	one := startSet(t, `{"mcpServers": {"gone": `+gone+`}}`, nil, opts)
	for _, tt := range []struct {
		set     *Set
		tool    string
		unavail bool
	}{
		{two, "gone__anything", true},
		{two, "up__anything", false},
		{two, "nobody__anything", false},
		{two, "gone__", false},
		{one, "anything", true},
	} {
		err := tt.set.Unavailable(tt.tool)
		if tt.unavail != (err != nil) || err != nil && (!errors.Is(err, ErrUnavailable) || !strings.Contains(err.Error(), `upstream "gone"`)) {
			t.Errorf("Unavailable(%q) = %v, want unavailable %v naming gone", tt.tool, err, tt.unavail)
		}
	}
}

// TestSlowStarterJoinsLater: StartSet returns after StartWait with a
// server still in initialize shown connecting, and the caller's context
// ending does not end that attempt; its connection is announced through
// OnToolsChanged and its tools are then listed. Close ends a first attempt
// still running.
func TestSlowStarterJoinsLater(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	gate := filepath.Join(t.TempDir(), "gate")
	changed := make(chan string, 4)
	doc := `{"mcpServers": {"fast": ` + helperEntry(t, "fast", "f", 0) + `, "slow": ` +
		stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_ID": "slow", "HELPER_TOOLS": "s", "HELPER_INIT_GATE": gate}) + `}}`
	s := startSet(t, doc, nil, SetOptions{StartWait: 10 * time.Millisecond, Client: Options{OnToolsChanged: func(server string) { changed <- server }}})
	if h := health(s, "slow"); h.State != StateConnecting {
		t.Fatalf("slow health = %+v after StartSet, want connecting", h)
	}
	waitFor(t, "fast ready", func() bool { return health(s, "fast").State == StateReady })
	tools, err := s.ListTools(context.Background())
	if err != nil || slices.Contains(toolNames(tools), "slow__s") || !slices.Contains(toolNames(tools), "fast__f") {
		t.Errorf("first listing %q, %v: want fast's tools only", toolNames(tools), err)
	}
	if err := os.WriteFile(gate, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	for server := range changed { // fast is announced too when it connected after StartWait
		if server == "slow" {
			break
		}
	}
	tools, err = s.ListTools(context.Background())
	if err != nil || !slices.Contains(toolNames(tools), "slow__s") {
		t.Errorf("after slow connected: %q, %v; health %+v", toolNames(tools), err, health(s, "slow"))
	}

	pidFile := filepath.Join(t.TempDir(), "pid")
	hung := NewClient(resolve(t, `{"mcpServers": {"h": `+stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_INIT_DELAY": "1h", "HELPER_PID_FILE": pidFile})+`}}`, nil).Servers[0],
		Options{TerminateDuration: 50 * time.Millisecond})
	started := make(chan error, 1)
	go func() { started <- hung.Start(context.Background()) }()
	waitFor(t, "the first attempt under way", func() bool { _, err := os.Stat(pidFile); return err == nil })
	hung.Close() // returns only once the attempt ended: with ConnectTimeout's 30 s it would hang this test
	if err := <-started; !errors.Is(err, ErrUnavailable) {
		t.Errorf("Start = %v, want ErrUnavailable once closed", err)
	}
}
