package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
)

// stdioConn is a stdio server's connection: the SDK's IOTransport
// connection (newline-delimited JSON-RPC, incoming batches answered as
// batches) except in how a message is decoded. The SDK decodes each
// message through a decoder that allocates 32 KiB per value, twice per
// message (once trying it as a batch); a call's answer is decoded here
// with jsonrpcwire.DecodePlain, and only what that leaves (error answers,
// unusual shapes, batches' elements) by the SDK's jsonrpc.DecodeMessage.
type stdioConn struct {
	r     io.ReadCloser  // the server's stdout, through its lineGuard
	lines *lineGuard     // r, a line at a time
	w     io.WriteCloser // the server's stdin (stdioProcess)

	writeMu sync.Mutex

	incoming chan rawOrErr
	queue    []jsonrpc.Message // the rest of the last batch; Read is serialized
	// relay, once set, is handed the answers to its calls in the read
	// loop: they never reach Read (rawcall.go); the read loop counts the
	// notifications it reads in its notes (notecount.go).
	relay atomic.Pointer[relay]

	batchMu sync.Mutex
	batches map[jsonrpc.ID]*stdioBatch // by the id of each request still to answer

	closeOnce sync.Once
	closed    chan struct{}
	closeErr  error
}

type rawOrErr struct {
	raw json.RawMessage
	msg jsonrpc.Message // raw decoded already, when not nil
	err error
}

// stdioBatch collects the answers to one batch of the server's requests.
type stdioBatch struct {
	unresolved map[jsonrpc.ID]int // where each answer goes in responses
	responses  []*jsonrpc.Response
}

// newStdioConn reads r a line at a time through lines, the lineGuard
// over r; closing the connection closes r and w.
func newStdioConn(r io.ReadCloser, lines *lineGuard, w io.WriteCloser) *stdioConn {
	c := &stdioConn{r: r, lines: lines, w: w, incoming: make(chan rawOrErr), closed: make(chan struct{})}
	go c.readLoop()
	return c
}

// readLoop reads one JSON value at a time as the SDK's connection does,
// a value followed by anything but a line ending being an error.
func (c *stdioConn) readLoop() {
	values := &valueReader{lines: c.lines}
	for {
		raw, err := values.next()
		v := rawOrErr{raw: raw, err: err}
		if rl := c.relay.Load(); rl != nil && err == nil {
			if msg, _, ok := jsonrpcwire.DecodeValid(raw); ok { // one value, checked
				if resp, isResp := msg.(*jsonrpc.Response); isResp && rl.deliver(resp) {
					continue
				}
				rl.notes.readOne(msg)
				v.msg = msg
			} else if msgs, _, err := decodeFrame(raw); err == nil {
				// Counted before Read hands them on, which decodes them
				// again (batches and unusual shapes only).
				for _, m := range msgs {
					rl.notes.readOne(m)
				}
			}
		}
		select {
		case c.incoming <- v:
		case <-c.closed:
			return
		}
		if err != nil {
			return
		}
	}
}

// decodeMessage is one message as jsonrpc.DecodeMessage reads it.
func decodeMessage(raw []byte) (jsonrpc.Message, error) {
	if msg, _, ok := jsonrpcwire.DecodePlain(raw); ok {
		return msg, nil
	}
	return jsonrpc.DecodeMessage(raw)
}

// decodeFrame is a frame's messages, and whether it was a batch.
func decodeFrame(raw json.RawMessage) ([]jsonrpc.Message, bool, error) {
	if len(raw) == 0 || raw[0] != '[' {
		msg, err := decodeMessage(raw)
		return []jsonrpc.Message{msg}, false, err
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, true, fmt.Errorf("unmarshaling jsonrpc batch: %w", err)
	}
	if len(elems) == 0 {
		return nil, true, errors.New("empty batch")
	}
	msgs := make([]jsonrpc.Message, 0, len(elems))
	for _, e := range elems {
		msg, err := decodeMessage(e)
		if err != nil {
			return nil, true, err
		}
		msgs = append(msgs, msg)
	}
	return msgs, true, nil
}

// Read implements mcp.Connection.
func (c *stdioConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	if len(c.queue) > 0 {
		next := c.queue[0]
		c.queue = c.queue[1:]
		return next, nil
	}
	var raw json.RawMessage
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case v := <-c.incoming:
		if v.err != nil {
			return nil, v.err
		}
		if v.msg != nil {
			return v.msg, nil // one message, not a batch (DecodePlain)
		}
		raw = v.raw
	case <-c.closed:
		return nil, io.EOF
	}
	msgs, batch, err := decodeFrame(raw)
	if err != nil {
		return nil, err
	}
	c.queue = msgs[1:]
	if batch {
		if err := c.addBatch(msgs); err != nil {
			return nil, err
		}
	}
	return msgs[0], nil
}

// addBatch notes the requests of a batch, to be answered as one.
func (c *stdioConn) addBatch(msgs []jsonrpc.Message) error {
	var b *stdioBatch
	for _, msg := range msgs {
		req, ok := msg.(*jsonrpc.Request)
		if !ok || !req.IsCall() {
			continue
		}
		if b == nil {
			b = &stdioBatch{unresolved: map[jsonrpc.ID]int{}}
		}
		if _, dup := b.unresolved[req.ID]; dup {
			return fmt.Errorf("duplicate message ID %q", req.ID)
		}
		b.unresolved[req.ID] = len(b.responses)
		b.responses = append(b.responses, nil)
	}
	if b == nil {
		return nil
	}
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	for id := range b.unresolved {
		if _, ok := c.batches[id]; ok {
			return fmt.Errorf("invalid request: batch contains previously seen request %v", id.Raw())
		}
	}
	if c.batches == nil {
		c.batches = map[jsonrpc.ID]*stdioBatch{}
	}
	for id := range b.unresolved {
		c.batches[id] = b
	}
	return nil
}

// answered records resp when it answers a batched request: inBatch, and
// the batch's answers once it is complete (nil before).
func (c *stdioConn) answered(resp *jsonrpc.Response) (complete []*jsonrpc.Response, inBatch bool) {
	c.batchMu.Lock()
	defer c.batchMu.Unlock()
	b, ok := c.batches[resp.ID]
	if !ok {
		return nil, false
	}
	b.responses[b.unresolved[resp.ID]] = resp
	delete(b.unresolved, resp.ID)
	delete(c.batches, resp.ID)
	if len(b.unresolved) > 0 {
		return nil, true
	}
	return b.responses, true
}

// Write implements mcp.Connection.
func (c *stdioConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	var data []byte
	if resp, ok := msg.(*jsonrpc.Response); ok {
		batch, inBatch := c.answered(resp)
		if inBatch && batch == nil {
			return nil
		}
		if inBatch {
			elems := make([]json.RawMessage, 0, len(batch))
			for _, r := range batch {
				e, err := jsonrpc.EncodeMessage(r)
				if err != nil {
					return fmt.Errorf("encoding batch message: %w", err)
				}
				elems = append(elems, e)
			}
			b, err := json.Marshal(elems)
			if err != nil {
				return fmt.Errorf("encoding batch: %w", err)
			}
			data = b
		}
	}
	if data == nil {
		b, err := jsonrpc.EncodeMessage(msg)
		if err != nil {
			return fmt.Errorf("marshaling message: %w", err)
		}
		data = b
	}
	_, err := c.w.Write(append(data, '\n'))
	return err
}

// writeLine writes line, one encoded message and its newline, as Write
// writes one.
func (c *stdioConn) writeLine(ctx context.Context, line []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	c.writeMu.Lock()
	defer c.writeMu.Unlock()
	_, err := c.w.Write(line)
	return err
}

// Close implements mcp.Connection: it closes the server's stdout reader
// and then its stdin, which ends the process (stdioProcess).
func (c *stdioConn) Close() error {
	c.closeOnce.Do(func() {
		c.closeErr = errors.Join(c.r.Close(), c.w.Close())
		close(c.closed)
	})
	return c.closeErr
}

// SessionID implements mcp.Connection: stdio sessions have none.
func (c *stdioConn) SessionID() string { return "" }
