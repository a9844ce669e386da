package upstream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// pipeConn is a stdioConn over pipes: what the server writes goes to
// toConn, what the connection writes comes out of fromConn.
func pipeConn(t *testing.T) (c *stdioConn, toConn *io.PipeWriter, fromConn *bufio.Reader) {
	t.Helper()
	outR, outW := io.Pipe() // the server's stdout
	inR, inW := io.Pipe()   // the server's stdin
	c = newStdioConn(outR, newLineGuard(outR, 0, nil), inW)
	t.Cleanup(func() { outW.Close(); inR.Close(); c.Close() })
	return c, outW, bufio.NewReader(inR)
}

// TestStdioConnReadsAsTheSDK: every line a server may write becomes the
// messages the SDK's decoder makes of it, plain or not.
func TestStdioConnReadsAsTheSDK(t *testing.T) {
	lines := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
		`{"jsonrpc":"2.0","id":2,"error":{"code":-32602,"message":"unknown tool","data":{"x":1}}}`,
		`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"toolprof/1","progress":1}}`,
		`{"jsonrpc":"2.0","id":"s1","method":"elicitation/create","params":{}}`,
		`{"jsonrpc":"2.0","id":3,"result":{},"Extra":1}`,
	}
	c, toConn, _ := pipeConn(t)
	go func() {
		for _, l := range lines {
			fmt.Fprintln(toConn, l)
		}
	}()
	for _, l := range lines {
		got, err := c.Read(context.Background())
		if err != nil {
			t.Fatalf("Read of %s: %v", l, err)
		}
		want, err := jsonrpc.DecodeMessage([]byte(l))
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("Read of %s = %#v, the SDK's decoder %#v", l, got, want)
		}
	}
}

// TestStdioConnBatches: a batch of the server's requests is read one
// message at a time and answered in one batch, once every call in it is.
func TestStdioConnBatches(t *testing.T) {
	c, toConn, fromConn := pipeConn(t)
	go fmt.Fprintln(toConn, `[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/message","params":{}},{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
	ctx := context.Background()
	var calls []*jsonrpc.Request
	for range 3 {
		msg, err := c.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			calls = append(calls, req)
		}
	}
	if len(calls) != 2 {
		t.Fatalf("calls read = %d, want 2", len(calls))
	}
	written := make(chan string, 1)
	go func() {
		line, _ := fromConn.ReadString('\n')
		written <- line
		io.Copy(io.Discard, fromConn) // a Write of more lines must not block
	}()
	for i := len(calls) - 1; i >= 0; i-- { // answered out of order
		if err := c.Write(ctx, &jsonrpc.Response{ID: calls[i].ID, Result: []byte(`{}`)}); err != nil {
			t.Fatal(err)
		}
	}
	want := `[{"jsonrpc":"2.0","id":1,"result":{}},{"jsonrpc":"2.0","id":2,"result":{}}]` + "\n"
	if got := <-written; got != want {
		t.Errorf("written %q, want %q (one batch, in the batch's order)", got, want)
	}
}

// TestStdioConnReadAllocations: a tools/call answer is read in about its
// own size, not in the SDK decoder's 32 KiB buffers.
func TestStdioConnReadAllocations(t *testing.T) {
	c, toConn, _ := pipeConn(t)
	const n = 200
	line := `{"jsonrpc":"2.0","id":%d,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}` + "\n"
	go func() {
		for i := range n + 1 {
			fmt.Fprintf(toConn, line, i+1)
		}
	}()
	ctx := context.Background()
	if _, err := c.Read(ctx); err != nil { // the read loop's buffers
		t.Fatal(err)
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		if _, err := c.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
		t.Errorf("reading an answer allocates %d bytes; want at most 8 KiB", per)
	}
}

// TestStdioConnHandsTheRelayItsAnswers: the answer to a relayed call
// reaches the call from the read loop, while nothing reads the
// connection; what comes before and after it reaches Read, in order.
func TestStdioConnHandsTheRelayItsAnswers(t *testing.T) {
	c, toConn, fromConn := pipeConn(t)
	rl := &relay{conn: c}
	c.relay.Store(rl)
	ctx := context.Background()
	type answer struct {
		res *mcp.CallToolResult
		err error
	}
	answered := make(chan answer, 1)
	go func() {
		res, err := rl.call(ctx, "tools/call", &mcp.CallToolParams{Name: "t", Arguments: map[string]any{}}, nil)
		answered <- answer{res, err}
	}()
	sent, err := fromConn.ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	var req struct {
		ID json.RawMessage `json:"id"`
	}
	if err := json.Unmarshal([]byte(sent), &req); err != nil {
		t.Fatalf("relayed request %q: %v", sent, err)
	}
	go func() {
		fmt.Fprintln(toConn, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"before"}}`)
		fmt.Fprintf(toConn, `{"jsonrpc":"2.0","id":%s,"result":{"content":[{"type":"text","text":"hi"}]}}`+"\n", req.ID)
		fmt.Fprintln(toConn, `{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"after"}}`)
	}()
	msg, err := c.Read(ctx) // the read loop waits to hand this over
	if err != nil {
		t.Fatal(err)
	}
	if p := string(msg.(*jsonrpc.Request).Params); !strings.Contains(p, "before") {
		t.Fatalf("first Read = %s, want the notification before the answer", p)
	}
	select {
	case a := <-answered:
		if a.err != nil || len(a.res.Content) != 1 || a.res.Content[0].(*mcp.TextContent).Text != "hi" {
			t.Fatalf("relayed call = %+v, %v; want its text hi", a.res, a.err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the relayed call was not answered while Read was not called")
	}
	msg, err = c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if p := string(msg.(*jsonrpc.Request).Params); !strings.Contains(p, "after") {
		t.Fatalf("second Read = %s, want the notification after the answer", p)
	}
}

// TestRelayWritesAsTheSDK: the relay's line for a call is the line Write
// writes of the request encoded by marshalParams, for plain params and
// every other kind (which take marshalParams), in fewer allocations for
// plain ones.
func TestRelayWritesAsTheSDK(t *testing.T) {
	cases := []*mcp.CallToolParams{
		{Name: "echo", Arguments: json.RawMessage(`{"a":1}`)},
		{Name: "echo", Arguments: json.RawMessage(` { "a" : [1, "x y"] , "b":"<&>\u2028" } `)},
		{Name: "echo", Arguments: map[string]any{}},
		{Name: "echo", Arguments: map[string]any{"z": 1, "a": "<"}},
		{Name: "échø", Arguments: json.RawMessage(`{}`)},
		{Name: `a"b`, Arguments: json.RawMessage(`{}`)},
		{Name: "a<b>&", Arguments: json.RawMessage(`{}`)},
		{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{"traceparent": "00-1-2-01"}},
		{Name: "echo", Arguments: json.RawMessage(`{}`), Meta: mcp.Meta{}},
		{Name: "echo", Arguments: json.RawMessage(`{}`), RequestState: "s"},
		{Name: "echo", Arguments: json.RawMessage(`{}`), InputResponses: mcp.InputResponseMap{}},
		{Name: "echo", Arguments: json.RawMessage(`{"a":`)},
		{Name: "echo"},
	}
	id, _ := jsonrpc.MakeID(relayIDPrefix + "7")
	ctx := context.Background()
	line := func(write func(c *stdioConn) error) (string, error) {
		outR, outW := io.Pipe()
		inR, inW := io.Pipe()
		defer outW.Close()
		c := newStdioConn(outR, newLineGuard(outR, 0, nil), inW)
		defer c.Close()
		got := make(chan string, 1)
		go func() {
			l, _ := bufio.NewReader(inR).ReadString('\n')
			got <- l
			io.Copy(io.Discard, inR)
		}()
		if err := write(c); err != nil {
			inW.Close()
			return "", err
		}
		return <-got, nil
	}
	for _, p := range cases {
		want, wantErr := line(func(c *stdioConn) error {
			b, err := marshalParams(p)
			if err != nil {
				return err
			}
			return c.Write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: b})
		})
		got, gotErr := line(func(c *stdioConn) error {
			b, plain := plainCallParams(p)
			if !plain {
				var err error
				if b, err = marshalParams(p); err != nil {
					return err
				}
			}
			return (&relay{conn: c}).write(ctx, &jsonrpc.Request{ID: id, Method: "tools/call", Params: b})
		})
		if got != want || (gotErr == nil) != (wantErr == nil) {
			t.Errorf("%+v: the relay wrote %q (%v), the SDK's encoding %q (%v)", p, got, gotErr, want, wantErr)
		}
	}
	p := cases[0]
	viaEncoder := testing.AllocsPerRun(100, func() { marshalParams(p) })
	viaPlain := testing.AllocsPerRun(100, func() { plainCallParams(p) })
	if viaPlain >= viaEncoder {
		t.Errorf("plain params encode in %.0f allocations, marshalParams's %.0f: want fewer", viaPlain, viaEncoder)
	}
}
