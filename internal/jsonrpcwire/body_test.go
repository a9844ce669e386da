package jsonrpcwire

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DecodeBody reads every message as the SDK's decoder does, whether it
// takes the plain walk or the SDK's decoder: the ids and methods are the
// bytes UnmarshalAsSDK reads (white space and all), the version the one
// in the params the SDK serves.
func TestDecodeBody(t *testing.T) {
	for _, tt := range []struct {
		name    string
		body    string
		plain   bool
		version string
		odd     bool
		err     bool
	}{
		{name: "plain call", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"x","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"}}}`, plain: true, version: "2026-07-28"},
		{name: "plain, spaced", body: " { \"jsonrpc\" : \"2.0\" , \"id\" : \"a b\" , \"method\" : \"ping\" , \"params\" : { \"_meta\" : { \"io.modelcontextprotocol/protocolVersion\" : \"v\" } } } \r\n", plain: true, version: "v"},
		{name: "plain notification", body: `{"jsonrpc":"2.0","method":"notifications/x"}`, plain: true},
		{name: "plain response", body: `{"jsonrpc":"2.0","id":1,"result":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v"}}}`, plain: true},
		{name: "version not a string", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":7}}}`, plain: true, version: "7"},
		{name: "Params is not params", body: `{"jsonrpc":"2.0","id":1,"method":"ping","Params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"v"}}}`},
		{name: "last params wins", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"a"}},"params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"b"}}}`, version: "b"},
		{name: "_Meta is not _meta", body: `{"jsonrpc":"2.0","id":1,"method":"ping","params":{"_Meta":{"io.modelcontextprotocol/protocolVersion":"v"}}}`, plain: true},
		{name: "ID beside id", body: `{"jsonrpc":"2.0","id":1,"ID":2,"method":"ping"}`},
		{name: "id escaped", body: `{"jsonrpc":"2.0","\u0069d":1.5,"method":"ping"}`},
		{name: "large id", body: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`},
		{name: "batch", body: ` [{"id": 1 ,"method":"initialize"},{"method":"x","Method":"y"}]`},
		{name: "batch with a member not an object", body: `[1,{"id":1}]`, odd: true},
		{name: "not an object", body: ` 12 `, err: true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			b, err := DecodeBody([]byte(tt.body))
			if (err != nil) != tt.err {
				t.Fatalf("DecodeBody(%s): error %v, want one: %v", tt.body, err, tt.err)
			}
			if err != nil {
				return
			}
			if (b.Plain != nil) != tt.plain || b.Version != tt.version || b.Odd != tt.odd {
				t.Errorf("DecodeBody(%s): plain %v, version %q, odd %v; want %v, %q, %v", tt.body, b.Plain != nil, b.Version, b.Odd, tt.plain, tt.version, tt.odd)
			}
			if string(b.Data) != tt.body {
				t.Errorf("DecodeBody(%s).Data = %s", tt.body, b.Data)
			}
			var want []BodyMessage
			if b.Batch {
				if UnmarshalAsSDK([]byte(tt.body), &want) != nil {
					want = nil
				}
			} else {
				var m BodyMessage
				if err := UnmarshalAsSDK([]byte(tt.body), &m); err != nil {
					t.Fatal(err)
				}
				want = []BodyMessage{m}
				if !reflect.DeepEqual(b.ID(), m.ID) {
					t.Errorf("DecodeBody(%s).ID() = %s, want %s", tt.body, b.ID(), m.ID)
				}
			}
			if !reflect.DeepEqual(b.Msgs, want) {
				t.Errorf("DecodeBody(%s).Msgs = %s, want %s", tt.body, show(b.Msgs), show(want))
			}
		})
	}
}

func show(msgs []BodyMessage) string {
	b, _ := json.Marshal(msgs)
	return string(b)
}

// metaVersion reads the version as the map the SDK decodes _meta into
// would hold it, under the key the SDK names.
func TestMetaVersionReadsTheMap(t *testing.T) {
	const key = `"io.modelcontextprotocol/protocolVersion"`
	for _, params := range []string{
		``,
		`{}`,
		`{"_meta":null}`,
		`{"_meta":"x"}`,
		`{"_meta":[1]}`,
		`{"_meta":{}}`,
		`{"_meta":{` + key + `:"v"}}`,
		`{"_meta":{` + key + `:null}}`,
		`{"_meta":{` + key + `:7}}`,
		`{"_meta":{` + key + `:{"a":1}}}`,
		`{"_meta":{` + key + `:"a",` + key + `:"b"}}`,
		`{"_meta":{"io.modelcontextprotocol\/protocolVersion":"escaped"}}`,
		`{"_meta":{"IO.modelcontextprotocol/protocolVersion":"case"}}`,
		`{"_meta":{` + key + `:"a"},"_meta":{"x":1}}`,
		`{"_Meta":{` + key + `:"v"}}`,
		`{"_meta":{` + key + `:"\u0076"}}`,
	} {
		// The map reading, as the gateway read it before.
		var want string
		var p struct {
			Meta map[string]json.RawMessage `json:"_meta"`
		}
		if params != "" && UnmarshalAsSDK([]byte(params), &p) == nil {
			if raw, ok := p.Meta[mcp.MetaKeyProtocolVersion]; ok {
				if json.Unmarshal(raw, &want) != nil {
					want = string(raw)
				}
			}
		}
		if got := metaVersion(json.RawMessage(params)); got != want {
			t.Errorf("metaVersion(%s) = %q, the map reads %q", params, got, want)
		}
	}
}
