package gateway

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"pgregory.net/rapid"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/upstream"
)

// tb is what rawClient needs of a test (testing.TB or *rapid.T).
type tb interface {
	Helper()
	Fatalf(format string, args ...any)
	Errorf(format string, args ...any)
}

// rawClient speaks newline-delimited JSON-RPC to a gateway served over
// pipes with serveStdio, writing and reading lines as they are.
type rawClient struct {
	t     tb
	w     *io.PipeWriter
	lines chan string
	done  chan error
	fast  bool
}

// serveRaw serves g's profile over pipes, the fast path on or off.
func serveRaw(t tb, g *Gateway, profile string, fast bool) *rawClient {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	c := &rawClient{t: t, w: inW, lines: make(chan string, 256), done: make(chan error, 1), fast: fast}
	go func() {
		err := g.serveStdio(context.Background(), profile, &jsonrpcwire.Transport{Reader: inR, Writer: outW}, fast)
		inR.CloseWithError(fmt.Errorf("served no more: %v", err))
		outW.Close()
		c.done <- err
	}()
	// A call that comes before ServeStdio has bound the session goes to
	// the SDK, and Close ends only bound connections: wait for the binding
	// so that the fast path's cases are its, and a shutdown ends it.
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		g.mu.Lock()
		bound := len(g.stdio) > 0
		g.mu.Unlock()
		if bound {
			break
		}
	}
	go func() {
		defer close(c.lines)
		sc := bufio.NewScanner(outR)
		sc.Buffer(nil, 4<<20)
		for sc.Scan() {
			c.lines <- sc.Text()
		}
	}()
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.w, line+"\n"); err != nil {
		c.t.Fatalf("send %s: %v", line, err)
	}
}

// await reads lines until the answer to the request with id (its raw
// JSON), and returns every line read.
func (c *rawClient) await(id string) []string {
	c.t.Helper()
	var got []string
	for {
		select {
		case line, ok := <-c.lines:
			if !ok {
				c.t.Fatalf("output ended awaiting id %s; read %q", id, got)
			}
			got = append(got, line)
			var m struct {
				ID     json.RawMessage `json:"id"`
				Result json.RawMessage `json:"result"`
				Error  json.RawMessage `json:"error"`
			}
			if json.Unmarshal([]byte(line), &m) == nil && string(m.ID) == id && (m.Result != nil || m.Error != nil) {
				return got
			}
		case <-time.After(20 * time.Second):
			c.t.Fatalf("no answer to id %s; read %q", id, got)
		}
	}
}

// close ends the input and returns what the gateway wrote until it ended.
func (c *rawClient) close() []string {
	c.t.Helper()
	c.w.Close()
	var got []string
	for line := range c.lines {
		got = append(got, line)
	}
	if err := <-c.done; err != nil {
		c.t.Errorf("serve (fast path %v): %v", c.fast, err)
	}
	return got
}

// recordingObserver keeps what the observer is told of each request, less
// what differs between two runs (session IDs).
type recordingObserver struct {
	mu     sync.Mutex
	served []string
}

func (o *recordingObserver) Serve(ctx context.Context, r *Served) (context.Context, func(*Served)) {
	return ctx, func(r *Served) {
		o.mu.Lock()
		defer o.mu.Unlock()
		o.served = append(o.served, fmt.Sprintf("%s id=%s tool=%s profile=%s protocol=%s outcome=%s reached=%s toolError=%v err=%v meta=%v",
			r.Method, r.RequestID, r.Tool, r.Profile, r.ProtocolVersion, r.Outcome, r.ReachedBy, r.ToolError, r.Err, r.Meta))
	}
}

func (o *recordingObserver) SessionEnded(telemetry.Session) {}

func (o *recordingObserver) all() []string {
	o.mu.Lock()
	defer o.mu.Unlock()
	return slices.Clone(o.served)
}

// A step of a fast-path script: a line sent, then the answer awaited
// (await: the request's raw id), or a pause for the call just sent to
// reach the upstream (settle).
type step struct {
	line     string
	await    string
	settle   bool
	shutdown bool // then close the gateway (Gateway.Close)
}

// metaFor is the _meta a client of protocol sends on every request: none
// at 2025-11-25, the go-sdk client's at 2026-07-28.
func metaFor(protocol string) string {
	if protocol < protocolSessionless {
		return ""
	}
	return `"_meta":{"io.modelcontextprotocol/clientCapabilities":{"roots":{"listChanged":true}},"io.modelcontextprotocol/clientInfo":{"name":"fast-test","version":"1"},"io.modelcontextprotocol/protocolVersion":"2026-07-28"}`
}

// handshake is what a client of protocol sends first.
func handshake(protocol string) []step {
	if protocol < protocolSessionless {
		return []step{
			{line: `{"jsonrpc":"2.0","id":"init","method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"fast-test","version":"1"}}}`, await: `"init"`},
			{line: `{"jsonrpc":"2.0","method":"notifications/initialized","params":{}}`},
		}
	}
	return []step{{line: `{"jsonrpc":"2.0","id":"discover","method":"server/discover","params":{` + metaFor(protocol) + `}}`, await: `"discover"`}}
}

// call is a tools/call step with id, tool and arguments (raw JSON, "" for
// none).
func call(protocol string, id int, tool, args string) step {
	members := []string{fmt.Sprintf(`"name":%q`, tool)}
	if args != "" {
		members = append(members, `"arguments":`+args)
	}
	if m := metaFor(protocol); m != "" {
		members = append([]string{m}, members...)
	}
	return step{line: fmt.Sprintf(`{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{%s}}`, id, strings.Join(members, ",")), await: fmt.Sprint(id)}
}

// sent is s without awaiting its answer.
func sent(s step) step { s.await = ""; return s }

// cancelled is the client's notifications/cancelled for the request id.
func cancelled(id int) step {
	return step{line: fmt.Sprintf(`{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":%d,"reason":"test"}}`, id)}
}

// fastRun is what one run of a script produced: the lines written, the
// observer's view, telemetry, and how many calls the fast path took.
type fastRun struct {
	lines    []string
	served   []string
	sessions []telemetry.Session
	calls    []telemetry.Call
	taken    uint64
}

// upstreamFor starts a scenario's upstream; ref will hold the gateway in
// front of it.
type upstreamFor func(t *testing.T, ref *atomic.Pointer[Gateway]) Upstream

// everythingUp is the real everything-server behind upstream.Set.
func everythingUp(tweak func(*upstream.Options)) upstreamFor {
	return func(t *testing.T, ref *atomic.Pointer[Gateway]) Upstream {
		return relaySet(t, ref, tweak, testupstream.EverythingServer(t))
	}
}

// runScript serves a new gateway (opts, in front of up) over pipes, the
// fast path on or off, plays the steps, ends the input and reads what is
// left.
func runScript(t *testing.T, opts Options, up upstreamFor, profile string, steps []step, fast bool) fastRun {
	t.Helper()
	return runScriptWith(t, &opts, up, profile, steps, fast)
}

// runScriptWith is runScript with options up may fill in.
func runScriptWith(t *testing.T, o *Options, up upstreamFor, profile string, steps []step, fast bool) fastRun {
	t.Helper()
	var ref atomic.Pointer[Gateway]
	u := up(t, &ref)
	opts := *o
	opts.Upstream = u
	rec, read := recorder(t)
	obs := &recordingObserver{}
	opts.Recorder, opts.Observer = rec, obs
	opts.ServerVersion = "test"
	g, err := New(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	ref.Store(g)
	c := serveRaw(t, g, profile, fast)
	var run fastRun
	for _, s := range steps {
		c.send(s.line)
		if s.await != "" {
			run.lines = append(run.lines, c.await(s.await)...)
		}
		switch {
		case s.settle && s.shutdown:
			// Closed as soon as the call is admitted: the closer to its
			// start, the surer it is still in flight (the upstream's tool
			// runs 150 ms) on a loaded machine, where a fixed wait left it
			// answered before Close began.
			deadline := time.Now().Add(5 * time.Second)
			for g.admission.calls.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(time.Millisecond)
			}
			time.Sleep(5 * time.Millisecond) // for the admitted call to reach the upstream; not a measure
		case s.settle:
			time.Sleep(50 * time.Millisecond) // for the call to reach the upstream; not a measure
		}
		if s.shutdown {
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
		}
	}
	run.lines = append(run.lines, c.close()...)
	run.taken = g.fastCalls.Load()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	run.served = obs.all()
	run.sessions, run.calls = read()
	for i := range run.sessions {
		s := &run.sessions[i]
		s.ID, s.Start, s.End = "", time.Time{}, time.Time{}
	}
	for i := range run.calls {
		c := &run.calls[i]
		c.Session, c.Start, c.Duration = "", time.Time{}, 0
	}
	return run
}

// fastGenerated adds to the test profiles one served with search and one
// with groups, over the everything-server's tools.
const fastGenerated = `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["test_error_handling", "test_image_content", "test_simple_text"]

[[profile]]
name = "standard"
tools = ["json_schema_2020_12_tool", "test_error_handling", "test_image_content", "test_simple_text", "test_tool_with_progress"]

[[profile]]
name = "searchy"
tools = ["test_simple_text"]
search = true

[[profile]]
name = "grouped"
tools = ["test_simple_text"]
groups = ["media"]

[[group]]
name = "media"
description = "audio and image content tools"
tools = ["test_audio_content", "test_image_content"]
`

// fastScenario is one gateway setting and the requests a client sends it.
type fastScenario struct {
	name    string
	opts    func(t *testing.T) Options // the gates; Upstream and Profiles are filled in
	up      upstreamFor                // nil: the everything-server
	profile string
	policy  string // profiles.toml beside fastGenerated
	steps   func(protocol string) []step
}

var fastScenarios = []fastScenario{
	{
		name: "profile",
		steps: func(p string) []step {
			return []step{
				call(p, 1, "test_simple_text", `{}`),
				call(p, 2, "test_simple_text", ""),
				call(p, 3, "test_tool_with_progress", `{}`), // tool_not_in_profile
				call(p, 4, "no_such_tool", `{}`),            // unknown tool
				call(p, 5, "test_error_handling", `{}`),     // the upstream's isError result
				call(p, 6, "test_image_content", ` { "a" : [1, "x"] } `),
				call(p, 7, "test_simple_text", `[1]`), // invalid_arguments
				call(p, 8, "test_simple_text", `"s"`),
				call(p, 9, "", `{}`),
				call(p, 10, "test_simple_text", `null`),
				call(p, 11, "test_simple_text\u00e9", `{}`),
				// Malformed or unusual params: the SDK answers them.
				{line: `{"jsonrpc":"2.0","id":20,"method":"tools/call","params":{"name":5}}`, await: "20"},
				{line: `{"jsonrpc":"2.0","id":21,"method":"tools/call"}`, await: "21"},
				{line: `{"jsonrpc":"2.0","id":22,"method":"tools/call","params":{"name":"test_simple_text","extra":1}}`, await: "22"},
				{line: `{"jsonrpc":"2.0","id":23,"method":"tools/call","params":{"name":"test_simple_text","Name":"test_error_handling"}}`, await: "23"},
				{line: `{"jsonrpc":"2.0","id":24,"method":"tools/call","params":{"name":"test_simple_text","name":"test_error_handling"}}`, await: "24"},
				{line: `{"jsonrpc":"2.0","id":25,"method":"tools/call","params":{"name":"test_simple_\u0074ext"}}`, await: "25"},
				{line: `{"jsonrpc":"2.0","id":26,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"test_simple_text"}}`, await: "26"},
				{line: `{"jsonrpc":"2.0","id":27,"method":"tools/call","params":[]}`, await: "27"},
				{line: `{"jsonrpc":"2.0","id":"s-28","method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`, await: `"s-28"`},
				{line: `{"jsonrpc":"2.0","id":29.5,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`, await: "29.5"},
				{line: `{"jsonrpc":"2.0","id":30,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"name":"test_simple_text"}}`, await: "30"},
				{line: `{"jsonrpc":"2.0","id":31,"method":"tools/call","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"2099-01-01","io.modelcontextprotocol/clientCapabilities":{}},"name":"test_simple_text"}}`, await: "31"},
				call(p, 32, "test_simple_text", `{}`),
			}
		},
	},
	{
		name: "read-only",
		opts: func(*testing.T) Options { return Options{ReadOnly: true} },
		steps: func(p string) []step {
			return []step{call(p, 1, "test_simple_text", `{}`), call(p, 2, "test_error_handling", `{}`)}
		},
	},
	{
		name:   "destructive",
		policy: "destructive = [\"test_image_content\"]\n",
		steps: func(p string) []step {
			return []step{call(p, 1, "test_image_content", `{}`), call(p, 2, "test_simple_text", `{}`)}
		},
	},
	{
		name:    "ceiling and exploration",
		opts:    func(*testing.T) Options { return Options{MaxProfile: "standard", Explore: 1} },
		profile: "core",
		steps: func(p string) []step {
			return []step{
				call(p, 1, "test_tool_with_progress", `{}`), // in the explored ceiling
				call(p, 2, "test_audio_content", `{}`),      // outside it
				call(p, 3, "test_logging_tool", `{}`),
			}
		},
	},
	{
		name:    "groups",
		opts:    func(*testing.T) Options { return Options{MaxProfile: "standard"} },
		profile: "grouped",
		steps: func(p string) []step {
			return []step{
				call(p, 1, "test_image_content", `{}`),
				call(p, 2, "enable_tools", `{"group":"media"}`), // beyond the ceiling
				call(p, 3, "test_simple_text", `{}`),
			}
		},
	},
	{
		name:    "search",
		profile: "searchy",
		steps: func(p string) []step {
			return []step{
				call(p, 1, "find_tools", `{"query":"image content"}`),
				call(p, 2, "call_tool", `{"name":"test_image_content","arguments":{}}`),
				call(p, 3, "call_tool", `{"name":"no_such_tool","arguments":{}}`),
				call(p, 4, "call_tool", `{"name":"test_image_content","arguments":[1]}`),
				call(p, 5, "call_tool", `{}`),
				call(p, 6, "test_image_content", `{}`),
			}
		},
	},
	{
		name: "operating context",
		opts: func(t *testing.T) Options {
			oc, _ := contextSidecar(t, "version = 1\ncontext_revision = \"fast-1\"\n[registry]\nargument = \"name\"\nproject_ids = [\"acme-app\"]\nenforce = \"reject\"\n")
			return Options{OperatingContext: oc}
		},
		profile: "standard",
		steps: func(p string) []step {
			return []step{
				call(p, 1, "json_schema_2020_12_tool", `{"name":"other-app","contactMethod":"email","email":"a@example.com"}`),
				call(p, 2, "json_schema_2020_12_tool", `{"name":"acme-app","contactMethod":"email","email":"a@example.com"}`),
				call(p, 3, "get_operating_context", `{}`),
				call(p, 4, "get_operating_context", `{"section":"nope"}`),
				call(p, 5, "json_schema_2020_12_tool", `{"name":7}`), // the upstream's answer to bad input
			}
		},
	},
	{
		name:    "logging",
		profile: "full",
		steps: func(p string) []step {
			return []step{
				call(p, 1, "test_simple_text", `{}`),
				// Without _meta: a level the session keeps, which a
				// 2026-07-28 call naming none does not use.
				{line: `{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"debug"}}`, await: "2"},
				call(p, 3, "test_tool_with_logging", `{}`),
				{line: `{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"_meta":{"progressToken":"tok"},"name":"test_tool_with_progress","arguments":{}}}`, await: "4"},
			}
		},
	},
	{
		name: "timeout",
		// test_tool_with_progress sleeps 150 ms in all, so it always
		// outlasts the timeout; the timeout leaves test_simple_text room
		// on a loaded machine.
		opts:    func(*testing.T) Options { return Options{CallTimeout: 100 * time.Millisecond} },
		profile: "standard",
		steps: func(p string) []step {
			return []step{call(p, 1, "test_tool_with_progress", `{}`), call(p, 2, "test_simple_text", `{}`)}
		},
	},
	{
		name:    "cancellation",
		profile: "standard",
		steps: func(p string) []step {
			slow := call(p, 1, "test_tool_with_progress", `{}`)
			dup := call(p, 2, "test_tool_with_progress", `{}`)
			return []step{
				{line: slow.line, settle: true},
				{line: cancelled(1).line, await: "1"},
				{line: `{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":99}}`},
				call(p, 3, "test_simple_text", `{}`),
				{line: dup.line, settle: true},
				{line: call(p, 2, "test_simple_text", `{}`).line}, // its id in flight: dropped
				{line: `{"jsonrpc":"2.0","id":4,"method":"ping"}`, await: "2"},
				{line: call(p, 5, "test_tool_with_progress", `{}`).line, settle: true}, // in flight as the input ends
			}
		},
	},
	{
		name:    "shutdown",
		profile: "standard",
		steps: func(p string) []step {
			return []step{
				call(p, 1, "test_simple_text", `{}`),
				{line: call(p, 2, "test_tool_with_progress", `{}`).line, settle: true, shutdown: true},
			}
		},
	},
	{
		name:    "busy",
		opts:    func(*testing.T) Options { return Options{MaxSessionCalls: 1} },
		profile: "standard",
		steps: func(p string) []step {
			return []step{
				call(p, 9, "test_simple_text", `{}`),
				{line: call(p, 1, "test_tool_with_progress", `{}`).line, settle: true},
				call(p, 2, "test_simple_text", `{}`), // busy
				{line: `{"jsonrpc":"2.0","id":3,"method":"ping"}`, await: "1"},
			}
		},
	},
	{
		name: "oversized result",
		up: func(*testing.T, *atomic.Pointer[Gateway]) Upstream {
			return &tooLargeFakeUpstream{tools: everythingCatalog().Tools}
		},
		steps: func(p string) []step {
			return []step{call(p, 1, "test_image_content", `{}`), call(p, 2, "test_image_content", `{}`)}
		},
	},
	{
		// Results as an upstream wrote them: compact, which is sent as it
		// is, and spaced, which is compacted as the SDK's encoder does.
		name: "upstream bytes",
		up: func(t *testing.T, ref *atomic.Pointer[Gateway]) Upstream {
			exe, err := os.Executable()
			if err != nil {
				t.Fatal(err)
			}
			return relaySet(t, ref, nil, exe, fakeUpstreamArg)
		},
		profile: "full",
		steps: func(p string) []step {
			return []step{call(p, 1, "ok", `{}`), call(p, 2, "spaced", `{}`), call(p, 3, "failed", `{}`), call(p, 4, "spaced", `{}`)}
		},
	},
	{
		name: "upstream unavailable",
		up: func(*testing.T, *atomic.Pointer[Gateway]) Upstream {
			return NewCatalogUpstream(everythingCatalog())
		},
		steps: func(p string) []step {
			return []step{call(p, 1, "test_simple_text", `{}`), call(p, 2, "test_simple_text", `{}`)}
		},
	},
}

// Close ends every stdio connection, of either protocol and with the fast
// path on or off: a 2026-07-28 connection's requests are sessionless, and
// its connection was left serving (and its calls answered) after Close.
func TestCloseEndsEveryStdioConnection(t *testing.T) {
	for _, protocol := range []string{legacyProtocol, protocolSessionless} {
		for _, fast := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/fast=%v", protocol, fast), func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				g, err := New(context.Background(), Options{Upstream: NewCatalogUpstream(everythingCatalog())})
				if err != nil {
					t.Fatal(err)
				}
				c := serveRaw(t, g, "", fast)
				for _, s := range append(handshake(protocol), call(protocol, 1, "test_simple_text", `{}`)) {
					c.send(s.line)
					if s.await != "" {
						c.await(s.await)
					}
				}
				if err := g.Close(); err != nil {
					t.Fatal(err)
				}
				select {
				case err := <-c.done:
					if err != nil {
						t.Errorf("serve: %v", err)
					}
				case <-time.After(10 * time.Second):
					t.Fatal("the connection is still served after Close")
				}
				c.w.Close()
				for range c.lines {
				}
			})
		}
	}
}

// The fast path answers exactly as the SDK's dispatch: for every gate's
// refusal, an unknown tool, the upstream's errors and isError results, a
// timeout, a cancellation, a closed connection, an oversized result and
// malformed params, the same requests over a real pipe with the fast path
// on and off get the same lines back, byte for byte, and leave the same
// telemetry and observer records; and the fast path took calls.
func TestFastPathAnswersAsTheSDK(t *testing.T) {
	for _, sc := range fastScenarios {
		for _, protocol := range []string{legacyProtocol, protocolSessionless} {
			t.Run(sc.name+"/"+protocol, func(t *testing.T) {
				defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
				steps := append(handshake(protocol), sc.steps(protocol)...)
				runs := scenarioRuns(t, sc, func(opts *Options, up upstreamFor, fast bool) fastRun {
					return runScriptWith(t, opts, up, sc.profile, steps, fast)
				})
				compareRuns(t, runs[0], runs[1])
			})
		}
	}
}

// scenarioRuns runs sc with the fast path off, then on (run's fast), each
// time in front of a new upstream with sc's profiles over its tools.
func scenarioRuns(t *testing.T, sc fastScenario, run func(opts *Options, up upstreamFor, fast bool) fastRun) [2]fastRun {
	t.Helper()
	var runs [2]fastRun
	var base Options
	if sc.opts != nil {
		base = sc.opts(t) // once: both runs read one operating-context file
	}
	for i, fast := range []bool{false, true} {
		opts := base
		up := sc.up
		if up == nil {
			up = everythingUp(nil)
		}
		withProfiles := func(t *testing.T, ref *atomic.Pointer[Gateway]) Upstream {
			u := up(t, ref)
			tools, err := u.ListTools(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			opts.Tools = tools
			opts.Profiles = writeProfiles(t, tools, fastGenerated, "version = 1\n"+sc.policy)
			return u
		}
		runs[i] = run(&opts, withProfiles, fast)
	}
	return runs
}

// compareRuns fails t unless the SDK's run and the fast path's answered
// and recorded alike, the fast path took calls and the SDK's run none.
func compareRuns(t *testing.T, sdk, fast fastRun) {
	t.Helper()
	if sdk.taken != 0 {
		t.Errorf("fast path off took %d calls", sdk.taken)
	}
	if fast.taken == 0 {
		t.Errorf("fast path on took no call")
	}
	if !slices.Equal(sdk.lines, fast.lines) {
		t.Errorf("answers differ:\nSDK:  %s\nfast: %s", strings.Join(sdk.lines, "\n      "), strings.Join(fast.lines, "\n      "))
	}
	// Sorted: the observer hears of each request as it is answered, and a
	// notification's answer may overtake a call's, or not, on either path.
	slices.Sort(sdk.served)
	slices.Sort(fast.served)
	if !slices.Equal(sdk.served, fast.served) {
		t.Errorf("observed requests differ:\nSDK:  %s\nfast: %s", strings.Join(sdk.served, "\n      "), strings.Join(fast.served, "\n      "))
	}
	if fmt.Sprintf("%+v", sdk.sessions) != fmt.Sprintf("%+v", fast.sessions) {
		t.Errorf("sessions differ:\nSDK:  %+v\nfast: %+v", sdk.sessions, fast.sessions)
	}
	if fmt.Sprintf("%+v", sdk.calls) != fmt.Sprintf("%+v", fast.calls) {
		t.Errorf("calls differ:\nSDK:  %+v\nfast: %+v", sdk.calls, fast.calls)
	}
	if testing.Verbose() {
		t.Logf("%d answers, %d calls recorded, %d taken by the fast path:\n%s", len(fast.lines), len(fast.calls), fast.taken, strings.Join(fast.lines, "\n"))
	}
}

// Over random catalogs, profiles, settings and call sequences (of both
// protocols), the fast path forwards to the upstream exactly the calls the
// SDK path forwards, which are those the profile allows, and answers every
// call with the same bytes.
func TestPropertyFastPathReachesNoMoreThanTheSDK(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	var taken uint64
	defer func() {
		if taken == 0 {
			t.Error("the fast path took no call in any case")
		}
	}()
	rapid.Check(t, func(t *rapid.T) {
		c := drawCase(t)
		set := &profiles.Set{File: c.file, Path: "random.toml"}
		resolved, err := set.Resolve(c.tools)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		profile := rapid.SampledFrom(append(resolved.Names(), "")).Draw(t, "session profile")
		served := profile
		if served == "" {
			served = resolved.Default
		}
		protocol := rapid.SampledFrom([]string{legacyProtocol, protocolSessionless}).Draw(t, "protocol")
		steps := handshake(protocol)
		for i, name := range rapid.SliceOfN(rapid.SampledFrom(c.names), 0, 20).Draw(t, "calls") {
			args := rapid.SampledFrom([]string{"", `{}`, `{"a":1}`, `null`, `[1]`, `"s"`}).Draw(t, fmt.Sprintf("args %d", i))
			steps = append(steps, call(protocol, i+1, name, args))
		}
		var lines [2][]string
		var forwarded [2][]string
		for i, fast := range []bool{false, true} {
			up := &recordingFakeUpstream{tools: c.tools}
			g, err := New(context.Background(), Options{Upstream: up, Profiles: resolved, ReadOnly: c.readOnly})
			if err != nil {
				t.Fatalf("new gateway: %v", err)
			}
			rc := serveRaw(t, g, profile, fast)
			for _, s := range steps {
				rc.send(s.line)
				if s.await != "" {
					lines[i] = append(lines[i], rc.await(s.await)...)
				}
			}
			lines[i] = append(lines[i], rc.close()...)
			if fast {
				taken += g.fastCalls.Load()
			}
			g.Close()
			forwarded[i] = up.forwarded()
		}
		if !slices.Equal(forwarded[0], forwarded[1]) {
			t.Fatalf("profile %q (read-only %v, %s): the SDK path forwarded %q, the fast path %q", served, c.readOnly, protocol, forwarded[0], forwarded[1])
		}
		for _, name := range forwarded[1] {
			if !c.allowedByRule(served, name) {
				t.Fatalf("profile %q (read-only %v): %q reached the upstream", served, c.readOnly, name)
			}
		}
		if !slices.Equal(lines[0], lines[1]) {
			t.Fatalf("answers differ:\nSDK:  %s\nfast: %s", strings.Join(lines[0], "\n      "), strings.Join(lines[1], "\n      "))
		}
	})
}

// drawJSON draws a JSON value of at most depth levels, as Go values.
func drawJSON(t *rapid.T, depth int, label string) any {
	kinds := []string{"string", "number", "bool", "null"}
	if depth > 0 {
		kinds = append(kinds, "object", "array")
	}
	switch rapid.SampledFrom(kinds).Draw(t, label+" kind") {
	case "string":
		return rapid.SampledFrom([]string{"", "a", "é", "<&>", "\u2028", `q"uote`, `back\slash`, "2026-07-28"}).Draw(t, label)
	case "number":
		return rapid.SampledFrom([]float64{0, -1, 1.5, 1e21, 12345678901234567}).Draw(t, label)
	case "bool":
		return rapid.Bool().Draw(t, label)
	case "object":
		m := map[string]any{}
		for i := range rapid.IntRange(0, 3).Draw(t, label+" members") {
			m[rapid.SampledFrom([]string{"roots", "listChanged", "name", "Name", "version", "x"}).Draw(t, fmt.Sprintf("%s key %d", label, i))] = drawJSON(t, depth-1, fmt.Sprintf("%s.%d", label, i))
		}
		return m
	case "array":
		var s []any
		for i := range rapid.IntRange(0, 3).Draw(t, label+" elems") {
			s = append(s, drawJSON(t, depth-1, fmt.Sprintf("%s[%d]", label, i)))
		}
		return s
	}
	return nil
}

// TestPropertyLearnedMetaDecodesAsTheSDK: params whose _meta the fast path
// decoded before decode, without decoding it again, to what the SDK's
// decoder makes of them, and each call's _meta is a map of its own.
func TestPropertyLearnedMetaDecodesAsTheSDK(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		meta := map[string]any{}
		for i := range rapid.IntRange(0, 4).Draw(t, "meta members") {
			k := rapid.SampledFrom([]string{"io.modelcontextprotocol/clientInfo", "io.modelcontextprotocol/clientCapabilities", "io.modelcontextprotocol/protocolVersion", "progressToken"}).Draw(t, fmt.Sprintf("meta key %d", i))
			meta[k] = drawJSON(t, 3, k)
		}
		metaJSON, err := json.Marshal(meta)
		if err != nil {
			t.Fatal(err)
		}
		name := rapid.SampledFrom([]string{`"echo"`, `"e\u0063ho"`, `"caf\u00e9"`, `""`, `"a\"b"`}).Draw(t, "name")
		members := []string{`"name":` + name, `"_meta":` + string(metaJSON)}
		if args := rapid.SampledFrom([]string{"", `{}`, `{"a":1}`, `{ "b" : [1, {"c":null}] }`}).Draw(t, "arguments"); args != "" {
			members = append(members, `"arguments":`+args)
		}
		order := rapid.Permutation(members).Draw(t, "order")
		sep := rapid.SampledFrom([]string{",", " , ", ",\n"}).Draw(t, "separator")
		data := []byte("{" + strings.Join(order, sep) + "}")

		want, ok := decodeCallParams(data)
		if !ok {
			t.Fatalf("the SDK's decoder refused %s", data)
		}
		learned, _ := decodeCallParams(data)
		got, ok := decodeCallParamsMeta(data, learned.Meta)
		if !ok {
			t.Fatalf("decodeCallParamsMeta refused %s", data)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("params %s:\nlearned: %#v\nSDK:     %#v", data, got, want)
		}
		// A call setting and deleting its _meta's members changes no
		// other's.
		for k := range got.Meta {
			delete(got.Meta, k)
		}
		got.Meta["changed"] = true
		again, _ := decodeCallParamsMeta(data, learned.Meta)
		if !reflect.DeepEqual(again, want) {
			t.Fatalf("params %s after a call changed its _meta:\nlearned: %#v\nSDK:     %#v", data, again, want)
		}
	})
}

// compactJSON says of any JSON value, compact or spaced, what json.Compact
// says: that compacting leaves its bytes as they are.
func TestPropertyCompactJSONAsCompact(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		// With a string holding spaces, quotes and backslashes, which
		// drawJSON's have not all.
		v := []any{drawJSON(t, 3, "value"), rapid.SampledFrom([]string{"a b", ` "q" `, `\ " \`, `\`}).Draw(t, "string")}
		data, err := json.Marshal(v)
		if err != nil {
			t.Fatal(err)
		}
		if rapid.Bool().Draw(t, "spaced") {
			var b bytes.Buffer
			if err := json.Indent(&b, data, rapid.SampledFrom([]string{"", " "}).Draw(t, "prefix"), rapid.SampledFrom([]string{"", " ", "\t"}).Draw(t, "indent")); err != nil {
				t.Fatal(err)
			}
			data = b.Bytes()
		}
		var c bytes.Buffer
		if err := json.Compact(&c, data); err != nil {
			t.Fatal(err)
		}
		if got, want := compactJSON(data), bytes.Equal(c.Bytes(), data); got != want {
			t.Fatalf("compactJSON(%s) = %v, json.Compact leaves it as it is: %v", data, got, want)
		}
	})
}
