package jsonrpcwire

import (
	"reflect"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

var toolResultCases = []struct {
	result string
	plain  bool
}{
	{`{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`, true},
	{`{"content":[{"type":"text","text":"boom"}],"isError":true}`, true},
	{` { "isError" : false , "content" : [ { "text" : "a" , "type" : "text" } , {"type":"text","text":""} ] } `, true},
	{`{"content":[]}`, true},
	{`{"content":[ ]}`, true},
	{"{\"content\":[\n{\"type\":\"text\",\"text\":\"a\"}\t,{\"type\":\"text\",\"text\":\"b\"}\r\n]}", true},
	{`{"content":[{"type":"text","text":"{\"a\":[1,\"b\\\\c\"]}\n\t\r\b\f\/"}]}`, true},
	{"{\"content\":[{\"type\":\"text\",\"text\":\"caf\u00e9 \U0001F600\"}]}", true},
	// Left to the SDK.
	{`{"content":[{"type":"text","text":"\u00e9"}]}`, false},
	{`{"content":[{"type":"text","text":"\ud800"}]}`, false},
	{"{\"content\":[{\"type\":\"text\",\"text\":\"\xff\"}]}", false},
	{`{"content":[{"type":"text","text":"a","annotations":{"priority":1}}]}`, false},
	{`{"content":[{"type":"text","text":"a","_meta":{}}]}`, false},
	{`{"content":[{"type":"image","data":"AA==","mimeType":"image/png"}]}`, false},
	{`{"content":[{"type":"text"}]}`, false},
	{`{"content":[{"Type":"text","text":"a"}]}`, false},
	{`{"content":[{"type":"text","text":"a","text":"b"}]}`, false},
	{`{"content":[{"type":"text","text":1}]}`, false},
	{`{"content":[null]}`, false},
	{`{"content":[1,{"type":"text","text":"a"}]}`, false},
	{`{"content":[["x"]]}`, false},
	{`{"content":null}`, false},
	{`{"content":{}}`, false},
	{`{}`, false},
	{`{"content":[],"isError":null}`, false},
	{`{"content":[],"isError":"true"}`, false},
	{`{"content":[],"structuredContent":{}}`, false},
	{`{"content":[],"_meta":{"k":1}}`, false},
	{`{"content":[],"resultType":"input_required"}`, false},
	{`{"cont\u0065nt":[]}`, false},
	{`{"content":[]} x`, false},
	{`[]`, false},
	{`null`, false},
	{``, false},
}

// checkSameResult fails when PlainToolResult takes data but the SDK's
// decoding reads it otherwise (or refuses it).
func checkSameResult(t *testing.T, data []byte) bool {
	t.Helper()
	got, ok := PlainToolResult(data)
	if !ok {
		return false
	}
	want := new(mcp.CallToolResult)
	if err := want.UnmarshalJSON(data); err != nil {
		t.Fatalf("PlainToolResult took %s, which the SDK refuses: %v", data, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("PlainToolResult(%s) = %#v, the SDK's decoding %#v", data, got, want)
	}
	return true
}

func TestPlainToolResultIsTheSDKs(t *testing.T) {
	for _, c := range toolResultCases {
		if got := checkSameResult(t, []byte(c.result)); got != c.plain {
			t.Errorf("PlainToolResult took %s: %v, want %v", c.result, got, c.plain)
		}
	}
}

// FuzzPlainToolResult: whatever PlainToolResult takes, the SDK's decoding
// reads the same way.
func FuzzPlainToolResult(f *testing.F) {
	for _, c := range toolResultCases {
		f.Add([]byte(c.result))
	}
	f.Fuzz(func(t *testing.T, data []byte) { checkSameResult(t, data) })
}

// TestPlainToolResultAllocations: a short text result is decoded in about
// its own size, not in the SDK decoder's 32 KiB buffer.
func TestPlainToolResultAllocations(t *testing.T) {
	data := []byte(`{"content":[{"type":"text","text":"This is a simple text response for testing."}]}`)
	var res *mcp.CallToolResult
	bytes := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			res, _ = PlainToolResult(data)
		}
	}).AllocedBytesPerOp()
	if res == nil {
		t.Fatal("not taken")
	}
	if bytes > 4<<10 {
		t.Errorf("PlainToolResult allocates %d bytes for a %d-byte result, want under 4 KiB", bytes, len(data))
	}
}
