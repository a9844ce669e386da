package gateway

import (
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/rawmcp"
)

// post sends one raw streamable-HTTP POST; header "" leaves it out.
func post(t *testing.T, url, session, version, body string) (int, string, string) {
	t.Helper()
	status, id, answer, err := rawmcp.Post(context.Background(), url, session, version, body)
	if err != nil {
		t.Fatal(err)
	}
	return status, id, answer
}

// Over HTTP a batch is judged by the version the session negotiated, not
// by the Mcp-Protocol-Version header, which the SDK defaults to 2025-03-26
// when a request leaves it out.
func TestHTTPBatchJudgedBySessionVersion(t *testing.T) {
	const batch = `[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`
	tests := []struct {
		negotiated, header string
		refused            bool
	}{
		{"2025-06-18", "", true},
		{"2025-06-18", "2025-03-26", true}, // a header that lies
		{"2025-11-25", "", true},
		{"2025-03-26", "", false},
		{"2025-03-26", "2025-03-26", false},
	}
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(everythingCatalog())})
	srv := httptest.NewServer(g.HTTPHandler())
	defer srv.Close()
	for _, tt := range tests {
		t.Run(tt.negotiated+" header "+tt.header, func(t *testing.T) {
			url := srv.URL + "/mcp"
			_, session, body := post(t, url, "", "", `{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"`+tt.negotiated+`","capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`)
			if session == "" || !strings.Contains(body, tt.negotiated) {
				t.Fatalf("initialize: session %q, %s", session, body)
			}
			post(t, url, session, tt.negotiated, `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
			status, _, body := post(t, url, session, tt.header, batch)
			var e struct {
				ID    json.RawMessage `json:"id"`
				Error struct {
					Code    int64  `json:"code"`
					Message string `json:"message"`
				} `json:"error"`
			}
			json.Unmarshal([]byte(body), &e)
			refused := status == http.StatusBadRequest && e.Error.Code == -32600 && string(e.ID) == "null" && strings.Contains(e.Error.Message, tt.negotiated)
			if refused != tt.refused {
				t.Errorf("batch: %d %s; want refused %v (-32600 naming %s)", status, body, tt.refused, tt.negotiated)
			}
			if !tt.refused && (status != http.StatusOK || !strings.Contains(body, `"id":3`)) {
				t.Errorf("batch on %s: %d %s, want both pings answered", tt.negotiated, status, body)
			}
		})
	}
}
