package jsonrpcwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultMaxFrameBytes bounds one inbound message (one line) when
// Transport.MaxFrameBytes is 0: the go-sdk's own default line limit.
const DefaultMaxFrameBytes = mcp.DefaultMaxLineLength

// BatchesUntil is the first MCP version without JSON-RPC batches.
const BatchesUntil = "2025-06-18"

// BatchRefused reports whether a session at the negotiated protocol
// version ("": none yet) must refuse a JSON-RPC batch, and the message
// saying so (-32600, id null).
func BatchRefused(version string) (string, bool) {
	switch {
	case version == "":
		return "JSON-RPC batch refused: the session has not negotiated a protocol version (initialize), and MCP " + BatchesUntil + " and later have no batches; send each message on its own", true
	case version >= BatchesUntil:
		return fmt.Sprintf("JSON-RPC batch refused: this session's protocol version %s has no batches (MCP removed them in %s); send each message on its own", version, BatchesUntil), true
	}
	return "", false
}

// ErrorLine is a JSON-RPC error answer with id null, as the transport
// writes it.
func ErrorLine(code int64, message string) []byte { return errorLine(nil, code, message) }

// Transport serves one MCP session over newline-delimited JSON-RPC on
// Reader and Writer (a process's stdin and stdout). Unlike the SDK's
// IOTransport, a line that is not a JSON-RPC message is answered with a
// JSON-RPC error and the session goes on: -32700 (id null) for a line that
// is not JSON, -32600 for JSON that is not a message, for a line longer
// than MaxFrameBytes (its bytes are skipped up to the next newline), and
// for a batch on a session whose protocol version has none. Request ids
// reach the client exactly as it sent them (IDs).
type Transport struct {
	Reader io.Reader
	Writer io.Writer
	// MaxFrameBytes bounds one line, its newline excluded. 0:
	// DefaultMaxFrameBytes.
	MaxFrameBytes int
}

// Connect implements mcp.Transport. Close closes Reader when it is an
// io.Closer; Writer is never closed.
func (t *Transport) Connect(context.Context) (mcp.Connection, error) {
	limit := t.MaxFrameBytes
	if limit <= 0 {
		limit = DefaultMaxFrameBytes
	}
	c := &Conn{
		w:         t.Writer,
		incoming:  make(chan frame),
		closed:    make(chan struct{}),
		r:         bufio.NewReader(t.Reader),
		limit:     limit,
		readOn:    make(chan struct{}),
		readEnded: make(chan struct{}),
	}
	if rc, ok := t.Reader.(io.Closer); ok {
		c.closer = rc
	}
	go c.reader()
	return c, nil
}

// Conn is a Transport's connection.
type Conn struct {
	ids IDs

	wmu sync.Mutex // one message per Write of w
	w   io.Writer

	incoming chan frame
	queue    []jsonrpc.Message // the rest of the last batch; Read is serialized
	taker    atomic.Pointer[Taker]

	// The input is read by one goroutine at a time; one that takes a
	// request (Taker) hands the reading to a spare, a goroutine done with
	// its request, whose stack has grown to what a request needs already.
	r         *bufio.Reader
	limit     int
	readOn    chan struct{} // a spare is to read on
	readEnded chan struct{} // closed when the input has ended: spares return
	spares    atomic.Int32

	closeOnce sync.Once
	closed    chan struct{}
	closer    io.Closer

	mu      sync.Mutex
	version string                    // negotiated in initialize; "" before
	initID  jsonrpc.ID                // the safe id of the initialize request in flight
	batches map[jsonrpc.ID]*batchWait // responses owed to a batch, by safe id
}

// frame is what the read loop hands to Read.
type frame struct {
	msgs []jsonrpc.Message
	err  error
}

// batchWait collects the responses to one batch.
type batchWait struct {
	pending int
	out     []json.RawMessage  // in the batch's order; errors filled in already
	pos     map[jsonrpc.ID]int // where each call's response goes in out
}

// A Taker is offered each request that comes alone on its line, in the
// read loop, before Read could return it. taken reports that the request
// is the Taker's and Read never returns it; run, when not nil, is then the
// request's work, which the read loop's goroutine does itself while a
// new one reads on, so that the request starts without waiting for
// another goroutine to be scheduled.
type Taker func(*jsonrpc.Request) (run func(), taken bool)

// SetTaker sets the Taker offered the requests read from now on.
func (c *Conn) SetTaker(t Taker) { c.taker.Store(&t) }

// take offers msgs, the one message of a line that was not a batch and
// was read without error, to the Taker.
func (c *Conn) take(line []byte, msgs []jsonrpc.Message, readErr error) (run func(), taken bool) {
	t := c.taker.Load()
	if t == nil || readErr != nil || len(msgs) != 1 || bytes.TrimSpace(line)[0] == '[' {
		return nil, false
	}
	req, ok := msgs[0].(*jsonrpc.Request)
	if !ok {
		return nil, false
	}
	return (*t)(req)
}

// maxSpares bounds the goroutines waiting to read: as many as requests
// commonly run at once on one connection.
const maxSpares = 4

// reader reads the input, and does the work of each request it takes
// while another goroutine reads on; then it waits as a spare.
func (c *Conn) reader() {
	for {
		run := c.readLoop()
		if run == nil {
			return
		}
		run()
		if c.spares.Add(1) > maxSpares {
			c.spares.Add(-1)
			return
		}
		select {
		case <-c.readOn:
		case <-c.readEnded:
			c.spares.Add(-1)
			return
		case <-c.closed:
			c.spares.Add(-1)
			return
		}
	}
}

// handOff has a spare, or a new goroutine, read on.
func (c *Conn) handOff() {
	select {
	case c.readOn <- struct{}{}:
		c.spares.Add(-1)
	default:
		go c.reader()
	}
}

// errTooLong marks a line over the frame limit.
var errTooLong = errors.New("frame too long")

// readLoop reads until a Taker takes a request, returning its work once
// the reading is handed off, or until the input ends (nil).
func (c *Conn) readLoop() func() {
	r, limit := c.r, c.limit
	for {
		line, err := readLine(r, limit)
		if errors.Is(err, errTooLong) {
			c.writeError(nil, jsonrpc.CodeInvalidRequest, fmt.Sprintf(
				"message of more than %d bytes (the frame limit, --max-frame-bytes): skipped; send smaller messages or raise the limit", limit))
			continue
		}
		if len(bytes.TrimSpace(line)) > 0 {
			if msgs := c.decode(line); len(msgs) > 0 {
				// The last line, unterminated, goes to Read: the end of
				// input that comes with it ends every call.
				if run, taken := c.take(line, msgs, err); taken {
					if run != nil {
						c.handOff()
						return run
					}
					continue
				}
				select {
				case c.incoming <- frame{msgs: msgs}:
				case <-c.closed:
					close(c.readEnded)
					return nil
				}
			}
		}
		if err != nil {
			select {
			case c.incoming <- frame{err: err}:
			case <-c.closed:
			}
			close(c.readEnded)
			return nil
		}
	}
}

// readLine returns the next line without its newline. A line over limit
// is consumed through its newline and reported as errTooLong. At the end of
// input the last, unterminated line comes with io.EOF.
func readLine(r *bufio.Reader, limit int) ([]byte, error) {
	var line []byte
	for {
		chunk, err := r.ReadSlice('\n')
		if len(line)+len(chunk) > limit+2 { // room for "\r\n"
			for errors.Is(err, bufio.ErrBufferFull) {
				_, err = r.ReadSlice('\n')
			}
			if err != nil && !errors.Is(err, io.EOF) {
				return nil, err
			}
			if err == nil {
				return nil, errTooLong
			}
			return nil, errors.Join(errTooLong, err)
		}
		line = append(line, chunk...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		line = bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		if len(line) > limit {
			return nil, errTooLong
		}
		return line, err
	}
}

// decode turns one line into the messages for the SDK, answering itself
// what the SDK must not see.
func (c *Conn) decode(line []byte) []jsonrpc.Message {
	line = bytes.TrimSpace(line)
	if !json.Valid(line) {
		var probe json.RawMessage
		err := json.Unmarshal(line, &probe) // for what is wrong with it
		c.writeError(nil, jsonrpc.CodeParseError, fmt.Sprintf("parse error: the line is not JSON (%v); send one JSON-RPC message per line", err))
		return nil
	}
	if line[0] != '[' {
		msg, errResp := c.decodeOne(line)
		if errResp != nil {
			c.writeLine(errResp)
		}
		if msg == nil {
			return nil
		}
		return []jsonrpc.Message{msg}
	}
	return c.decodeBatch(line)
}

func (c *Conn) decodeBatch(line []byte) []jsonrpc.Message {
	c.mu.Lock()
	version := c.version
	c.mu.Unlock()
	if msg, refused := BatchRefused(version); refused {
		c.writeError(nil, jsonrpc.CodeInvalidRequest, msg)
		return nil
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(line, &elems); err != nil || len(elems) == 0 {
		c.writeError(nil, jsonrpc.CodeInvalidRequest, "invalid request: an empty JSON-RPC batch")
		return nil
	}
	var (
		msgs  []jsonrpc.Message
		calls []jsonrpc.ID
		b     = &batchWait{pos: make(map[jsonrpc.ID]int)}
	)
	for _, e := range elems {
		msg, errResp := c.decodeOne(e)
		if errResp != nil {
			b.out = append(b.out, errResp)
		}
		if msg == nil {
			continue
		}
		msgs = append(msgs, msg)
		if req, ok := msg.(*jsonrpc.Request); ok && req.IsCall() {
			calls = append(calls, req.ID)
			b.pos[req.ID] = len(b.out)
			b.out = append(b.out, nil) // filled by its response
		}
	}
	if len(calls) == 0 {
		if len(b.out) > 0 {
			c.writeBatch(b.out)
		}
		return msgs
	}
	b.pending = len(calls)
	c.mu.Lock()
	if c.batches == nil {
		c.batches = make(map[jsonrpc.ID]*batchWait)
	}
	for _, id := range calls {
		c.batches[id] = b
	}
	c.mu.Unlock()
	return msgs
}

// decodeOne decodes one message, mapping a request's id to a safe one. It
// returns the message for the SDK (nil: none), or the encoded error answer
// for a message that is not valid. data is valid JSON (a line decode has
// checked, or an element of one), so it is not checked again.
func (c *Conn) decodeOne(data []byte) (jsonrpc.Message, []byte) {
	msg, rawID, plain := DecodeValid(data)
	if !plain {
		var w struct {
			ID     json.RawMessage `json:"id"`
			Method *string         `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		// As the SDK reads it (UnmarshalAsSDK): the answer carries its id.
		if err := UnmarshalAsSDK(data, &w); err != nil {
			return nil, errorLine(nil, jsonrpc.CodeInvalidRequest, "invalid request: not a JSON-RPC message object")
		}
		var err error
		if msg, err = jsonrpc.DecodeMessage(data); err != nil {
			return nil, errorLine(validID(w.ID), jsonrpc.CodeInvalidRequest, "invalid request: "+err.Error())
		}
		rawID = w.ID
	}
	req, ok := msg.(*jsonrpc.Request)
	if !ok {
		return msg, nil // an answer to the server's own request: its ids are the SDK's
	}
	if req.IsCall() {
		req.ID = c.ids.Map(rawID)
		SetRequestID(req, rawID)
		if req.Method == "initialize" {
			c.mu.Lock()
			c.initID = req.ID
			c.mu.Unlock()
		}
		return req, nil
	}
	if req.Method == "notifications/cancelled" {
		return c.cancelled(req), nil
	}
	return req, nil
}

// cancelled rewrites a client's notifications/cancelled to name the safe
// id of the request it cancels; one naming no request in flight is dropped
// (it could otherwise name another request's safe id).
func (c *Conn) cancelled(req *jsonrpc.Request) jsonrpc.Message {
	var p map[string]json.RawMessage
	if json.Unmarshal(req.Params, &p) != nil || p["requestId"] == nil {
		return req // the SDK answers a malformed one
	}
	safe, ok := c.ids.Lookup(p["requestId"])
	if !ok {
		return nil
	}
	p["requestId"], _ = json.Marshal(safe.Raw())
	b, err := json.Marshal(p)
	if err != nil {
		return nil
	}
	req.Params = b
	return req
}

// validID returns raw when it is a JSON-RPC id (a string or a number), nil
// otherwise: an error answer then carries id null.
func validID(raw json.RawMessage) json.RawMessage {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return nil
	}
	switch raw[0] {
	case '"', '-', '0', '1', '2', '3', '4', '5', '6', '7', '8', '9':
		return raw
	}
	return nil
}

// errorLine encodes an error answer with the raw id (nil: null).
func errorLine(id json.RawMessage, code int64, message string) []byte {
	if id == nil {
		id = json.RawMessage("null")
	}
	b, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: code, Message: message}})
	return b
}

func (c *Conn) writeError(id json.RawMessage, code int64, message string) {
	c.writeLine(errorLine(id, code, message))
}

func (c *Conn) writeLine(b []byte) error {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	_, err := c.w.Write(append(b, '\n'))
	return err
}

func (c *Conn) writeBatch(out []json.RawMessage) error {
	b, err := json.Marshal(out)
	if err != nil {
		return err
	}
	return c.writeLine(b)
}

// Read implements mcp.Connection.
func (c *Conn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		m := c.queue[0]
		c.queue = c.queue[1:]
		return m, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-c.closed:
		return nil, io.EOF
	case f := <-c.incoming:
		if f.err != nil {
			return nil, f.err
		}
		c.queue = f.msgs[1:]
		return f.msgs[0], nil
	}
}

// Write implements mcp.Connection. A slow reader of Writer slows the
// writers down: nothing is dropped.
func (c *Conn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	resp, isResp := msg.(*jsonrpc.Response)
	if isResp {
		c.noteVersion(resp)
	}
	data, err := c.ids.Encode(msg)
	if err != nil {
		return fmt.Errorf("encode %T: %w", msg, err)
	}
	if isResp {
		c.mu.Lock()
		b, ok := c.batches[resp.ID]
		if ok {
			delete(c.batches, resp.ID)
			b.out[b.pos[resp.ID]] = data
			b.pending--
		}
		c.mu.Unlock()
		if ok {
			if b.pending > 0 {
				return nil
			}
			return c.writeBatch(b.out)
		}
	}
	return c.writeLine(data)
}

// WriteResult writes what Write writes of &jsonrpc.Response{ID: id,
// Result: result}, result being compact JSON (as the SDK's encoder leaves
// it): the line is put together from the bytes instead of the response
// being encoded again.
func (c *Conn) WriteResult(ctx context.Context, id jsonrpc.ID, result json.RawMessage) error {
	resp := &jsonrpc.Response{ID: id, Result: result}
	if len(result) == 0 || c.Batched(id) {
		return c.Write(ctx, resp)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	c.noteVersion(resp)
	raw, ok := c.ids.Restore(id)
	if !ok {
		return c.Write(ctx, resp) // the SDK's id, not one of IDs
	}
	line := make([]byte, 0, len(raw)+len(result)+len(`{"jsonrpc":"2.0","id":,"result":}`)+1)
	line = append(line, `{"jsonrpc":"2.0","id":`...)
	line = append(line, raw...)
	line = append(line, `,"result":`...)
	line = append(line, result...)
	line = append(line, '}')
	return c.writeLine(line)
}

// noteVersion records the protocol version the initialize answer
// negotiates.
func (c *Conn) noteVersion(resp *jsonrpc.Response) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.initID.IsValid() || resp.ID != c.initID {
		return
	}
	c.initID = jsonrpc.ID{}
	var r struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if resp.Error == nil && json.Unmarshal(resp.Result, &r) == nil {
		c.version = r.ProtocolVersion
	}
}

// Close implements mcp.Connection.
func (c *Conn) Close() error {
	var err error
	c.closeOnce.Do(func() {
		close(c.closed)
		if c.closer != nil {
			err = c.closer.Close()
		}
	})
	return err
}

// SessionID implements mcp.Connection: stdio sessions have none.
func (c *Conn) SessionID() string { return "" }
