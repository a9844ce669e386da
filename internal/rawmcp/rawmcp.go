// Package rawmcp sends MCP messages over streamable HTTP as raw POSTs, for
// tests that need the wire itself (batches, headers, status codes) rather
// than what a client makes of it.
package rawmcp

import (
	"context"
	"io"
	"net/http"
	"strings"
)

// NewPost is a POST of body to url with the headers a streamable-HTTP
// client sends; session and version "" leave the Mcp-Session-Id and
// Mcp-Protocol-Version headers out.
func NewPost(ctx context.Context, url, session, version, body string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json, text/event-stream")
	if session != "" {
		req.Header.Set("Mcp-Session-Id", session)
	}
	if version != "" {
		req.Header.Set("Mcp-Protocol-Version", version)
	}
	return req, nil
}

// Post sends NewPost's request with http.DefaultClient and returns the
// status, the session the answer names and the answer's body, as far as
// it could be read: a test asserts on what arrived.
func Post(ctx context.Context, url, session, version, body string) (status int, sessionID, answer string, err error) {
	req, err := NewPost(ctx, url, session, version, body)
	if err != nil {
		return 0, "", "", err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Mcp-Session-Id"), string(b), nil
}
