package jsonrpcwire

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// Members returns the values of the members of the JSON object data named
// names, in that order (nil for one it lacks), as slices of data. ok is
// false unless data is a valid JSON object whose every member is one of
// names, named once and without escapes: an object a decoder could read
// otherwise than a reader of these bytes (a name differing in case, a
// member named twice, one the caller does not expect) is not taken.
func Members(data []byte, names ...string) (values []json.RawMessage, ok bool) {
	if !json.Valid(data) {
		return nil, false
	}
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return nil, false
	}
	values = make([]json.RawMessage, len(names))
	seen := 0
	for i = skipSpace(data, i+1); data[i] != '}'; i = skipSpace(data, i) {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		keyEnd := stringEnd(data, i)
		key := data[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return nil, false
		}
		n := -1
		for j, name := range names {
			if string(key) == name {
				n = j
			}
		}
		if n < 0 || seen&(1<<n) != 0 {
			return nil, false
		}
		seen |= 1 << n
		i = skipSpace(data, skipSpace(data, keyEnd)+1) // past the colon
		end := valueEnd(data, i)
		values[n] = data[i:end:end]
		i = end
	}
	return values, true
}

// Batched reports whether the request with the safe id id came in a batch
// whose answer is still being collected.
func (c *Conn) Batched(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.batches[id]
	return ok
}
