package replay

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// A Target opens the transport of one replayed session.
type Target interface {
	// Transport returns a new transport for one session. profile is the
	// profile the trace says the session was served ("" for none); a
	// target fixed to one profile ignores it.
	Transport(ctx context.Context, profile string) (SessionTransport, error)
	// Describe names the server for reports and errors.
	Describe() string
}

// SessionTransport is one session's way to the server.
type SessionTransport struct {
	mcp.Transport
	// Stderr, when not nil, holds what a started server wrote to its
	// stderr; it is added to the error when the session cannot be opened.
	Stderr fmt.Stringer
	// Where names the endpoint, or the profile a command is asked for, in
	// errors.
	Where string
}

// HTTPTarget connects to a streamable HTTP endpoint, sharing one pool of
// connections among the sessions. Make it with NewHTTPTarget.
type HTTPTarget struct {
	endpoint string // with /NAME appended when a profile is fixed
	fixed    bool   // a profile was fixed: sessions' own profiles are ignored
	client   *http.Client
}

// NewHTTPTarget returns a target for the streamable HTTP endpoint (such as
// the gateway's http://HOST:PORT/mcp). A non-empty profile asks for it in
// every session (endpoint/NAME); otherwise each session asks for the
// profile its trace line names. concurrency sizes the pool of idle
// connections kept, as many as sessions run at once.
func NewHTTPTarget(endpoint, profile string, concurrency int) *HTTPTarget {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = concurrency
	return &HTTPTarget{endpoint: withProfile(endpoint, profile), fixed: profile != "", client: &http.Client{Transport: tr}}
}

// Transport implements Target.
func (h *HTTPTarget) Transport(_ context.Context, profile string) (SessionTransport, error) {
	endpoint := h.endpoint
	if !h.fixed {
		endpoint = withProfile(endpoint, profile)
	}
	// No standalone SSE stream: a replayed session only reads the answers
	// to its own requests, and it saves a connection per session.
	t := &mcp.StreamableClientTransport{Endpoint: endpoint, HTTPClient: h.client, DisableStandaloneSSE: true, MaxRetries: -1}
	return SessionTransport{Transport: t, Where: endpoint}, nil
}

// Describe implements Target: the endpoint, with the fixed profile.
func (h *HTTPTarget) Describe() string { return h.endpoint }

// CloseIdleConnections closes the pool's idle connections; call it after
// Run, before stopping a server the caller started.
func (h *HTTPTarget) CloseIdleConnections() { h.client.CloseIdleConnections() }

// withProfile appends /NAME to an endpoint's path: the gateway serves
// profile NAME at /mcp/NAME.
func withProfile(endpoint, profile string) string {
	if profile == "" {
		return endpoint
	}
	u, err := url.Parse(endpoint)
	if err != nil {
		return endpoint
	}
	u.Path = strings.TrimSuffix(u.Path, "/") + "/" + profile
	return u.String()
}

// CommandTarget starts a stdio server command per session, asking for a
// profile by TOOLPROF_PROFILE in its environment. Its stderr is kept and
// shown only when the session fails, so that a hundred sessions' start-up
// notes do not bury the report.
type CommandTarget struct {
	// Command is the program and its arguments; it must not be empty.
	Command []string
	// Profile, when not empty, is asked for in every session instead of
	// the one each trace line names.
	Profile string
}

// Transport implements Target.
func (c CommandTarget) Transport(_ context.Context, profile string) (SessionTransport, error) {
	cmd := exec.Command(c.Command[0], c.Command[1:]...)
	if c.Profile != "" {
		profile = c.Profile
	}
	if profile != "" {
		cmd.Env = append(os.Environ(), "TOOLPROF_PROFILE="+profile)
	}
	errBuf := &limitedBuffer{max: 8 << 10}
	cmd.Stderr = errBuf
	where := "the command"
	if profile != "" {
		where = fmt.Sprintf("the command with TOOLPROF_PROFILE=%s", profile)
	}
	return SessionTransport{Transport: &mcp.CommandTransport{Command: cmd}, Stderr: errBuf, Where: where}, nil
}

// Describe implements Target: the command line.
func (c CommandTarget) Describe() string { return strings.Join(c.Command, " ") }

// limitedBuffer keeps the first max bytes written and discards the rest,
// without failing the writer (a child blocked on a full pipe would hang).
type limitedBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (l *limitedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if room := l.max - l.buf.Len(); room > 0 {
		l.buf.Write(p[:min(room, len(p))])
	}
	return len(p), nil
}

// String returns what was kept, trimmed; the command may still be writing.
func (l *limitedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.TrimSpace(l.buf.String())
}
