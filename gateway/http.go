package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"net/url"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/tokens"
)

// HTTPOptions configure HTTPHandler. The zero value serves with the SDK's
// body limit and refuses every browser origin but loopback ones.
type HTTPOptions struct {
	// MaxBodyBytes is the largest request body read: a larger one is
	// answered 413. 0 or negative: mcp.DefaultMaxRequestBodyBytes (the
	// limit cannot be switched off).
	MaxBodyBytes int64
	// AllowedOrigins are the browser origins ("scheme://host[:port]")
	// served besides loopback ones. A request whose Origin header names any
	// other origin is answered 403; one without an Origin header (not sent
	// by a browser) is served.
	AllowedOrigins []string
	// Tokens, when set, is the tokens file (--tokens-file): every request
	// must carry one of its bearer tokens (401 otherwise), and a token may
	// bind the profile served (credentials.go). nil: no token is read.
	Tokens *tokens.Source
}

// HTTPHandler serves streamable HTTP: /mcp is the default profile, /mcp/NAME
// the profile NAME, and /healthz the Health as JSON. Requests of protocol
// 2026-07-28 and later are served statelessly, earlier clients with
// protocol sessions (stateless.go); with Options.HTTP.Tokens a bearer token
// is required and may bind the profile (credentials.go). A profile that does not
// exist is 404, one beyond the ceiling (Options.MaxProfile) 403, each with a
// message listing the profiles that can be served. Every path refuses (403)
// a foreign Host header on a loopback listener (DNS rebinding, the SDK's
// rule) and a foreign Origin (Options.HTTP.AllowedOrigins).
func (g *Gateway) HTTPHandler() http.Handler {
	return g.httpHandler(newHTTPFast(g))
}

// httpHandler is HTTPHandler, with fp, the fast path for plain 2026-07-28
// calls (httpcall.go), unless it is nil.
func (g *Gateway) httpHandler(fp *httpFast) http.Handler {
	maxBody := g.opts.HTTP.MaxBodyBytes
	if maxBody <= 0 {
		maxBody = mcp.DefaultMaxRequestBodyBytes
	}
	origins := make(map[string]bool)
	for _, o := range g.opts.HTTP.AllowedOrigins {
		if k, ok := originKey(o); ok {
			origins[k] = true
		}
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(g.Health())
	})
	// One handler per profile and protocol generation, so sessions never
	// cross profiles. Made on first use: a re-resolution (profiles.toml
	// edited, tools changed) may add a profile after the handler was built.
	type handlerKey struct {
		profile     string
		sessionless bool
	}
	var mu sync.Mutex
	handlers := make(map[handlerKey]http.Handler)
	handler := func(k handlerKey) (http.Handler, error) {
		// Checked on every request: a re-resolution may also remove a
		// profile, or move it beyond the ceiling.
		if err := g.checkProfile(k.profile); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if h, ok := handlers[k]; ok {
			return h, nil
		}
		s, err := g.serverFor(k.profile, telemetry.TransportHTTP, k.sessionless)
		if err != nil {
			return nil, err
		}
		if fp != nil && k.sessionless {
			s.AddReceivingMiddleware(learnMeta)
		}
		var h http.Handler = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
			Logger:              g.logger,
			SessionTimeout:      g.opts.IdleTimeout,
			MaxRequestBodyBytes: maxBody,
			Stateless:           k.sessionless,
		})
		if g.opts.HTTP.Tokens != nil && !k.sessionless {
			h = bindSessions(h)
		}
		handlers[k] = h
		return h, nil
	}
	// route picks the handler of r and the request to give it, or answers r
	// itself (nil). It returns before the handler runs, so that its frame is
	// off the stack of a request the handler holds open: a session's SSE
	// stream, idle for as long as the session, whose goroutine's stack the
	// runtime shrinks only while less than a quarter of it is in use.
	route := func(w http.ResponseWriter, r *http.Request, profile string, named bool) (http.Handler, *http.Request) {
		var err error
		if cred, ok := r.Context().Value(credentialKey{}).(tokens.Entry); ok {
			profile, err = g.credentialProfile(profile, named, cred)
		}
		var h http.Handler
		var sessionless bool
		var msg jsonrpc.Message
		if err == nil {
			var ok bool
			sessionless, msg, ok = g.routeProtocol(w, r, maxBody)
			if !ok {
				return nil, nil
			}
			h, err = handler(handlerKey{profile, sessionless})
		}
		if err != nil {
			status := http.StatusNotFound
			var pe *ProfileError
			if errors.As(err, &pe) && pe.Ceiling != "" {
				status = http.StatusForbidden
			}
			http.Error(w, err.Error(), status)
			return nil, nil
		}
		if g.refuseBatch(w, r) { // batch.go
			return nil, nil
		}
		if fp != nil && sessionless {
			var taken bool
			if r, taken = fp.serve(w, r, profile, msg); taken {
				return nil, nil
			}
		}
		return h, r
	}
	routeNamed := func(w http.ResponseWriter, r *http.Request) (http.Handler, *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/mcp/")
		if name == "" || strings.Contains(name, "/") {
			http.Error(w, "want /mcp or /mcp/PROFILE; profiles: "+strings.Join(g.servable(), ", "), http.StatusNotFound)
			return nil, nil
		}
		return route(w, r, name, true)
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		if h, r := route(w, r, g.cat().resolved.Default, false); h != nil {
			h.ServeHTTP(w, r)
		}
	})
	mux.HandleFunc("/mcp/", func(w http.ResponseWriter, r *http.Request) {
		if h, r := routeNamed(w, r); h != nil {
			h.ServeHTTP(w, r)
		}
	})
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r, ok := g.admitHTTP(w, r, origins); ok {
			mux.ServeHTTP(w, r)
		}
	})
}

// admitHTTP checks the Host, Origin and (with Options.HTTP.Tokens) the
// bearer token of r, answering a refused request itself, and returns r
// with its credential. It returns before the request is served, so that
// its frame is off the stack of a request held open (route).
func (g *Gateway) admitHTTP(w http.ResponseWriter, r *http.Request, origins map[string]bool) (*http.Request, bool) {
	// The SDK checks the Host of /mcp requests only; /healthz and the
	// 404s would answer a rebound name too.
	if local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr); ok && local != nil {
		if isLoopback(local.String()) && !isLoopback(r.Host) {
			http.Error(w, fmt.Sprintf("Forbidden: invalid Host header %q", r.Host), http.StatusForbidden)
			return r, false
		}
	}
	if o := r.Header.Values("Origin"); len(o) > 0 {
		k, ok := originKey(o[0])
		if len(o) > 1 || !ok || !(origins[k] || isLoopback(hostOf(k))) {
			http.Error(w, fmt.Sprintf("Forbidden: Origin %q is not allowed (loopback origins are, and those the server lists: server --allow-origin)", strings.Join(o, ", ")), http.StatusForbidden)
			return r, false
		}
	}
	if g.opts.HTTP.Tokens != nil {
		cred, ok := g.authenticate(w, r)
		if !ok {
			return r, false
		}
		r = r.WithContext(context.WithValue(r.Context(), credentialKey{}, cred))
	}
	return r, true
}

// credentialKey is the request context key of the authenticated
// tokens-file entry.
type credentialKey struct{}

// CheckDefault reports, as a *ProfileError, that the default profile cannot
// be served (unknown, or beyond the ceiling): /mcp would refuse every
// request.
func (g *Gateway) CheckDefault() error {
	return g.checkProfile(g.cat().resolved.Default)
}

// isLoopback reports whether addr (host, or host:port) names this machine
// by loopback: "localhost" or a loopback IP.
func isLoopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = strings.Trim(addr, "[]")
	}
	if host == "localhost" {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.IsLoopback()
}

// originKey normalizes an origin to "scheme://host[:port]", lower case and
// without the scheme's default port, as browsers send it. "null" (an
// opaque origin) and anything with a path, query or user is not an origin.
func originKey(origin string) (string, bool) {
	u, err := url.Parse(origin)
	if err != nil || u.Scheme == "" || u.Host == "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", false
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	switch {
	case scheme == "http" && u.Port() == "80", scheme == "https" && u.Port() == "443":
		host = strings.ToLower(u.Hostname())
		if strings.Contains(host, ":") {
			host = "[" + host + "]"
		}
	}
	return scheme + "://" + host, true
}

// hostOf is the host[:port] of an originKey.
func hostOf(key string) string {
	_, host, _ := strings.Cut(key, "://")
	return host
}

// ValidOrigin reports why origin cannot be an HTTPOptions.AllowedOrigins
// entry, or nil.
func ValidOrigin(origin string) error {
	if _, ok := originKey(origin); !ok {
		return fmt.Errorf("origin %q: want scheme://host[:port], e.g. https://app.example.com", origin)
	}
	return nil
}
