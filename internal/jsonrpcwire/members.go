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
	values = make([]json.RawMessage, len(names))
	if !memberValues(data, names, values) {
		return nil, false
	}
	return values, true
}

// ValidMembers is Members of data known to be valid JSON: a part of a
// message DecodePlain or the SDK's decoder has read, which is not checked
// again.
func ValidMembers(data []byte, names ...string) (values []json.RawMessage, ok bool) {
	values = make([]json.RawMessage, len(names))
	if !memberValues(data, names, values) {
		return nil, false
	}
	return values, true
}

// elements returns the elements of data, a valid JSON array, as slices of
// data, as encoding/json decodes it into []json.RawMessage; ok is false
// when data is not an array.
func elements(data []byte) (elems []json.RawMessage, ok bool) {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '[' {
		return nil, false
	}
	elems = []json.RawMessage{}
	for i = skipSpace(data, i+1); data[i] != ']'; i = skipSpace(data, i) {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		end := valueEnd(data, i)
		elems = append(elems, data[i:end:end])
		i = end
	}
	return elems, true
}

// memberValues sets values[n] to the value of the member of the JSON
// object data named names[n], as a slice of data, and leaves it alone for
// a name data lacks. data must be valid JSON. It reports false unless data
// is an object whose every member is one of names (at most 63), named
// once, with no escape in its name: a name's bytes as sent, since one with
// an escape may unescape differently in another decoder.
func memberValues(data []byte, names []string, values []json.RawMessage) bool {
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false
	}
	seen := uint64(0)
	for i = skipSpace(data, i+1); data[i] != '}'; i = skipSpace(data, i) {
		if data[i] == ',' {
			i = skipSpace(data, i+1)
		}
		keyEnd := stringEnd(data, i)
		key := data[i+1 : keyEnd-1]
		if bytes.IndexByte(key, '\\') >= 0 {
			return false
		}
		n := -1
		for j, name := range names {
			if string(key) == name {
				n = j
				break
			}
		}
		if n < 0 || seen&(1<<n) != 0 {
			return false
		}
		seen |= 1 << n
		i = skipSpace(data, skipSpace(data, keyEnd)+1) // past the colon
		end := valueEnd(data, i)
		values[n] = data[i:end:end]
		i = end
	}
	return true
}

// Batched reports whether the request with the safe id id came in a batch
// whose answer is still being collected.
func (c *Conn) Batched(id jsonrpc.ID) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	_, ok := c.batches[id]
	return ok
}
