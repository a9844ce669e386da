package gateway

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
)

// TestDecodedBodyHandedOver: a body that carries its decode (DecodedBody)
// is served without being read or decoded again, and a body put in its
// place is decoded afresh. The decode handed over here differs from its
// bytes in its id and protocol version, so every answer shows which the
// gateway read.
func TestDecodedBodyHandedOver(t *testing.T) {
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(everythingCatalog())})
	handler := g.HTTPHandler()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if handed := r.Header.Get("X-Handed-Decode"); handed != "" {
			wire, err := io.ReadAll(r.Body)
			if err != nil {
				t.Error(err)
			}
			d, err := jsonrpcwire.DecodeBody([]byte(handed))
			if err != nil {
				t.Errorf("DecodeBody(%s): %v", handed, err)
			}
			d.Data = wire // the bytes served, which the decode disagrees with
			r.Body = DecodedBody(d)
			if r.Header.Get("X-Replace-Body") != "" {
				r.Body = io.NopCloser(bytes.NewReader(wire))
			}
		}
		handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	body := func(id, v string) string {
		return `{"jsonrpc":"2.0","id":` + id + `,"method":"tools/list","params":{"_meta":{"io.modelcontextprotocol/protocolVersion":"` + v + `","io.modelcontextprotocol/clientCapabilities":{}}}}`
	}
	for _, tt := range []struct {
		name, wire, handed, replace string
		status                      int
		want                        string
	}{
		{"decode says 2025-11-25", body("7", "2026-07-28"), body("8", "2025-11-25"), "", 400, `"id":8,"error":{"code":-32020`},
		{"decode of its bytes", body("7", "2026-07-28"), body("7", "2026-07-28"), "", 200, `"id":7,"result":{`},
		{"none handed", body("7", "2025-11-25"), "", "", 400, `"id":7,"error":{"code":-32020`},
		{"body replaced", body("7", "2025-11-25"), body("8", "2026-07-28"), "yes", 400, `"id":7,"error":{"code":-32020`},
	} {
		status, got := rawPost(t, srv.URL+"/mcp", tt.wire, map[string]string{
			protocolHeader: "2026-07-28", "Mcp-Method": "tools/list", "X-Handed-Decode": tt.handed, "X-Replace-Body": tt.replace,
		})
		if status != tt.status || !strings.Contains(got, tt.want) {
			t.Errorf("%s: %d %s, want %d with %s", tt.name, status, got, tt.status, tt.want)
		}
	}
}

// TestBodyProtocolTakesOneJSONMessage: bodyProtocol decodes a body that is
// one JSON object with JSON's white space around it, and nothing else.
func TestBodyProtocolTakesOneJSONMessage(t *testing.T) {
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	for _, tt := range []struct {
		name, body string
		decoded    bool
	}{
		{"plain", ping, true},
		{"JSON white space", " \t\r\n" + ping + "\r\n", true},
		{"trailing vertical tab", ping + "\v", false},
		{"trailing no-break space", ping + "\u00a0", false},
		{"leading no-break space", "\u00a0" + ping, false},
		{"batch", "[" + ping + "]", false},
	} {
		d := bodyProtocol([]byte(tt.body))
		if (d != nil) != tt.decoded || (d != nil && d.Plain == nil) {
			t.Errorf("%s: bodyProtocol(%q) = %+v, want decoded %v (with its plain message)", tt.name, tt.body, d, tt.decoded)
		}
	}
}

// TestHandedBodyOverTheLimit: a body handed over was read under the
// caller's limit; one over the gateway's own is refused as a read one is.
func TestHandedBodyOverTheLimit(t *testing.T) {
	const ping = `{"jsonrpc":"2.0","id":1,"method":"ping"}`
	d, err := jsonrpcwire.DecodeBody([]byte(ping))
	if err != nil {
		t.Fatal(err)
	}
	g := &Gateway{}
	for _, tt := range []struct {
		limit  int64
		status int
	}{{int64(len(ping)), http.StatusOK}, {int64(len(ping)) - 1, http.StatusRequestEntityTooLarge}} {
		r := httptest.NewRequest(http.MethodPost, "/mcp", DecodedBody(d))
		w := httptest.NewRecorder()
		_, _, ok := g.routeProtocol(w, r, tt.limit)
		if status := w.Result().StatusCode; ok != (tt.status == http.StatusOK) || status != tt.status {
			t.Errorf("limit %d: ok %v, status %d; want %d", tt.limit, ok, status, tt.status)
		}
		if want := fmt.Sprintf("request body exceeds %d bytes\n", tt.limit); tt.status != http.StatusOK && w.Body.String() != want {
			t.Errorf("limit %d: %q, want %q", tt.limit, w.Body.String(), want)
		}
	}
}
