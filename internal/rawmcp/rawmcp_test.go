package rawmcp

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestPost: a POST carries the body and a streamable-HTTP client's
// headers, the session and version ones only when given, and returns the
// status, the session header and the body of the answer.
func TestPost(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		w.Header().Set("Mcp-Session-Id", "s-answer")
		w.WriteHeader(http.StatusAccepted)
		io.WriteString(w, r.Method+" "+r.Header.Get("Content-Type")+" "+r.Header.Get("Accept")+
			" ["+r.Header.Get("Mcp-Session-Id")+"] ["+r.Header.Get("Mcp-Protocol-Version")+"] "+string(b))
	}))
	defer srv.Close()
	cases := []struct {
		name, session, version, want string
	}{
		{"no session, no version", "", "", "POST application/json application/json, text/event-stream [] [] {}"},
		{"both", "s1", "2025-11-25", "POST application/json application/json, text/event-stream [s1] [2025-11-25] {}"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			status, id, answer, err := Post(context.Background(), srv.URL, c.session, c.version, "{}")
			if err != nil || status != http.StatusAccepted || id != "s-answer" || answer != c.want {
				t.Errorf("Post = %d, %q, %q, %v; want 202, s-answer, %q", status, id, answer, err, c.want)
			}
		})
	}
}
