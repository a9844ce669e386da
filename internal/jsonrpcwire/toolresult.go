package jsonrpcwire

import (
	"bytes"
	"encoding/json"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// PlainToolResult decodes a tools/call result of the plain shape most
// tools answer, text content and an isError, into what
// mcp.CallToolResult's own decoding makes of it. That decoding goes
// through the SDK's decoder, whose 32 KiB buffer per value is most of
// what a relayed call allocates; this one allocates about the result's
// size.
//
// ok is false for anything else, which the caller decodes with the SDK:
// members other than content and isError, content items with members
// other than type and text or a type other than text, a member named
// twice or with an escape in its name, an isError that is not a boolean,
// a text with a \u escape or invalid UTF-8, a result nested deeper than
// the SDK accepts.
func PlainToolResult(data []byte) (_ *mcp.CallToolResult, ok bool) {
	if nestedDeeper(data, sdkMaxDepth) {
		return nil, false
	}
	top, ok := Members(data, "content", "isError")
	if !ok || top[0] == nil {
		return nil, false
	}
	res := &mcp.CallToolResult{}
	switch string(top[1]) {
	case "", "false":
	case "true":
		res.IsError = true
	default:
		return nil, false
	}
	items, ok := elements(top[0]) // valid: a part of data
	if !ok {
		return nil, false
	}
	res.Content = make([]mcp.Content, 0, len(items))
	var m [2]json.RawMessage
	for _, item := range items {
		m = [2]json.RawMessage{}
		if !memberValues(item, []string{"type", "text"}, m[:]) || string(m[0]) != `"text"` || m[1] == nil {
			return nil, false
		}
		text, ok := textString(m[1])
		if !ok {
			return nil, false
		}
		res.Content = append(res.Content, &mcp.TextContent{Text: text})
	}
	return res, true
}

// textString is the text of raw, a JSON string of valid UTF-8 whose
// escapes, if any, are the one-character ones (\" \\ \/ \b \f \n \r \t),
// which every decoder reads alike.
func textString(raw json.RawMessage) (string, bool) {
	if s, ok := plainString(raw); ok {
		return s, true
	}
	if len(raw) < 2 || raw[0] != '"' || !utf8.Valid(raw) || bytes.Contains(raw, []byte(`\u`)) {
		return "", false
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return "", false
	}
	return s, true
}
