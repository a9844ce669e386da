package main

// Hardening of the HTTP endpoint and of calls: an optional bearer
// token read from a file (--auth-token-file), a request body limit
// (--max-body-bytes), the per-call timeout (--call-timeout) and the reload
// of the profiles file on change (reload.go). The SDK's DNS-rebinding
// protection stays on (gateway.HTTPHandler), and --http binds loopback
// unless --allow-remote.

import (
	"crypto/subtle"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"
)

// Defaults of the hardening flags.
const (
	defaultMaxBodyBytes = 4 << 20
	defaultCallTimeout  = 60 * time.Second
)

// authRealm is the realm the 401 challenge names.
const authRealm = "toolprof"

// hardening is the part of the command line this file reads.
type hardening struct {
	tokenFile    string
	token        []byte // read from tokenFile; never logged
	maxBodyBytes int64
	callTimeout  time.Duration
	// onNewSession runs when an HTTP request opens a session (set by run:
	// the profiles reload).
	onNewSession func()
}

func (h *hardening) addFlags(fset *flag.FlagSet) {
	fset.StringVar(&h.tokenFile, "auth-token-file", "", "with --http, require \"Authorization: Bearer TOKEN\", TOKEN being the contents of `FILE` (surrounding white space ignored)")
	fset.Int64Var(&h.maxBodyBytes, "max-body-bytes", defaultMaxBodyBytes, "with --http, refuse (413) a request body over `N` bytes (0: no limit)")
	fset.DurationVar(&h.callTimeout, "call-timeout", defaultCallTimeout, "cancel a tools/call the upstream has not answered after `DUR` and answer upstream_timeout (0: no limit)")
}

// check validates the flags and reads the token file.
func (h *hardening) check(httpAddr string) error {
	if h.maxBodyBytes < 0 {
		return usagef("--max-body-bytes %d: must not be negative (0: no limit)", h.maxBodyBytes)
	}
	if h.callTimeout < 0 {
		return usagef("--call-timeout %v: must not be negative (0: no limit)", h.callTimeout)
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

// handler wraps the gateway's HTTP handler: the token check first, then the
// body limit, then onNewSession for a request that opens a session (a POST
// without Mcp-Session-Id), before next, whose requests are cancelled when
// their client disconnects (disconnect.go).
func (h *hardening) handler(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if len(h.token) > 0 && !h.authorized(w, r) {
			return
		}
		if h.maxBodyBytes > 0 {
			if r.ContentLength > h.maxBodyBytes {
				http.Error(w, fmt.Sprintf("request body of %d bytes exceeds %d bytes (--max-body-bytes)", r.ContentLength, h.maxBodyBytes), http.StatusRequestEntityTooLarge)
				return
			}
			// A body without a length (chunked) is cut at the limit; the
			// SDK answers the *http.MaxBytesError with 413.
			r.Body = http.MaxBytesReader(w, r.Body, h.maxBodyBytes)
		}
		if h.onNewSession != nil && r.Method == http.MethodPost && r.Header.Get("Mcp-Session-Id") == "" {
			h.onNewSession()
		}
		cancelOnDisconnect(next).ServeHTTP(w, r)
	})
}

// authorized checks the bearer token in constant time and answers 401 with
// a challenge when it is missing or wrong. Neither answer echoes what the
// client sent.
func (h *hardening) authorized(w http.ResponseWriter, r *http.Request) bool {
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
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
