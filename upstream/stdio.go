package upstream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxMessageBytes bounds one message (one line) a stdio server
// writes unless Options.MaxMessageBytes says otherwise: the go-sdk's own
// frame limit, mcp.DefaultMaxLineLength (16 MiB).
const DefaultMaxMessageBytes = mcp.DefaultMaxLineLength

// ErrTooLarge is wrapped by the error of a request whose answer was over
// the message limit: the answer was dropped and the connection kept.
var ErrTooLarge = errors.New("upstream answer too large")

// TooLargeError is the error of a request whose answer was dropped for
// its size.
type TooLargeError struct {
	Server string
	Op     string // e.g. `tools/call "search"`
	Bytes  int64  // the answer's size, newline excluded
	Limit  int64
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("upstream %q: %s: the answer of %d bytes is over the %d-byte limit on one message and was dropped", e.Server, e.Op, e.Bytes, e.Limit)
}

func (e *TooLargeError) Unwrap() error { return ErrTooLarge }

// codeTooLarge is the JSON-RPC error code of the response lineGuard puts
// in place of a dropped one; Client.mapErr turns it into a TooLargeError.
const codeTooLarge = -32090

// tooLargeData is the data of that response.
type tooLargeData struct {
	Toolprof string `json:"toolprof"` // "message_too_large"
	Bytes    int64  `json:"bytes"`
	Limit    int64  `json:"limit"`
}

// asTooLarge recognises the response lineGuard made.
func asTooLarge(rpc *jsonrpc.Error) (tooLargeData, bool) {
	var d tooLargeData
	if rpc.Code != codeTooLarge || json.Unmarshal(rpc.Data, &d) != nil || d.Toolprof != "message_too_large" {
		return d, false
	}
	return d, true
}

// stdioTransport runs a stdio server as mcp.CommandTransport does, with
// three differences: every line the server writes passes a lineGuard
// first, so one oversized answer fails its own request instead of the
// SDK's decoder ending the session (and every other call with it); a line
// that is not a JSON-RPC message (a greeting or a debug line printed to
// stdout, which MCP forbids and many servers do) is handed to stray and
// skipped, where the SDK would end the session on it; and a server
// that had to be signalled because it did not exit after its stdin closed
// has ended normally, since toolprof stopped it.
type stdioTransport struct {
	cmd       *exec.Cmd
	terminate time.Duration
	limit     int
	// dropped is told of each line dropped without an answer to put in
	// its place (a notification or a server's request, or no id found).
	dropped func(bytes int64)
	// stray receives each line skipped for not being JSON (without its
	// line ending); nil skips them silently.
	stray func(line []byte)
}

func (t *stdioTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.cmd.Start(); err != nil {
		return nil, err
	}
	g := newLineGuard(stdout, t.limit, t.dropped)
	g.stray = t.stray
	// The guard bounds every line, so no cap of the connection's own,
	// which would end the session, is needed.
	return newStdioConn(io.NopCloser(g), g, &stdioProcess{cmd: t.cmd, stdin: stdin, terminate: t.terminate}), nil
}

// stdioProcess is the server's stdin; closing it ends the process as the
// MCP specification says: close stdin, wait, SIGTERM, wait, SIGKILL.
type stdioProcess struct {
	cmd       *exec.Cmd
	stdin     io.WriteCloser
	terminate time.Duration
}

func (p *stdioProcess) Write(b []byte) (int, error) { return p.stdin.Write(b) }

// Close returns the process's exit error only when it exited by itself;
// once toolprof signalled it, its end is the one asked for.
func (p *stdioProcess) Close() error {
	if err := p.stdin.Close(); err != nil {
		return fmt.Errorf("close stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- p.cmd.Wait() }()
	wait := func() (error, bool) {
		t := time.NewTimer(p.terminate)
		defer t.Stop()
		select {
		case err := <-exited:
			return err, true
		case <-t.C:
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if p.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return stopped(err)
		}
	}
	if err := p.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return err
	}
	if err, ok := wait(); ok {
		return stopped(err)
	}
	return fmt.Errorf("process %d did not exit after SIGKILL", p.cmd.Process.Pid)
}

// stopped is the result of waiting for a process toolprof signalled: its
// exit status (the signal, or a status of its own choosing on the signal)
// is no error.
func stopped(err error) error {
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		return nil
	}
	return err
}

// lineGuard passes a stdio server's output through line by line. A line
// over limit bytes (newline excluded) is not passed on: it is read to its
// end and dropped, and when it is a response (an "id" and no "method"),
// a JSON-RPC error response with the same id takes its place, so the
// request it answered fails with a TooLargeError and the session goes on.
// At most limit bytes of one line are held in memory.
type lineGuard struct {
	r       *bufio.Reader
	limit   int
	dropped func(int64)
	stray   func([]byte) // lines that are not JSON, skipped

	out  []byte // what Read hands out next
	line []byte // the line being gathered
	err  error  // the reader's error, returned once out is empty
}

// guardChunk is the guard's read buffer: short lines pass without a copy.
const guardChunk = 64 << 10

// idWindow is how much of an oversized line's start and end is kept to
// find its id: a Go SDK server writes the id first, a TypeScript one last.
const idWindow = 64 << 10

func newLineGuard(r io.Reader, limit int, dropped func(int64)) *lineGuard {
	if limit <= 0 {
		limit = DefaultMaxMessageBytes
	}
	return &lineGuard{r: bufio.NewReaderSize(r, guardChunk), limit: limit, dropped: dropped}
}

func (g *lineGuard) Read(p []byte) (int, error) {
	if err := g.fill(); err != nil {
		return 0, err
	}
	n := copy(p, g.out)
	g.out = g.out[n:]
	return n, nil
}

// readLine is the rest of the current line, or the next line, whole: its
// line ending included (none on a last line cut off by the end), valid
// until the next read. A line and an error never come together: the
// error is the next call's.
func (g *lineGuard) readLine() ([]byte, error) {
	if err := g.fill(); err != nil {
		return nil, err
	}
	line := g.out
	g.out = nil
	return line, nil
}

// fill gathers the next line that can be JSON into out, unless out holds
// some of a line still.
func (g *lineGuard) fill() error {
	for len(g.out) == 0 {
		if g.err != nil {
			return g.err
		}
		g.next()
		if line := g.out[:contentLen(g.out)]; !startsJSON(line) {
			if len(bytes.TrimSpace(line)) > 0 && g.stray != nil {
				g.stray(line)
			}
			g.out = nil
		}
	}
	return nil
}

// startsJSON reports whether line can be a JSON-RPC message or batch: its
// first byte that is not white space opens an object or an array. Only
// the first byte is looked at, so a message costs no extra scan; a line
// that starts like JSON but is not still reaches the SDK's decoder.
func startsJSON(line []byte) bool {
	line = bytes.TrimLeft(line, " \t\r\n")
	return len(line) > 0 && (line[0] == '{' || line[0] == '[')
}

// contentLen is a line's length without its line ending.
func contentLen(b []byte) int {
	b = bytes.TrimSuffix(b, []byte("\n"))
	return len(bytes.TrimSuffix(b, []byte("\r")))
}

// next gathers one line into out, or the answer that replaces it.
func (g *lineGuard) next() {
	if cap(g.line) > guardChunk {
		g.line = nil // a long line's buffer is not kept for the short ones
	}
	g.line = g.line[:0]
	for {
		chunk, err := g.r.ReadSlice('\n')
		if len(g.line) == 0 && err == nil && contentLen(chunk) <= g.limit {
			g.out = chunk // valid until the next read, which waits for out to drain
			return
		}
		g.line = append(g.line, chunk...)
		if contentLen(g.line) > g.limit {
			g.drop(err)
			return
		}
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		g.out, g.err = g.line, err
		return
	}
}

// drop reads the rest of an oversized line (whose start is in g.line, and
// whose last read ended with err) and puts the error response in out.
func (g *lineGuard) drop(err error) {
	head := bytes.Clone(g.line[:min(len(g.line), idWindow)])
	size := int64(len(g.line))
	tail := g.line[len(g.line)-min(len(g.line), idWindow):]
	g.line = nil
	for errors.Is(err, bufio.ErrBufferFull) {
		var chunk []byte
		chunk, err = g.r.ReadSlice('\n')
		size += int64(len(chunk))
		tail = append(tail, chunk...)
		if len(tail) > 2*idWindow {
			tail = append([]byte(nil), tail[len(tail)-idWindow:]...)
		}
	}
	if err != nil {
		g.err = err
	}
	size -= int64(len(tail) - contentLen(tail))
	id, ok := responseID(head, tail)
	if !ok {
		if g.dropped != nil {
			g.dropped(size)
		}
		return
	}
	data, _ := json.Marshal(tooLargeData{Toolprof: "message_too_large", Bytes: size, Limit: int64(g.limit)})
	resp, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: codeTooLarge, Message: "answer too large", Data: data}})
	g.out = append(resp, '\n')
}

// responseID finds the id of the response whose line starts with head and
// ends with tail: in the top-level members in front of the first one head
// does not hold whole, or else in those after the last one tail does not
// hold whole. ok is false for a request or a notification (a "method"
// member), or when no id is found.
func responseID(head, tail []byte) (id json.RawMessage, ok bool) {
	members := leadingMembers(head)
	if _, found := members["id"]; !found {
		if _, isCall := members["method"]; !isCall {
			members = trailingMembers(tail)
		}
	}
	if _, isCall := members["method"]; isCall {
		return nil, false
	}
	id, ok = members["id"]
	return id, ok && len(id) > 0 && id[0] != '{' && id[0] != '['
}

// leadingMembers decodes the top-level members at the start of a JSON
// object that is cut off.
func leadingMembers(head []byte) map[string]json.RawMessage {
	out := map[string]json.RawMessage{}
	dec := json.NewDecoder(bytes.NewReader(head))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return out
	}
	for dec.More() {
		tok, err := dec.Token()
		key, isKey := tok.(string)
		if err != nil || !isKey {
			return out
		}
		var v json.RawMessage
		if dec.Decode(&v) != nil {
			return out
		}
		out[key] = v
	}
	return out
}

// trailingWindow bounds how far from its end an oversized line's last
// members are looked for: ids and the "jsonrpc" member are short.
const trailingWindow = 4 << 10

// trailingMembers decodes the top-level members at the end of a JSON
// object whose start is cut off: the members after the last comma, in
// the last trailingWindow bytes, from which the rest of the line is a
// valid object holding an id. Only a comma between top-level members can
// start such a rest: one inside a nested value would leave the braces
// unbalanced, and one inside a string would leave a quote open (quotes
// inside strings are escaped).
func trailingMembers(tail []byte) map[string]json.RawMessage {
	tail = bytes.TrimRight(tail, " \t\r\n")
	for i := len(tail) - 1; i >= 0 && i >= len(tail)-trailingWindow; i-- {
		if tail[i] != ',' {
			continue
		}
		var out map[string]json.RawMessage
		if json.Unmarshal(append([]byte("{"), tail[i+1:]...), &out) == nil {
			if _, ok := out["id"]; ok {
				return out
			}
		}
	}
	return map[string]json.RawMessage{}
}
