package jsonrpcwire

import (
	"bytes"
	"encoding/json"
	"reflect"
	"runtime"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeCases are messages with whether DecodePlain takes them (true) or
// leaves them to the SDK's decoder.
var decodeCases = []struct {
	line  string
	plain bool
}{
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"t","arguments":{"q":"a\"b"}}}`, true},
	{`{"method":"tools/call","params":{},"id":"abc","jsonrpc":"2.0"}`, true},
	{` { "jsonrpc" : "2.0" , "id" : -42 , "method" : "ping" } `, true},
	{`{"jsonrpc":"2.0","method":"notifications/initialized"}`, true},
	{`{"jsonrpc":"2.0","id":null,"method":"notifications/cancelled","params":{"requestId":3}}`, true},
	{`{"jsonrpc":"2.0","id":7,"result":{"action":"accept"}}`, true},
	{`{"jsonrpc":"2.0","id":"s-1","result":{}}`, true},
	{`{"jsonrpc":"2.0","id":999999999999999,"method":"ping"}`, true},
	{`{"jsonrpc":"2.0","id":1,"method":""}`, true},
	{"{\t\"jsonrpc\"\r\n:\"2.0\",\"id\":3,\"method\":\"a\",\"params\":{\"x\":\"}\\\"]{[\",\"y\":[1,-2.5e3,true,null,{}]}\n}", true},
	{`{"id":0,"jsonrpc":"2.0","result":[{"a":"\\"},"]"],"method":"x"}`, false},
	{`{"jsonrpc":"2.0","id":5,"result":17}`, true},
	{`{"jsonrpc":"2.0","id":5,"result":"s"}`, true},

	{`{"jsonrpc":"2.0","id":1,"error":{"code":-1,"message":"no"}}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools/call","ID":2}`, false},
	{`{"jsonrpc":"2.0","id":1,"Method":"tools/call"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"a","method":"b"}`, false},
	{`{"jsonrpc":"2.0","id":1,"id":2,"method":"a"}`, false},
	{`{"jsonrpc":"2.0","\u0069d":1,"method":"a"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"tools\/call"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"\u0074ools/call"}`, false},
	{`{"jsonrpc":"2.0","id":"a\u0062","method":"ping"}`, false},
	{`{"jsonrpc":"1.0","id":1,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0 ","id":1,"method":"ping"}`, false},
	{`{"id":1,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1.5,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1e3,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1234567890123456,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":true,"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":{},"method":"ping"}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":null}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":5}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping","params":null}`, false},
	{`{"jsonrpc":"2.0","id":1,"result":null}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping","result":{}}`, false},
	{`{"jsonrpc":"2.0","result":{}}`, false},
	{`{"jsonrpc":"2.0","id":null,"result":{}}`, false},
	{`{"jsonrpc":"2.0","id":1}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping"} {}`, false},
	{`{"jsonrpc":"2.0","id":1,"method":"ping"`, false},
	{`[{"jsonrpc":"2.0","id":1,"method":"ping"}]`, false},
	{`"2.0"`, false},
	{"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"p\xffing\"}", false},
}

// checkSame fails when DecodePlain takes line but the SDK's decoder reads
// it otherwise (or refuses it).
func checkSame(t *testing.T, line []byte) bool {
	t.Helper()
	got, rawID, ok := DecodePlain(line)
	if json.Valid(line) { // DecodeValid, of what it is given, is DecodePlain
		vgot, vrawID, vok := DecodeValid(line)
		if vok != ok || !reflect.DeepEqual(vgot, got) || !bytes.Equal(vrawID, rawID) {
			t.Fatalf("DecodeValid(%s) = %#v %s %v, DecodePlain %#v %s %v", line, vgot, vrawID, vok, got, rawID, ok)
		}
	}
	if !ok {
		return false
	}
	want, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		t.Fatalf("DecodePlain took %s, which the SDK refuses: %v", line, err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("DecodePlain(%s) = %#v, the SDK's decoder %#v", line, got, want)
	}
	if req, isReq := want.(*jsonrpc.Request); isReq && req.IsCall() && !bytes.Contains(line, rawID) {
		t.Fatalf("DecodePlain(%s): raw id %s is not the line's", line, rawID)
	}
	return true
}

func TestDecodePlainIsTheSDKs(t *testing.T) {
	for _, c := range decodeCases {
		if got := checkSame(t, []byte(c.line)); got != c.plain {
			t.Errorf("DecodePlain took %s: %v, want %v", c.line, got, c.plain)
		}
	}
	// Nesting: the SDK refuses a message deeper than 1000 objects and
	// arrays (the message itself and params count), encoding/json would
	// take it.
	for _, c := range []struct {
		depth int
		plain bool
	}{{1000, true}, {1001, false}, {5000, false}} {
		inner := strings.Repeat("[", c.depth-2) + strings.Repeat("]", c.depth-2)
		line := `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"a":` + inner + `}}`
		if got := checkSame(t, []byte(line)); got != c.plain {
			t.Errorf("DecodePlain took a message %d deep: %v, want %v", c.depth, got, c.plain)
		}
	}
}

// FuzzDecodePlain: whatever DecodePlain takes, the SDK's decoder reads
// the same way.
func FuzzDecodePlain(f *testing.F) {
	for _, c := range decodeCases {
		f.Add([]byte(c.line))
	}
	f.Fuzz(func(t *testing.T, line []byte) { checkSame(t, line) })
}

// TestDecodeOneAllocations: a tools/call request is decoded in about its
// own size, not in the SDK decoder's 32 KiB buffer per value.
func TestDecodeOneAllocations(t *testing.T) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`)
	c := &Conn{}
	const n = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range n {
		msg, errResp := c.decodeOne(line)
		req, ok := msg.(*jsonrpc.Request)
		if !ok || errResp != nil {
			t.Fatalf("decodeOne = %v, %s", msg, errResp)
		}
		c.ids.Restore(req.ID) // answered: its ids are freed
	}
	runtime.ReadMemStats(&after)
	if per := (after.TotalAlloc - before.TotalAlloc) / n; per > 8<<10 {
		t.Errorf("decodeOne allocates %d bytes per tools/call request; want at most 8 KiB", per)
	}
}

// BenchmarkDecodeOne prices decoding one tools/call request line for the
// SDK (plain), against the SDK's own decoder on the same line (sdk).
func BenchmarkDecodeOne(b *testing.B) {
	line := []byte(`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"name":"test_simple_text","arguments":{}}}`)
	b.Run("plain", func(b *testing.B) {
		c := &Conn{}
		b.ReportAllocs()
		for b.Loop() {
			msg, _ := c.decodeOne(line)
			c.ids.Restore(msg.(*jsonrpc.Request).ID)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if _, err := jsonrpc.DecodeMessage(line); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// TestDecodePlainAllocations: a tools/call request and its answer are
// decoded in the few allocations of what DecodePlain returns (the message,
// its id, a request's method), the members being slices of the line:
// nothing per member or token. The bound leaves room for the race
// detector's instrumentation.
func TestDecodePlainAllocations(t *testing.T) {
	const most = 8
	for _, line := range []string{
		`{"jsonrpc":"2.0","id":12,"method":"tools/call","params":{"_meta":{"progressToken":"p"},"name":"test_simple_text","arguments":{"a":[1,2,{"b":"c\"d"}]}}}`,
		`{"jsonrpc":"2.0","id":"s-12","method":"tools/call","params":{"name":"t"}}`,
		`{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}`,
	} {
		b := []byte(line)
		if _, _, ok := DecodePlain(b); !ok {
			t.Fatalf("DecodePlain refused %s", b)
		}
		if n := testing.AllocsPerRun(100, func() { DecodePlain(b) }); n > most {
			t.Errorf("DecodePlain(%s) allocates %v times; want at most %d", b, n, most)
		}
	}
}

// TestNestedDeeper: the depth is counted as the SDK's decoder counts it,
// whether the quick count of openers settles it or the walk must: brackets
// in strings do not nest, and a message exactly max deep is not deeper.
func TestNestedDeeper(t *testing.T) {
	const max = 10
	deep := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	for _, c := range []struct {
		name string
		data string
		want bool
	}{
		{"shallow", `{"a":[1,2]}`, false},
		{"max deep", deep(max), false},
		{"one deeper", deep(max + 1), true},
		{"openers in a string", `{"a":"` + strings.Repeat("[{", max) + `"}`, false},
		{"escaped quote, openers after it in the string", `["\"` + strings.Repeat("[", max) + `"]`, false},
		{"many shallow openers", strings.Repeat("[[]]", max), false},
		{"deep after shallow ones", "[" + strings.Repeat("[]", max) + deep(max) + "]", true},
	} {
		if got := nestedDeeper([]byte(c.data), max); got != c.want {
			t.Errorf("%s: nestedDeeper(%s, %d) = %v, want %v", c.name, c.data, max, got, c.want)
		}
	}
}

// TestMethodName: a method is what plainString makes of it, the common
// ones without an allocation.
func TestMethodName(t *testing.T) {
	for _, c := range []struct {
		raw    string
		common bool
	}{
		{`"tools/call"`, true},
		{`"tools/list"`, true},
		{`"notifications/cancelled"`, true},
		{`"notifications/progress"`, true},
		{`"ping"`, true},
		{`"initialize"`, false},
		{`"tools\/call"`, false},
		{`"tools/call "`, false},
		{`1`, false},
	} {
		name, ok := methodName(json.RawMessage(c.raw))
		wantName, wantOK := plainString(json.RawMessage(c.raw))
		if name != wantName || ok != wantOK {
			t.Errorf("methodName(%s) = %q, %v; plainString: %q, %v", c.raw, name, ok, wantName, wantOK)
		}
		if !c.common {
			continue
		}
		raw := json.RawMessage(c.raw)
		if n := testing.AllocsPerRun(100, func() { methodName(raw) }); n != 0 {
			t.Errorf("methodName(%s) allocates %v times; want none", c.raw, n)
		}
	}
}
