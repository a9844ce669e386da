package main

// Hardening of the HTTP endpoint and of calls: an optional bearer token read
// from a file (--auth-token-file), a request body limit (--max-body-bytes)
// and read timeout (--read-timeout, body.go), a cap on connections
// (--max-connections, conns.go) and a keep-alive idle timeout
// (--idle-conn-timeout), the browser origins served (--allow-origin), the
// per-call timeout (--call-timeout) and the reload of the profiles file on
// change (reload.go). The gateway's handler refuses a foreign Host (DNS
// rebinding) and Origin on every path, and --http binds loopback unless
// --allow-remote, which needs a token check or an explicit --no-auth.

import (
	"crypto/subtle"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
)

// Defaults of the hardening flags.
const (
	defaultMaxBodyBytes    = mcp.DefaultMaxRequestBodyBytes
	defaultCallTimeout     = 60 * time.Second
	defaultReadTimeout     = 60 * time.Second
	defaultIdleConnTimeout = 60 * time.Second
	defaultMaxConnections  = 1024
	// Each open session holds a few KB and two goroutines for up to the
	// idle timeout (30 min).
	defaultMaxSessions = 1000
)

// authRealm is the realm the 401 challenge names.
const authRealm = "toolprof"

// hardening is the part of the command line this file reads.
type hardening struct {
	tokenFile       string
	token           []byte // read from tokenFile; never logged
	maxBodyBytes    int64
	callTimeout     time.Duration
	readTimeout     time.Duration
	idleConnTimeout time.Duration
	maxConnections  int
	maxSessions     int
	origins         originList
	// openSessions counts the gateway's sessions for --max-sessions (set
	// by serveHTTP).
	openSessions func() int
	// onNewSession runs when an HTTP request opens a session (set by run:
	// the profiles reload).
	onNewSession func()
}

// originList is --allow-origin: repeatable, each value a comma-separated list.
type originList []string

func (o *originList) String() string { return strings.Join(*o, ",") }

func (o *originList) Set(v string) error {
	for s := range strings.SplitSeq(v, ",") {
		if s = strings.TrimSpace(s); s != "" {
			*o = append(*o, s)
		}
	}
	return nil
}

func (h *hardening) addFlags(fset *flag.FlagSet) {
	fset.StringVar(&h.tokenFile, "auth-token-file", "", "with --http, require \"Authorization: Bearer TOKEN\", TOKEN being the contents of `FILE` (surrounding white space ignored)")
	fset.Int64Var(&h.maxBodyBytes, "max-body-bytes", defaultMaxBodyBytes, "with --http, refuse (413) a request body over `N` bytes (0: the SDK's default, 4 MiB)")
	fset.DurationVar(&h.callTimeout, "call-timeout", defaultCallTimeout, "cancel a tools/call the upstream has not answered after `DUR` and answer upstream_timeout (0: no limit)")
	fset.DurationVar(&h.readTimeout, "read-timeout", defaultReadTimeout, "with --http, answer 408 and close the connection when a request's headers and body have not arrived within `DUR` (its response may stream for longer; 0: no limit)")
	fset.DurationVar(&h.idleConnTimeout, "idle-conn-timeout", defaultIdleConnTimeout, "with --http, close a keep-alive connection that has sent no request for `DUR` (0: never)")
	fset.IntVar(&h.maxConnections, "max-connections", defaultMaxConnections, "with --http, hold at most `N` connections: one more closes the longest-idle one, never one serving a request; GET event streams hold at most half, one more is answered 503 (0: no limit)")
	fset.IntVar(&h.maxSessions, "max-sessions", defaultMaxSessions, "with --http, hold at most `N` sessions (protocol 2025-11-25 and earlier): one more initialize is answered 503 with a JSON-RPC error until one ends (0: no limit)")
	fset.Var(&h.origins, "allow-origin", "with --http, also serve browser requests from `ORIGIN` (scheme://host[:port]; repeatable, or comma-separated); other foreign Origin headers get 403, loopback ones and none are served")
}

// check validates the flags and reads the token file.
func (h *hardening) check(httpAddr string) error {
	if h.maxBodyBytes < 0 {
		return usagef("--max-body-bytes %d: must not be negative (0: the SDK's default, %d)", h.maxBodyBytes, mcp.DefaultMaxRequestBodyBytes)
	}
	for _, d := range []struct {
		flag string
		v    time.Duration
	}{{"call-timeout", h.callTimeout}, {"read-timeout", h.readTimeout}, {"idle-conn-timeout", h.idleConnTimeout}} {
		if d.v < 0 {
			return usagef("--%s %v: must not be negative (0: no limit)", d.flag, d.v)
		}
	}
	if h.maxConnections < 0 {
		return usagef("--max-connections %d: must not be negative (0: no limit)", h.maxConnections)
	}
	if h.maxSessions < 0 {
		return usagef("--max-sessions %d: must not be negative (0: no limit)", h.maxSessions)
	}
	for _, o := range h.origins {
		if err := gateway.ValidOrigin(o); err != nil {
			return usagef("--allow-origin: %v", err)
		}
	}
	if len(h.origins) > 0 && httpAddr == "" {
		return usagef("--allow-origin %s: applies to --http only", h.origins.String())
	}
	if h.tokenFile == "" {
		return nil
	}
	if httpAddr == "" {
		return usagef("--auth-token-file %s: applies to --http only (a stdio client is the process that started the server)", h.tokenFile)
	}
	b, err := os.ReadFile(h.tokenFile)
	if err != nil {
		return usagef("--auth-token-file: %v", err)
	}
	h.token = []byte(strings.TrimSpace(string(b)))
	if len(h.token) == 0 {
		return usagef("--auth-token-file %s: the file is empty; write the token into it", h.tokenFile)
	}
	return nil
}

// checkRemoteAuth refuses --allow-remote without a bearer token check: it
// would serve every tool to whoever reaches the address. --no-auth says
// that is meant.
func checkRemoteAuth(c *config) error {
	switch {
	case c.noAuth && !c.allowRemote:
		return usagef("--no-auth applies to --allow-remote only (a loopback address serves without tokens anyway)")
	case c.allowRemote && c.httpAddr == "":
		return usagef("--allow-remote applies to --http only")
	case c.allowRemote && !c.noAuth && c.hard.tokenFile == "" && c.tokensFile == "":
		return usagef("--allow-remote without --auth-token-file or --tokens-file would let anyone who reaches %s call every served tool; "+
			"give one of them, or --no-auth to serve without authentication (dangerous)", c.httpAddr)
	}
	return nil
}

// bodyLimit is the request body limit in force.
func (h *hardening) bodyLimit() int64 {
	if h.maxBodyBytes == 0 {
		return mcp.DefaultMaxRequestBodyBytes
	}
	return h.maxBodyBytes
}

// httpOptions is what the gateway's handler needs of the flags.
func (h *hardening) httpOptions() gateway.HTTPOptions {
	return gateway.HTTPOptions{MaxBodyBytes: h.bodyLimit(), AllowedOrigins: h.origins}
}

// server is the HTTP server of handler, with the connection timeouts and
// cap.
func (h *hardening) server(handler http.Handler) (*http.Server, *connTracker) {
	conns := newConnTracker(h.maxConnections)
	idle := h.idleConnTimeout
	if idle == 0 {
		idle = -1 // http.Server: negative is no timeout
	}
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: 10 * time.Second,
		// Headers and body: net/http clears the read deadline once the
		// body is read, so a response streaming past it (an SSE stream,
		// a long call) is not cut.
		ReadTimeout: h.readTimeout,
		IdleTimeout: idle,
		ConnState:   conns.track,
	}, conns
}

// handler wraps the gateway's HTTP handler: the token check first, then the
// body (limit, read timeout, one JSON value), then onNewSession for a
// request that opens a session (a POST without Mcp-Session-Id), then the
// session and stream caps (admission, conns.go), before next,
// whose requests are cancelled when their client disconnects
// (disconnect.go).
func (h *hardening) handler(next http.Handler) http.Handler {
	limits := newAdmission(h.maxSessions, h.maxConnections, h.openSessions)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(h.token) > 0 && !h.authorized(w, r) {
			return
		}
		pb, ok := h.readBody(w, r)
		if !ok {
			return
		}
		if h.onNewSession != nil && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			h.onNewSession()
		}
		done, ok := limits.admit(w, r, pb)
		if !ok {
			return
		}
		defer done()
		serveCancelling(next, w, r, pb)
	})
}

// authorized checks the bearer token in constant time and answers 401 with
// a challenge when it is missing or wrong. The scheme is case-insensitive
// (RFC 9110, section 11.1). Neither answer echoes what the client sent.
func (h *hardening) authorized(w http.ResponseWriter, r *http.Request) bool {
	scheme, got, _ := strings.Cut(strings.TrimSpace(r.Header.Get("Authorization")), " ")
	ok := strings.EqualFold(scheme, "Bearer")
	if ok && subtle.ConstantTimeCompare([]byte(strings.TrimSpace(got)), h.token) == 1 {
		return true
	}
	challenge := fmt.Sprintf("Bearer realm=%q", authRealm)
	msg := "missing bearer token: send Authorization: Bearer TOKEN (the server's --auth-token-file)"
	if ok {
		challenge += `, error="invalid_token"`
		msg = "invalid bearer token"
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, msg, http.StatusUnauthorized)
	return false
}
