package upstream

import (
	"bytes"
	"encoding/json"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// The SDK's streamable client reads an application/json answer whole
// (io.ReadAll) and an SSE event up to its MaxEventSize, past which it ends
// the session. The bodies here hold each message back until it is whole:
// one within the limit passes unchanged; one over it is read to its end
// without being kept and, when it answers a call, replaced by the same
// error response a stdio server's oversized line gets (lineGuard), so that
// call fails with a TooLargeError and the session and every other call go
// on. At most limit bytes of one message are held.

// tooLargeResponse is the error response that takes the place of a
// response to id dropped for its size.
func tooLargeResponse(id json.RawMessage, size int64, limit int) []byte {
	data, _ := json.Marshal(tooLargeData{Toolprof: "message_too_large", Bytes: size, Limit: int64(limit)})
	resp, _ := json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Error   jsonrpc.Error   `json:"error"`
	}{"2.0", id, jsonrpc.Error{Code: codeTooLarge, Message: "answer too large", Data: data}})
	return resp
}

// scalarID reports whether id is a JSON-RPC id a response can carry.
func scalarID(id json.RawMessage) bool {
	return len(id) > 0 && id[0] != '{' && id[0] != '[' && string(id) != "null"
}

// cutBody is a body read at most to a bound.
type cutBody struct {
	io.Reader
	io.Closer
}

// rawJSONBody is an application/json answer: read whole (up to limit)
// before the SDK gets a byte, then handed out, its tools/list result taken.
type rawJSONBody struct {
	io.ReadCloser
	r       *rawTools
	limit   int
	size    int64           // Content-Length, -1 if unknown
	ids     []jsonrpc.ID    // the calls it may answer, told unanswered once it ends
	call    json.RawMessage // the id of the call it answers; nil if unknown
	dropped func(int64)
	filled  bool
	out     []byte // what Read hands out next
	err     error  // returned once out is empty
	ended   bool
}

func (b *rawJSONBody) Read(p []byte) (int, error) {
	if !b.filled {
		b.filled = true
		b.fill()
	}
	if len(b.out) == 0 {
		b.end()
		return 0, b.err
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	return n, nil
}

func (b *rawJSONBody) fill() {
	var buf []byte
	var err error
	if b.size <= int64(b.limit) { // not over by its Content-Length
		buf, err = io.ReadAll(io.LimitReader(b.ReadCloser, int64(b.limit)+1))
		if err != nil || len(buf) <= b.limit {
			if err == nil {
				if len(b.ids) > 0 {
					b.r.message(buf)
				}
				err = io.EOF
			}
			b.out, b.err = buf, err
			return
		}
	}
	size := int64(len(buf))
	buf = nil
	n, err := io.Copy(io.Discard, b.ReadCloser)
	size += n
	switch {
	case err != nil:
		b.err = err // the SDK reports the failed read
	case scalarID(b.call):
		b.out, b.err = tooLargeResponse(b.call, size, b.limit), io.EOF
	default:
		// Nothing to answer in its place: an empty body, which the SDK
		// fails to decode, ending the session.
		if b.dropped != nil {
			b.dropped(size)
		}
		b.err = io.EOF
	}
}

func (b *rawJSONBody) Close() error {
	b.end()
	return b.ReadCloser.Close()
}

func (b *rawJSONBody) end() {
	if !b.ended {
		b.ended = true
		b.r.unanswered(b.ids, "")
	}
}

// sseChunk is how much of a stream rawSSEBody reads at a time.
const sseChunk = 32 << 10

// rawSSEBody is a text/event-stream: each event held until its blank line,
// then handed out, its tools/list result taken. Over limit (its bytes as
// sent, field names included) an event is skipped to its end and replaced
// by an event carrying the too-large response when it answered a call.
type rawSSEBody struct {
	io.ReadCloser
	r       *rawTools
	limit   int
	ids     []jsonrpc.ID    // the calls it may answer, told unanswered once it ends
	call    json.RawMessage // the id of the call whose stream it is; nil for the standalone stream
	dropped func(int64)
	notes   *noteCount // counts the relayed notifications handed out
	lastID  string     // the last event id seen: the client resumes the stream from it
	ended   bool

	chunk []byte
	event []byte // the current event so far, while within limit
	line  int    // the current line's length so far
	cr    bool   // the current line so far ends in a carriage return
	out   []byte // what Read hands out next
	err   error  // returned once out is empty

	over     bool // the current event is over limit: skipped to its end
	overSize int64
	overHead []byte // the start of the skipped event's data
	overID   string // its id field, if before the limit
	overName string // its event field, if before the limit
}

func (b *rawSSEBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 && b.err == nil {
		if b.chunk == nil {
			b.chunk = make([]byte, sseChunk)
		}
		n, err := b.ReadCloser.Read(b.chunk)
		b.feed(b.chunk[:n])
		if err != nil {
			b.err = err
			if !b.over {
				// A last event without its blank line: the SDK decides.
				b.out = append(b.out, b.event...)
			}
			b.event = nil
			// The client resumes a stream that ends (or breaks) after an
			// event id; one it closes first it gave up on.
			b.end(b.lastID)
		}
	}
	if len(b.out) == 0 {
		return 0, b.err
	}
	n := copy(p, b.out)
	b.out = b.out[n:]
	if len(b.out) == 0 {
		b.out = b.out[:0:0] // let a long event's bytes go
	}
	return n, nil
}

func (b *rawSSEBody) Close() error {
	b.end("")
	return b.ReadCloser.Close()
}

func (b *rawSSEBody) end(lastID string) {
	if !b.ended {
		b.ended = true
		b.r.unanswered(b.ids, lastID)
	}
}

// feed takes the bytes just read, line piece by line piece.
func (b *rawSSEBody) feed(p []byte) {
	for len(p) > 0 {
		piece, endsLine := p, false
		if i := bytes.IndexByte(p, '\n'); i >= 0 {
			piece, endsLine = p[:i+1], true
		}
		p = p[len(piece):]
		b.add(piece, endsLine)
	}
}

func (b *rawSSEBody) add(piece []byte, endsLine bool) {
	if b.over {
		b.overSize += int64(len(piece))
	} else {
		b.event = append(b.event, piece...)
		if len(b.event) > b.limit {
			b.skip()
		}
	}
	if !endsLine {
		b.line += len(piece)
		b.cr = piece[len(piece)-1] == '\r'
		return
	}
	blank := b.line+len(piece) == 1 || b.line+len(piece) == 2 && (b.cr || piece[0] == '\r')
	b.line, b.cr = 0, false
	if blank {
		b.endEvent()
	}
}

// skip starts skipping the current event, keeping what identifies it.
func (b *rawSSEBody) skip() {
	data, id, name := parseEvent(b.event)
	b.over, b.overSize = true, int64(len(b.event))
	b.overHead = bytes.Clone(data[:min(len(data), idWindow)])
	b.overID, b.overName = id, name
	b.event = nil
}

func (b *rawSSEBody) endEvent() {
	if !b.over {
		if len(b.ids) > 0 {
			data, id, _ := parseEvent(b.event)
			if id != "" {
				b.lastID = id // as the SDK reads it, which keeps the last id for an empty one
			}
			if len(data) > 0 {
				b.r.message(data)
			}
		}
		if b.notes != nil && bytes.Contains(b.event, []byte(`"notifications/`)) {
			// Only events that may be notifications are decoded again.
			if data, _, _ := parseEvent(b.event); len(data) > 0 {
				if msg, err := jsonrpc.DecodeMessage(data); err == nil {
					b.notes.readOne(msg)
				}
			}
		}
		b.out = append(b.out, b.event...)
		if cap(b.event) > sseChunk {
			b.event = nil
		} else {
			b.event = b.event[:0]
		}
		return
	}
	b.over = false
	if b.overID != "" {
		b.lastID = b.overID
	}
	members := leadingMembers(b.overHead)
	_, isCall := members["method"]
	id, ok := members["id"]
	if !ok && !isCall {
		id = b.call // a server writing the id last: the stream's own call
	}
	if isCall || !scalarID(id) || b.overName != "" && b.overName != "message" {
		if b.dropped != nil {
			b.dropped(b.overSize)
		}
		return
	}
	if b.overID != "" {
		b.out = append(b.out, "id: "+b.overID+"\n"...)
	}
	b.out = append(b.out, "data: "...)
	b.out = append(b.out, tooLargeResponse(id, b.overSize, b.limit)...)
	b.out = append(b.out, "\n\n"...)
}

// parseEvent returns the data (its lines joined by newlines), id and
// event fields of an event's bytes, read as the SDK reads them; a last
// line without its end counts.
func parseEvent(ev []byte) (data []byte, id, name string) {
	seen := false
	for len(ev) > 0 {
		line := ev
		if i := bytes.IndexByte(ev, '\n'); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		line = bytes.TrimSuffix(line, []byte("\r"))
		field, value, _ := bytes.Cut(line, []byte(":"))
		value = bytes.TrimSpace(value)
		switch string(field) {
		case "data":
			if seen {
				data = append(data, '\n')
			}
			seen = true
			data = append(data, value...)
		case "id":
			if v := string(bytes.TrimSpace(value)); v != "" {
				id = v
			}
		case "event":
			name = string(bytes.TrimSpace(value))
		}
	}
	return data, id, name
}
