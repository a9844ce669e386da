// Package jsonrpcwire keeps JSON-RPC request ids exact across the go-sdk,
// and frames newline-delimited JSON-RPC for a server over a byte stream
// (Conn).
//
// The SDK decodes an id into a float64 and keeps it as an int64, so 1.5 is
// answered as 1, 1e30 as -9223372036854775808, and 2^53+1 as 2^53; two
// requests whose ids differ only there collide. IDs avoids this: each
// request id is replaced, before the SDK sees it, by a fresh small integer
// (Map), and the raw bytes the client sent are put back in the response
// (Restore, Splice). One IDs serves one session: a raw id already in flight
// maps to its safe id again, so that the SDK refuses the duplicate as it
// would have. An HTTP front would keep one per Mcp-Session-Id (the SDK's
// streamable handler decodes ids the same way); the gateway's HTTP path
// does not use it yet.
package jsonrpcwire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// IDs maps clients' raw request ids to the safe ids the SDK is given. Its
// zero value is ready; it is safe for concurrent use.
type IDs struct {
	mu   sync.Mutex
	next int64
	raw  map[int64]json.RawMessage // safe id -> the client's bytes
	safe map[string]int64          // key(raw) -> safe id, while in flight
}

// key identifies a raw id by value: a string by its decoded text (so "a"
// and "\u0061" are one id), a number by its literal.
func key(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var s string
		if json.Unmarshal(raw, &s) == nil {
			return "s" + s
		}
	}
	return "n" + string(raw)
}

// Map returns the safe id for a request with id raw. A raw id already in
// flight gets the same safe id, so that the SDK refuses the duplicate as it
// would have.
func (m *IDs) Map(raw json.RawMessage) jsonrpc.ID {
	m.mu.Lock()
	defer m.mu.Unlock()
	k := key(raw)
	if s, ok := m.safe[k]; ok {
		return safeID(s)
	}
	if m.raw == nil {
		m.raw = make(map[int64]json.RawMessage)
		m.safe = make(map[string]int64)
	}
	m.next++
	m.raw[m.next] = bytes.Clone(bytes.TrimSpace(raw))
	m.safe[k] = m.next
	return safeID(m.next)
}

// Lookup returns the safe id of raw while its request is in flight (for a
// client's notifications/cancelled).
func (m *IDs) Lookup(raw json.RawMessage) (jsonrpc.ID, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	s, ok := m.safe[key(raw)]
	return safeID(s), ok
}

// Restore returns the raw id behind safe and forgets it: the request has
// been answered.
func (m *IDs) Restore(safe jsonrpc.ID) (json.RawMessage, bool) {
	s, ok := safe.Raw().(int64)
	if !ok {
		return nil, false
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	raw, ok := m.raw[s]
	if ok {
		delete(m.raw, s)
		delete(m.safe, key(raw))
	}
	return raw, ok
}

// Len is the number of ids in flight.
func (m *IDs) Len() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.raw)
}

// Encode encodes a message as the SDK would, with a response's safe id
// replaced by the raw id it stands for (and forgotten).
func (m *IDs) Encode(msg jsonrpc.Message) ([]byte, error) {
	data, err := jsonrpc.EncodeMessage(msg)
	if err != nil {
		return nil, err
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok {
		return data, nil // the server's own requests keep its ids
	}
	raw, ok := m.Restore(resp.ID)
	if !ok {
		return data, nil
	}
	return Splice(data, resp.ID, raw)
}

// Splice replaces the id of an encoded message, which the SDK writes first
// after the version tag, by raw.
func Splice(data []byte, id jsonrpc.ID, raw json.RawMessage) ([]byte, error) {
	s, ok := id.Raw().(int64)
	if !ok {
		return data, nil
	}
	prefix := `{"jsonrpc":"2.0","id":` + strconv.FormatInt(s, 10)
	if rest, ok := bytes.CutPrefix(data, []byte(prefix)); ok && len(rest) > 0 && (rest[0] == ',' || rest[0] == '}') {
		out := make([]byte, 0, len(data)+len(raw))
		out = append(out, `{"jsonrpc":"2.0","id":`...)
		out = append(out, raw...)
		return append(out, rest...), nil
	}
	// Not the SDK's layout: rewrite the field.
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(data, &fields); err != nil {
		return nil, err
	}
	fields["id"] = raw
	return json.Marshal(fields)
}

// safeID is the SDK's id for s (exact: s stays far below 2^53).
func safeID(s int64) jsonrpc.ID {
	id, _ := jsonrpc.MakeID(float64(s))
	return id
}
