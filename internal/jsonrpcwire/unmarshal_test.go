package jsonrpcwire

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

func TestUnmarshalAsSDK(t *testing.T) {
	for _, tt := range []struct {
		name       string
		data       string
		id, method string // as read; "error": refused
	}{
		{"exact names", `{"jsonrpc":"2.0","id":1,"method":"m"}`, "1", "m"},
		{"last of several wins", `{"jsonrpc":"2.0","id":1,"method":"a","id":2,"method":"b"}`, "2", "b"},
		{"case variant after", `{"jsonrpc":"2.0","id":1,"method":"m","ID":2,"Method":"x"}`, "1", "m"},
		{"case variant alone", `{"jsonrpc":"2.0","ID":2,"Method":"x"}`, "", ""},
		{"first value only", `{"id":1,"method":"m"} {"id":2}`, "1", "m"},
		{"not JSON", `{"id":`, "error", "error"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			var m struct {
				ID     json.RawMessage `json:"id"`
				Method string          `json:"method"`
			}
			id, method := "error", "error"
			if err := UnmarshalAsSDK([]byte(tt.data), &m); err == nil {
				id, method = string(m.ID), m.Method
			}
			if id != tt.id || method != tt.method {
				t.Errorf("UnmarshalAsSDK(%s) read id %q, method %q; want %q, %q", tt.data, id, method, tt.id, tt.method)
			}
			// The SDK's own reading, where it reads a request.
			msg, err := jsonrpc.DecodeMessage([]byte(tt.data))
			if req, ok := msg.(*jsonrpc.Request); err == nil && ok && req.Method != tt.method {
				t.Errorf("the SDK reads method %q of %s; the table says %q", req.Method, tt.data, tt.method)
			}
		})
	}
}
