package main

import (
	"context"
	"fmt"
	"io"
	nethttp "net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
)

// The one decode of a POST body gives each check what the SDK reads of
// it: a member differing in case is not id or method, the last of several
// wins, and a batch member neither an object nor null leaves the batch to
// the SDK and to the session cap, which then fails closed.
func TestInspectBody(t *testing.T) {
	for _, c := range []struct {
		name string
		body string
		code int    // of the refusal, 0: served
		want string // in the refusal
		// initializeID
		initID    string
		initBatch bool
		mayOpen   bool
		// requestID
		reqID string
	}{
		{name: "request", body: `{"jsonrpc":"2.0","id":7,"method":"tools/call"}`, reqID: "7"},
		{name: "initialize", body: `{"jsonrpc":"2.0","id":"a","method":"initialize"}`, initID: `"a"`, mayOpen: true},
		{name: "ID beside id is not the id", body: `{"jsonrpc":"2.0","id":1,"ID":1.5,"method":"ping"}`, reqID: "1"},
		{name: "Id after a fractional id", body: `{"jsonrpc":"2.0","id":1.5,"Id":2,"method":"ping"}`, code: codeInvalidRequest, want: "id 1.5"},
		{name: "id escaped", body: `{"jsonrpc":"2.0","\u0069d":1.5,"method":"ping"}`, code: codeInvalidRequest, want: "id 1.5"},
		{name: "duplicate id, last wins", body: `{"id":1,"id":-0,"method":"ping"}`, code: codeInvalidRequest, want: "id -0"},
		{name: "METHOD is not the method", body: `{"id":3,"METHOD":"initialize"}`},
		{name: "Method after initialize", body: `{"jsonrpc":"2.0","id":3,"method":"initialize","Method":"ping"}`, initID: "3", mayOpen: true},
		{name: "duplicate method, last wins", body: `{"jsonrpc":"2.0","id":3,"method":"ping","method":"initialize"}`, initID: "3", mayOpen: true},
		{name: "Method beside a request", body: `{"jsonrpc":"2.0","id":5,"method":"tools/call","Method":"initialize"}`, reqID: "5"},
		{name: "id past 2^53", body: `{"jsonrpc":"2.0","id":9007199254740993,"method":"ping"}`, code: codeInvalidRequest, want: "id 9007199254740993"},
		{name: "id 2^53", body: `{"jsonrpc":"2.0","id":-9007199254740992,"method":"ping"}`, reqID: "-9007199254740992"},
		{name: "largest int64 id", body: `{"jsonrpc":"2.0","id":9223372036854775807,"method":"ping"}`, code: codeInvalidRequest, want: "id 9223372036854775807"},
		{name: "id 2^62, exact", body: `{"jsonrpc":"2.0","id":4611686018427387904,"method":"ping"}`, reqID: "4611686018427387904"},
		{name: "method escaped", body: `{"id":3,"method":"initi\u0061lize"}`, initID: "3", mayOpen: true},
		{name: "method not a string", body: `{"id":3,"method":["initialize"]}`, mayOpen: true},
		{name: "method null", body: `{"id":3,"method":null}`},
		{name: "notification", body: `{"jsonrpc":"2.0","method":"notifications/x"}`},
		{name: "null id", body: `{"jsonrpc":"2.0","id":null,"method":"ping"}`},
		{name: "batch", body: ` [{"method":"notifications/x"},{"id":4,"method":"initialize"}]`, initID: "4", initBatch: true, mayOpen: true},
		{name: "batch, method not a string", body: `[{"id":4,"method":"ping"},{"method":1}]`, initBatch: true, mayOpen: true},
		{name: "batch without initialize", body: `[{"id":4,"method":"ping"}]`, initBatch: true},
		{name: "batch, fractional id", body: `[{"id":4,"method":"ping"},{"id":4.5}]`, code: codeInvalidRequest, want: "id 4.5"},
		{name: "batch with null", body: `[null,{"id":1e3}]`, code: codeInvalidRequest, want: "id 1e3"},
		{name: "batch with a member not an object", body: `[1,{"id":1.5,"method":"initialize"}]`, initBatch: true, mayOpen: true},
		{name: "empty batch", body: `[]`, initBatch: true},
		{name: "two values", body: `{"id":1}{"id":2}`, code: codeParseError, want: "(byte 8 on)"},
		{name: "not JSON", body: `{"id":`, code: codeParseError, want: "not JSON"},
		{name: "empty", body: ``, code: codeParseError, want: "not JSON"},
		{name: "number", body: ` 12 `, code: codeInvalidRequest, want: "JSON number"},
		{name: "trailing white space", body: "{\"id\":1,\"method\":\"ping\"}\r\n\t ", reqID: "1"},
	} {
		pb, code, msg := inspectBody([]byte(c.body))
		if code != c.code || !strings.Contains(msg, c.want) {
			t.Errorf("%s: refusal %d %q, want %d saying %q", c.name, code, msg, c.code, c.want)
			continue
		}
		if code != 0 {
			if pb != nil {
				t.Errorf("%s: refused, yet decoded", c.name)
			}
			continue
		}
		id, batch, ok := initializeID(pb)
		if ok != c.mayOpen || batch != c.initBatch || (ok && string(id) != c.initID) {
			t.Errorf("%s: initializeID = %s, %v, %v; want %s, %v, %v", c.name, id, batch, ok, c.initID, c.initBatch, c.mayOpen)
		}
		rid, ok := requestID(pb)
		if ok != (c.reqID != "") || string(rid) != c.reqID {
			t.Errorf("%s: requestID = %s, %v; want %q", c.name, rid, ok, c.reqID)
		}
	}
}

// The handler hands its decode of a POST body to the gateway with the
// body (gateway.DecodedBody), so the gateway serves it without decoding
// it again; a handler between the two that swaps the body for another
// swaps the decode out too, and the gateway checks the body it gets:
// here one whose protocol version disagrees with the header.
func TestBodyDecodedOnce(t *testing.T) {
	cat := &catalog.Catalog{Tools: []*mcp.Tool{{Name: "t", InputSchema: map[string]any{"type": "object"}}}}
	g, err := gateway.New(context.Background(), gateway.Options{Upstream: gateway.NewCatalogUpstream(cat)})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	body := func(v string) string {
		return `{"jsonrpc":"2.0","id":7,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	inner := g.HTTPHandler()
	between := nethttp.HandlerFunc(func(w nethttp.ResponseWriter, r *nethttp.Request) {
		if got := fmt.Sprintf("%T", r.Body); got != "*gateway.decodedBody" {
			t.Errorf("the body passed on is a %s, not one that carries its decode", got)
		}
		if r.Header.Get("X-Swap") != "" {
			r.Body = io.NopCloser(strings.NewReader(body("2025-11-25")))
		}
		inner.ServeHTTP(w, r)
	})
	hard := &hardening{maxBodyBytes: defaultMaxBodyBytes}
	srv := httptest.NewServer(hard.handler(between))
	defer srv.Close()
	for _, tt := range []struct {
		swap   string
		status int
		want   string
	}{
		{"", nethttp.StatusOK, `"id":7,"result":{`},
		{"yes", nethttp.StatusBadRequest, `"id":7,"error":{"code":-32020`},
	} {
		status, _, got := rawPost(t, srv.URL+"/mcp", strings.NewReader(body("2026-07-28")), -1,
			map[string]string{"Mcp-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/list", "X-Swap": tt.swap})
		if status != tt.status || !strings.Contains(got, tt.want) {
			t.Errorf("swap %q: %d %s; want %d with %s", tt.swap, status, got, tt.status, tt.want)
		}
	}
}
