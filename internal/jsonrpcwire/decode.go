package jsonrpcwire

import (
	"bytes"
	"encoding/json"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// DecodePlain decodes a message of the plain shape every client sends (a
// request, a notification, or a response with a result) into what
// jsonrpc.DecodeMessage returns for it, with the request's raw id. The
// SDK's decoder allocates a 32 KiB buffer for each of the two values it
// decodes (the message, then its method), which is most of what the
// gateway allocates on a call; this one allocates about the message's
// size.
//
// ok is false for anything else, which the caller gives to the SDK's
// decoder instead, so that every message this one takes is one the SDK
// would have read the same way: members other than jsonrpc, id, method,
// params and result (an error, or a name differing in case, which the
// SDK ignores and encoding/json would match), a member named twice or
// with an escape in its name, a jsonrpc other than "2.0", a method with
// escapes, an id that is not a plain string or an integer of at most 15
// digits (the SDK truncates other numbers), params or result of null,
// objects and arrays nested deeper than the SDK accepts.
//
// The raw id, and the params or result of msg, are slices of data.
func DecodePlain(data []byte) (msg jsonrpc.Message, rawID json.RawMessage, ok bool) {
	// Valid first: the walk below then only has to find where each member
	// ends, and a message encoding/json would refuse (trailing data
	// included) is left to the SDK's decoder, which says why.
	if !json.Valid(data) {
		return nil, nil, false
	}
	return DecodeValid(data)
}

// DecodeValid is DecodePlain of data known to be one valid JSON value,
// such as a json.Decoder reads, which is not checked again.
func DecodeValid(data []byte) (msg jsonrpc.Message, rawID json.RawMessage, ok bool) {
	msg, members, ok := decodeValid(data)
	if !ok {
		return nil, nil, false
	}
	return msg, members[1], true
}

// decodeValid is DecodeValid, with the values of the message's members
// jsonrpc, id, method, params and result, as slices of data.
func decodeValid(data []byte) (msg jsonrpc.Message, members [5]json.RawMessage, ok bool) {
	if nestedDeeper(data, sdkMaxDepth) || !memberValues(data, []string{"jsonrpc", "id", "method", "params", "result"}, members[:]) {
		return nil, members, false
	}
	version, id, method, params, result := members[0], members[1], members[2], members[3], members[4]
	if string(version) != `"2.0"` || string(params) == "null" || string(result) == "null" {
		return nil, members, false
	}
	jid, ok := plainID(id)
	if !ok {
		return nil, members, false
	}
	if method == nil {
		if result == nil || !jid.IsValid() {
			return nil, members, false
		}
		return &jsonrpc.Response{ID: jid, Result: result}, members, true
	}
	if result != nil {
		return nil, members, false
	}
	name, ok := methodName(method)
	if !ok {
		return nil, members, false
	}
	return &jsonrpc.Request{ID: jid, Method: name, Params: params}, members, true
}

// skipSpace is the index of the first byte of data at or after i that is
// not JSON white space.
func skipSpace(data []byte, i int) int {
	for i < len(data) {
		switch data[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// stringEnd is the index just past the string that starts at data[i] (a
// quote), in valid JSON.
func stringEnd(data []byte, i int) int {
	for i++; i < len(data); i++ {
		switch data[i] {
		case '\\':
			i++
		case '"':
			return i + 1
		}
	}
	return i
}

// valueEnd is the index just past the value that starts at data[i], in
// valid JSON.
func valueEnd(data []byte, i int) int {
	switch data[i] {
	case '"':
		return stringEnd(data, i)
	case '{', '[':
		depth := 0
		for ; i < len(data); i++ {
			switch data[i] {
			case '"':
				i = stringEnd(data, i) - 1
			case '{', '[':
				depth++
			case '}', ']':
				if depth--; depth == 0 {
					return i + 1
				}
			}
		}
		return i
	}
	for ; i < len(data); i++ { // a number, true, false or null
		switch data[i] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return i
		}
	}
	return i
}

// plainID is the SDK's id for raw when raw is absent, null, a string
// without escapes, or an integer of at most 15 digits (exact as the
// float64 the SDK decodes it into).
func plainID(raw json.RawMessage) (jsonrpc.ID, bool) {
	if raw == nil || string(raw) == "null" {
		return jsonrpc.ID{}, true
	}
	if s, ok := plainString(raw); ok {
		id, err := jsonrpc.MakeID(s)
		return id, err == nil
	}
	digits := raw
	if len(digits) > 0 && digits[0] == '-' {
		digits = digits[1:]
	}
	if len(digits) == 0 || len(digits) > 15 {
		return jsonrpc.ID{}, false
	}
	for _, b := range digits {
		if b < '0' || b > '9' {
			return jsonrpc.ID{}, false
		}
	}
	n, err := strconv.ParseInt(string(raw), 10, 64)
	if err != nil {
		return jsonrpc.ID{}, false
	}
	id, err := jsonrpc.MakeID(float64(n)) // exact: at most 15 digits
	return id, err == nil
}

// plainString is the text of raw when raw is a JSON string of valid UTF-8
// without escapes.
func plainString(raw json.RawMessage) (string, bool) {
	if len(raw) < 2 || raw[0] != '"' || raw[len(raw)-1] != '"' {
		return "", false
	}
	s := raw[1 : len(raw)-1]
	if bytes.IndexByte(s, '\\') >= 0 || bytes.IndexByte(s, '"') >= 0 || !utf8.Valid(s) {
		return "", false
	}
	return string(s), true
}

// methodName is plainString of a request's method, the methods every
// session sends taken from constants rather than allocated per message.
func methodName(raw json.RawMessage) (string, bool) {
	switch string(raw) {
	case `"tools/call"`:
		return "tools/call", true
	case `"tools/list"`:
		return "tools/list", true
	case `"notifications/cancelled"`:
		return "notifications/cancelled", true
	case `"notifications/progress"`:
		return "notifications/progress", true
	case `"ping"`:
		return "ping", true
	}
	return plainString(raw)
}

// sdkMaxDepth is the deepest nesting of objects and arrays the SDK's
// decoder accepts in a message (encoding/json takes ten times as deep).
const sdkMaxDepth = 1000

// nestedDeeper reports whether data nests objects and arrays deeper than
// max, counted as the SDK's decoder counts them: brackets outside
// strings, in one pass.
func nestedDeeper(data []byte, max int) bool {
	if bytes.Count(data, []byte("{"))+bytes.Count(data, []byte("[")) <= max {
		return false // fewer openers than max: no nesting reaches it (a quick count, not a walk)
	}
	depth, inString, escaped := 0, false, false
	for _, b := range data {
		if inString {
			switch {
			case escaped:
				escaped = false
			case b == '\\':
				escaped = true
			case b == '"':
				inString = false
			}
			continue
		}
		switch b {
		case '"':
			inString = true
		case '{', '[':
			if depth++; depth > max {
				return true
			}
		case '}', ']':
			if depth > 0 {
				depth--
			}
		}
	}
	return false
}
