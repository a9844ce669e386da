package gateway

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
)

// BenchmarkRouteProtocol prices what the gateway reads of a POST before
// it picks the handler (routeProtocol), on a 2026-07-28 tools/call of a few
// hundred bytes: "decode" reads and decodes the body, "handed" is given
// its decode (DecodedBody), as cmd/server's handler does.
func BenchmarkRouteProtocol(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search_issues","arguments":{"query":"label:bug state:open sort:updated","per_page":50,"repo":"toolprof/toolprof"},"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","progressToken":"p-42"}}}`)
	g := &Gateway{}
	route := func(b *testing.B, newBody func() io.ReadCloser) {
		r := httptest.NewRequest(http.MethodPost, "/mcp", nil)
		w := httptest.NewRecorder()
		b.ReportAllocs()
		for b.Loop() {
			r.Header.Set(protocolHeader, protocolSessionless)
			r.Body = newBody()
			if sessionless, msg, ok := g.routeProtocol(w, r, 1<<20); !ok || !sessionless || msg == nil {
				b.Fatal(sessionless, msg, ok)
			}
		}
	}
	b.Run("decode", func(b *testing.B) {
		route(b, func() io.ReadCloser { return io.NopCloser(bytes.NewReader(body)) })
	})
	b.Run("handed", func(b *testing.B) {
		d, err := jsonrpcwire.DecodeBody(body)
		if err != nil {
			b.Fatal(err)
		}
		route(b, func() io.ReadCloser { return DecodedBody(d) })
	})
}
