package gateway

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// post sends one raw streamable-HTTP POST; header "" leaves it out.
func post(t *testing.T, url, session, version, body string) (int, string, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b)
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
