package gateway

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// fakeUpstreamArg, as the first argument, makes the test binary a fake stdio MCP server that
// answers each tool of fakeResults with its bytes, as written there: no
// SDK server encodes them, so a gateway that parsed and encoded a result
// again would send other bytes (keys in the SDK's order, unknown fields
// dropped, 1.50 as 1.5, \u00e9 as é).
const fakeUpstreamArg = "-toolprof.fake-upstream"

var fakeResults = map[string]string{
	"ok":         `{"x-vendor":{"b":2,"a":1},"content":[{"text":"<b>ok</b> & done","type":"text"}]}`,
	"failed":     `{"isError":true,"content":[{"type":"text","text":"failed: \u00e9"}],"_meta":{"k":"v"}}`,
	"structured": `{"structuredContent":{"z":1,"a":[1.50,"x",null]},"content":[{"type":"text","text":"{\"z\":1}"}]}`,
	"announced":  `{"_meta":{"io.modelcontextprotocol/serverInfo":{"name":"fake","version":"1"}},"content":[{"type":"text","text":"x"}]}`,
	"no-content": `{"structuredContent":{"a":1}}`,
	// Whitespace between tokens, a client's encoder takes out; quotes,
	// backslashes and spaces in strings, it leaves.
	"spaced": "{ \"content\" : [ {\"type\":\"text\",\t\"text\":\"a \\\" b \\\\\"} ] ,\"isError\":false }",
}

func TestMain(m *testing.M) {
	if len(os.Args) > 1 && os.Args[1] == fakeUpstreamArg {
		if err := runFakeUpstream(); err != nil {
			fmt.Fprintln(os.Stderr, "fake upstream:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// runFakeUpstream answers initialize, tools/list and tools/call (of
// fakeResults) on stdin and stdout.
func runFakeUpstream() error {
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(nil, 1<<20)
	out := bufio.NewWriter(os.Stdout)
	for in.Scan() {
		var req struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				Name string `json:"name"`
			} `json:"params"`
		}
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			return err
		}
		if req.ID == nil {
			continue // a notification
		}
		var result string
		switch req.Method {
		case "initialize":
			result = `{"protocolVersion":"2025-11-25","capabilities":{"tools":{}},"serverInfo":{"name":"fake","version":"1"}}`
		case "tools/list":
			var tools []string
			for name := range fakeResults {
				tools = append(tools, fmt.Sprintf(`{"name":%q,"inputSchema":{"type":"object"}}`, name))
			}
			result = `{"tools":[`
			for i, t := range tools {
				if i > 0 {
					result += ","
				}
				result += t
			}
			result += `]}`
		case "tools/call":
			result = fakeResults[req.Params.Name]
		default:
			result = `{}`
		}
		fmt.Fprintf(out, `{"jsonrpc":"2.0","id":%s,"result":%s}`+"\n", req.ID, result)
		if err := out.Flush(); err != nil {
			return err
		}
	}
	return in.Err()
}

// resultTap is a client transport that keeps the result of every
// response, by request id, as the gateway sent it.
type resultTap struct {
	mcp.Transport
	mu      sync.Mutex
	results map[jsonrpc.ID]json.RawMessage
	last    json.RawMessage // the result of the last tools/call
	calls   map[jsonrpc.ID]bool
}

func (t *resultTap) Connect(ctx context.Context) (mcp.Connection, error) {
	c, err := t.Transport.Connect(ctx)
	return tapConn{c, t}, err
}

type tapConn struct {
	mcp.Connection
	t *resultTap
}

func (c tapConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if req, ok := msg.(*jsonrpc.Request); ok && req.Method == methodCallTool {
		c.t.mu.Lock()
		c.t.calls[req.ID] = true
		c.t.mu.Unlock()
	}
	return c.Connection.Write(ctx, msg)
}

func (c tapConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if resp, ok := msg.(*jsonrpc.Response); ok {
		c.t.mu.Lock()
		if c.t.calls[resp.ID] {
			c.t.last = resp.Result
		}
		c.t.mu.Unlock()
	}
	return msg, err
}

func (t *resultTap) lastCall() json.RawMessage {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

// TestResultForwardedAsSent: a tools/call result the gateway does not
// change reaches the client byte for byte as the upstream sent it, error
// results and structuredContent included, and telemetry's response size
// is its length. A 2026-07-28 client is sent the gateway's serverInfo in
// the result's _meta when the upstream's result has none (the SDK's
// rule), and the result is otherwise the same.
func TestResultForwardedAsSent(t *testing.T) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	rec, read := recorder(t)
	g := relayGatewayOpts(t, Options{Recorder: rec, ServerName: "toolprof", ServerVersion: "test"}, exe, fakeUpstreamArg)
	cases := []struct {
		tool, protocol string
		identical      bool           // else: the same with add and the gateway's serverInfo
		add            map[string]any // top-level members the gateway adds
	}{
		{tool: "ok", protocol: legacyProtocol, identical: true},
		{tool: "failed", protocol: legacyProtocol, identical: true},
		{tool: "structured", protocol: legacyProtocol, identical: true},
		{tool: "announced", protocol: legacyProtocol, identical: true},
		{tool: "announced", protocol: protocolSessionless, identical: true},
		{tool: "ok", protocol: protocolSessionless},
		{tool: "failed", protocol: protocolSessionless},
		{tool: "no-content", protocol: legacyProtocol, add: map[string]any{"content": []any{}}}, // [] rather than null
	}
	type sized struct {
		tool  string
		bytes int
	}
	var sent []sized // what the client got, by tool
	for _, c := range cases {
		t.Run(c.tool+"@"+c.protocol, func(t *testing.T) {
			s, err := g.Server("")
			if err != nil {
				t.Fatal(err)
			}
			st, ct := mcp.NewInMemoryTransports()
			ctx := context.Background()
			if _, err := s.Connect(ctx, st, nil); err != nil {
				t.Fatal(err)
			}
			tap := &resultTap{Transport: ct, calls: map[jsonrpc.ID]bool{}}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "1"}, nil).Connect(ctx, tap, &mcp.ClientSessionOptions{ProtocolVersion: c.protocol})
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: c.tool}); err != nil {
				t.Fatal(err)
			}
			got, upstream := tap.lastCall(), fakeResults[c.tool]
			sent = append(sent, sized{c.tool, len(got)})
			if c.identical {
				if string(got) != upstream {
					t.Errorf("the client got\n%s\nthe upstream sent\n%s", got, upstream)
				}
				return
			}
			var gotV, wantV map[string]any
			if err := json.Unmarshal(got, &gotV); err != nil {
				t.Fatal(err)
			}
			json.Unmarshal([]byte(upstream), &wantV)
			for k, v := range c.add {
				wantV[k] = v
			}
			if c.protocol >= protocolSessionless {
				meta, _ := wantV["_meta"].(map[string]any)
				if meta == nil {
					meta = map[string]any{}
				}
				meta[mcp.MetaKeyServerInfo] = map[string]any{"name": "toolprof", "version": "test"}
				wantV["_meta"] = meta
			}
			if !reflect.DeepEqual(gotV, wantV) {
				t.Errorf("the client got\n%s\nwant the upstream's\n%s\nwith %v and the gateway's serverInfo on 2026-07-28", got, upstream, c.add)
			}
		})
	}
	g.Close()
	_, calls := read()
	var recorded []sized
	for _, c := range calls {
		recorded = append(recorded, sized{c.Tool, c.ResponseBytes})
	}
	bySize := func(a, b sized) int { return cmp.Or(strings.Compare(a.tool, b.tool), a.bytes-b.bytes) }
	slices.SortFunc(recorded, bySize)
	slices.SortFunc(sent, bySize)
	if !reflect.DeepEqual(recorded, sent) {
		t.Errorf("recorded response sizes %v, want those the client got %v", recorded, sent)
	}
}
