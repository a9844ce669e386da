package jsonrpcwire

import (
	"bufio"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestIDsRoundTrip(t *testing.T) {
	var ids IDs
	for _, raw := range []string{"1.5", "1e30", "9007199254740993", "-0", `"x"`, `"a\u0062"`, "7"} {
		safe := ids.Map(json.RawMessage(raw))
		if again := ids.Map(json.RawMessage(raw)); again != safe {
			t.Errorf("%s in flight twice: safe ids %v and %v, want the same (the SDK refuses the duplicate)", raw, safe.Raw(), again.Raw())
		}
		if got, ok := ids.Lookup(json.RawMessage(raw)); !ok || got != safe {
			t.Errorf("Lookup(%s) = %v, %v; want %v", raw, got.Raw(), ok, safe.Raw())
		}
		resp := &jsonrpc.Response{ID: safe, Result: json.RawMessage(`{}`)}
		b, err := ids.Encode(resp)
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"jsonrpc":"2.0","id":` + raw + `,"result":{}}`; string(b) != want {
			t.Errorf("encoded %s, want %s", b, want)
		}
		if _, ok := ids.Lookup(json.RawMessage(raw)); ok {
			t.Errorf("%s still in flight after its answer", raw)
		}
	}
	if n := ids.Len(); n != 0 {
		t.Errorf("%d ids left in flight, want 0", n)
	}
	// "a\u0062" and "ab" are one id.
	s := ids.Map(json.RawMessage(`"ab"`))
	if got, ok := ids.Lookup(json.RawMessage(`"a\u0062"`)); !ok || got != s {
		t.Errorf(`"a\u0062" not found as "ab"`)
	}
}

func TestReadLine(t *testing.T) {
	const limit = 8
	tests := []struct {
		in   string
		want []string // "!" for errTooLong
	}{
		{"a\nbb\r\n", []string{"a", "bb"}},
		{"12345678\n123456789\nok\n", []string{"12345678", "!", "ok"}},
		{strings.Repeat("x", 10000) + "\nok", []string{"!", "ok"}},
		{"last", []string{"last"}},
	}
	for _, tt := range tests {
		r := bufio.NewReaderSize(strings.NewReader(tt.in), 16)
		var got []string
		for {
			line, err := readLine(r, limit)
			if errors.Is(err, errTooLong) {
				got = append(got, "!")
				if errors.Is(err, io.EOF) {
					break
				}
				continue
			}
			if len(line) > 0 {
				got = append(got, string(line))
			}
			if err != nil {
				break
			}
		}
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("lines of %.20q: %q, want %q", tt.in, got, tt.want)
		}
	}
}

// TestDecodeOneReadsIDAsTheSDK: a message the plain decoder leaves to the
// SDK's is answered, and its span named, under the id the SDK reads: a
// member differing from "id" only in case is not the id (encoding/json
// would take it, the last of the two winning).
func TestDecodeOneReadsIDAsTheSDK(t *testing.T) {
	for _, tt := range []struct {
		name, line, wantID string
	}{
		{"ID after id", `{"jsonrpc":"2.0","id":1,"ID":2,"method":"tools/call","params":{"name":"x"}}`, "1"},
		{"Id before id", `{"jsonrpc":"2.0","Id":"b","id":"a","method":"ping"}`, `"a"`},
		{"escaped name", `{"jsonrpc":"2.0","\u0069d":3,"method":"ping"}`, "3"},
	} {
		var c Conn
		msg, errLine := c.decodeOne([]byte(tt.line))
		req, ok := msg.(*jsonrpc.Request)
		if errLine != nil || !ok {
			t.Errorf("%s: %v, %s; want a request", tt.name, msg, errLine)
			continue
		}
		want := tt.wantID
		if want[0] == '"' {
			want = want[1 : len(want)-1]
		}
		extra, _ := req.Extra.(*mcp.RequestExtra)
		if got := RequestID(extra); got != want {
			t.Errorf("%s: span id %q, want %q", tt.name, got, want)
		}
		b, err := c.ids.Encode(&jsonrpc.Response{ID: req.ID, Result: json.RawMessage(`{}`)})
		if err != nil {
			t.Fatal(err)
		}
		if w := `{"jsonrpc":"2.0","id":` + tt.wantID + `,"result":{}}`; string(b) != w {
			t.Errorf("%s: answered %s, want %s", tt.name, b, w)
		}
	}
}
