package jsonrpcwire

import (
	"context"
	"fmt"
	"io"
	"runtime"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// pipeConn is a Conn reading what the test writes to in, its answers
// discarded.
func pipeConn(t *testing.T) (*Conn, *io.PipeWriter) {
	t.Helper()
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	go io.Copy(io.Discard, outR)
	mc, err := (&Transport{Reader: inR, Writer: outW}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	c := mc.(*Conn)
	t.Cleanup(func() { inW.Close(); c.Close(); outW.Close() })
	return c, inW
}

// TestTakerRunsWhileReadingGoesOn: a request the Taker takes is run while
// the input is read on (a run waiting for the next line to be read
// returns), and never reaches Read; the last line, which comes with the
// end of input, is not offered and reaches Read.
func TestTakerRunsWhileReadingGoesOn(t *testing.T) {
	c, in := pipeConn(t)
	offered := make(chan string, 16)
	next := make(chan struct{})
	ran := make(chan string, 16)
	c.SetTaker(func(req *jsonrpc.Request) (func(), bool) {
		offered <- req.Method
		switch req.Method {
		case "take/wait": // runs until the next line has been read
			return func() {
				select {
				case <-next:
					ran <- req.Method
				case <-time.After(10 * time.Second):
					ran <- "timed out: the input was not read on"
				}
			}, true
		case "take/drop":
			return nil, true
		}
		return nil, false
	})
	go func() {
		for _, l := range []string{
			`{"jsonrpc":"2.0","id":1,"method":"take/wait"}`,
			`{"jsonrpc":"2.0","id":2,"method":"take/drop"}`,
			`{"jsonrpc":"2.0","id":3,"method":"sdk/one"}`,
		} {
			fmt.Fprintln(in, l)
		}
		fmt.Fprint(in, `{"jsonrpc":"2.0","id":5,"method":"take/wait"}`)
		in.Close()
	}()
	ctx := context.Background()
	msg, err := c.Read(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if m := msg.(*jsonrpc.Request).Method; m != "sdk/one" {
		t.Fatalf("Read = %s, want sdk/one (take/wait and take/drop are the Taker's)", m)
	}
	close(next)
	if got := <-ran; got != "take/wait" {
		t.Fatal(got)
	}
	msg, err = c.Read(ctx)
	if err != nil {
		t.Fatalf("Read: %v, want the last line's take/wait", err)
	}
	if m := msg.(*jsonrpc.Request).Method; m != "take/wait" {
		t.Fatalf("Read = %s, want the last line's take/wait", m)
	}
	if _, err := c.Read(ctx); err != io.EOF {
		t.Fatalf("Read at the end = %v, want EOF", err)
	}
	close(offered)
	var got []string
	for m := range offered {
		got = append(got, m)
	}
	if fmt.Sprint(got) != "[take/wait take/drop sdk/one]" {
		t.Errorf("offered %v, want take/wait take/drop sdk/one (not the last line)", got)
	}
}

// TestTakerSparesEnd: of the goroutines that ran taken requests at once,
// at most maxSpares wait to read, and they return once the input ends.
func TestTakerSparesEnd(t *testing.T) {
	before := runtime.NumGoroutine()
	c, in := pipeConn(t)
	const n = 3 * maxSpares
	taken, release, done := make(chan struct{}, n), make(chan struct{}), make(chan struct{}, n)
	c.SetTaker(func(req *jsonrpc.Request) (func(), bool) {
		taken <- struct{}{}
		return func() { <-release; done <- struct{}{} }, true
	})
	for i := range n {
		fmt.Fprintf(in, `{"jsonrpc":"2.0","id":%d,"method":"take"}`+"\n", i)
	}
	for range n {
		<-taken
	}
	close(release)
	for range n {
		<-done
	}
	settle := func(want int, what string) {
		t.Helper()
		for deadline := time.Now().Add(10 * time.Second); runtime.NumGoroutine() > want; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("goroutines = %d %s, want at most %d", runtime.NumGoroutine(), what, want)
			}
		}
	}
	// The pipes' copier and the reader, and the spares.
	settle(before+2+maxSpares, fmt.Sprintf("once %d requests ran at once", n))
	in.Close()
	if _, err := c.Read(context.Background()); err != io.EOF {
		t.Fatalf("Read = %v, want EOF", err)
	}
	settle(before+1, "after the input ended")
}

// lineWriter keeps the last line written.
type lineWriter struct{ last []byte }

func (w *lineWriter) Write(b []byte) (int, error) {
	w.last = append(w.last[:0], b...)
	return len(b), nil
}

// TestWriteResultWritesAsWrite: WriteResult writes the line Write writes
// of the same response, whatever the client's id, in fewer allocations.
func TestWriteResultWritesAsWrite(t *testing.T) {
	results := []string{`{}`, `{"content":[{"type":"text","text":"a b <&> \u2028"}],"isError":false}`, `{"_meta":{"x":[1,2.5,null]}}`}
	ids := []string{`1`, `-7`, `1.5`, `1e30`, `9007199254740993`, `"a"`, `"\u0061"`, `"é"`, `""`}
	for _, rawID := range ids {
		for _, result := range results {
			var w lineWriter
			c := &Conn{w: &w, closed: make(chan struct{})}
			ctx := context.Background()
			if err := c.Write(ctx, &jsonrpc.Response{ID: c.ids.Map([]byte(rawID)), Result: []byte(result)}); err != nil {
				t.Fatal(err)
			}
			want := string(w.last)
			if err := c.WriteResult(ctx, c.ids.Map([]byte(rawID)), []byte(result)); err != nil {
				t.Fatal(err)
			}
			if got := string(w.last); got != want {
				t.Errorf("id %s, result %s: WriteResult wrote %q, Write %q", rawID, result, got, want)
			}
			if c.ids.Len() != 0 {
				t.Errorf("id %s: %d ids in flight after the answers", rawID, c.ids.Len())
			}
		}
	}
	var w lineWriter
	c := &Conn{w: &w, closed: make(chan struct{})}
	ctx := context.Background()
	result := []byte(results[1])
	allocs := func(write func(jsonrpc.ID) error) float64 {
		return testing.AllocsPerRun(100, func() {
			if err := write(c.ids.Map([]byte(`42`))); err != nil {
				t.Fatal(err)
			}
		})
	}
	viaWrite := allocs(func(id jsonrpc.ID) error { return c.Write(ctx, &jsonrpc.Response{ID: id, Result: result}) })
	viaResult := allocs(func(id jsonrpc.ID) error { return c.WriteResult(ctx, id, result) })
	t.Logf("allocs: WriteResult %.0f, Write %.0f", viaResult, viaWrite)
	if viaResult >= viaWrite {
		t.Errorf("WriteResult allocates %.0f times an answer, Write %.0f: want fewer", viaResult, viaWrite)
	}
}
