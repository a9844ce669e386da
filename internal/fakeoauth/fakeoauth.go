// Package fakeoauth is a fake OAuth 2.1 authorization server and a
// protected-resource wrapper for tests: a real one cannot be told to revoke
// a refresh token, expire an access token or demand a scope on purpose.
//
// The fake serves authorization server metadata, dynamic client
// registration, an authorization endpoint that approves at once (it
// redirects to the redirect URI with a code, as a browser would show after
// the user agreed), and a token endpoint for authorization_code (PKCE S256
// checked) and refresh_token grants; refresh tokens rotate. Protect wraps
// an MCP handler so it requires the fake's access tokens and serves its
// protected resource metadata.
package fakeoauth

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"
)

// Server is the fake authorization server.
type Server struct {
	*httptest.Server
	// TokenLifetime is the expires_in of issued access tokens (default an
	// hour). Set it before the first token is issued.
	TokenLifetime time.Duration

	mu        sync.Mutex
	clients   map[string]string // client_id -> secret ("" public)
	codes     map[string]grant
	access    map[string]grant // access token -> what it grants
	refresh   map[string]grant // live refresh tokens
	refreshes int              // refresh_token grants answered with a token
	authorize int              // authorization requests
}

type grant struct {
	clientID, challenge, redirect, resource string
	scopes                                  []string
	expiry                                  time.Time
}

// New starts the fake; Close stops it.
func New() *Server {
	s := &Server{clients: map[string]string{}, codes: map[string]grant{}, access: map[string]grant{}, refresh: map[string]grant{}, TokenLifetime: time.Hour}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /.well-known/oauth-authorization-server", s.metadata)
	mux.HandleFunc("POST /register", s.register)
	mux.HandleFunc("GET /authorize", s.authorizeHandler)
	mux.HandleFunc("POST /token", s.token)
	s.Server = httptest.NewServer(mux)
	return s
}

// Register adds a pre-registered client.
func (s *Server) Register(clientID, secret string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.clients[clientID] = secret
}

// Refreshes is how many refresh_token grants issued a token.
func (s *Server) Refreshes() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.refreshes
}

// Authorizations is how many authorization requests were made.
func (s *Server) Authorizations() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.authorize
}

// RevokeAll revokes every refresh token and access token.
func (s *Server) RevokeAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.refresh)
	clear(s.access)
}

// ExpireAccess makes every issued access token invalid (refresh tokens
// stay good), as a server does that rotated its signing key.
func (s *Server) ExpireAccess() {
	s.mu.Lock()
	defer s.mu.Unlock()
	clear(s.access)
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func (s *Server) metadata(w http.ResponseWriter, r *http.Request) {
	writeJSON(w, 200, map[string]any{
		"issuer":                                s.URL,
		"authorization_endpoint":                s.URL + "/authorize",
		"token_endpoint":                        s.URL + "/token",
		"registration_endpoint":                 s.URL + "/register",
		"response_types_supported":              []string{"code"},
		"grant_types_supported":                 []string{"authorization_code", "refresh_token"},
		"code_challenge_methods_supported":      []string{"S256"},
		"token_endpoint_auth_methods_supported": []string{"client_secret_post", "client_secret_basic", "none"},
		"scopes_supported":                      []string{"read", "write", "offline_access"},
	})
}

func (s *Server) register(w http.ResponseWriter, r *http.Request) {
	var md map[string]any
	if err := json.NewDecoder(r.Body).Decode(&md); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_client_metadata"})
		return
	}
	id, secret := "dyn-"+rand.Text(), "dynsecret-"+rand.Text()
	s.Register(id, secret)
	writeJSON(w, 201, map[string]any{"client_id": id, "client_secret": secret, "redirect_uris": md["redirect_uris"], "token_endpoint_auth_method": "client_secret_post"})
}

func (s *Server) authorizeHandler(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	s.mu.Lock()
	s.authorize++
	_, known := s.clients[q.Get("client_id")]
	s.mu.Unlock()
	if !known || q.Get("response_type") != "code" || q.Get("code_challenge_method") != "S256" || q.Get("code_challenge") == "" {
		http.Error(w, "bad authorization request", 400)
		return
	}
	code := "code-" + rand.Text()
	s.mu.Lock()
	s.codes[code] = grant{clientID: q.Get("client_id"), challenge: q.Get("code_challenge"), redirect: q.Get("redirect_uri"),
		resource: q.Get("resource"), scopes: strings.Fields(q.Get("scope"))}
	s.mu.Unlock()
	to, err := url.Parse(q.Get("redirect_uri"))
	if err != nil {
		http.Error(w, "bad redirect_uri", 400)
		return
	}
	v := to.Query()
	v.Set("code", code)
	v.Set("state", q.Get("state"))
	to.RawQuery = v.Encode()
	http.Redirect(w, r, to.String(), http.StatusFound)
}

// client authenticates the token request's client.
func (s *Server) client(r *http.Request) (string, bool) {
	id, secret, basic := r.BasicAuth()
	if !basic {
		id, secret = r.PostForm.Get("client_id"), r.PostForm.Get("client_secret")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	want, ok := s.clients[id]
	return id, ok && want == secret
}

func (s *Server) token(w http.ResponseWriter, r *http.Request) {
	if err := r.ParseForm(); err != nil {
		writeJSON(w, 400, map[string]string{"error": "invalid_request"})
		return
	}
	id, ok := s.client(r)
	if !ok {
		writeJSON(w, 401, map[string]string{"error": "invalid_client"})
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	var g grant
	switch r.PostForm.Get("grant_type") {
	case "authorization_code":
		c, ok := s.codes[r.PostForm.Get("code")]
		delete(s.codes, r.PostForm.Get("code"))
		sum := sha256.Sum256([]byte(r.PostForm.Get("code_verifier")))
		if !ok || c.clientID != id || c.redirect != r.PostForm.Get("redirect_uri") || base64.RawURLEncoding.EncodeToString(sum[:]) != c.challenge {
			writeJSON(w, 400, map[string]string{"error": "invalid_grant"})
			return
		}
		g = c
	case "refresh_token":
		rt := r.PostForm.Get("refresh_token")
		c, ok := s.refresh[rt]
		if !ok || c.clientID != id {
			// The description echoes the token, as careless servers do:
			// toolprof must not pass it on.
			writeJSON(w, 400, map[string]string{"error": "invalid_grant", "error_description": "unknown refresh token " + rt})
			return
		}
		delete(s.refresh, rt)
		g = c
		s.refreshes++
	default:
		writeJSON(w, 400, map[string]string{"error": "unsupported_grant_type"})
		return
	}
	access, refresh := "at-"+rand.Text(), "rt-"+rand.Text()
	g.expiry = time.Now().Add(s.TokenLifetime)
	s.access[access] = g
	s.refresh[refresh] = g
	writeJSON(w, 200, map[string]any{"access_token": access, "token_type": "Bearer", "refresh_token": refresh,
		"expires_in": int(s.TokenLifetime / time.Second), "scope": strings.Join(g.scopes, " ")})
}

// Protect wraps next, an MCP endpoint served at path on the returned
// handler, so it requires an access token of s granting scopes, and serves
// its protected resource metadata. resource is the endpoint's URL.
func (s *Server) Protect(next http.Handler, resource string, scopes ...string) http.Handler {
	u, _ := url.Parse(resource)
	prmPath := "/.well-known/oauth-protected-resource" + u.Path
	mux := http.NewServeMux()
	mux.HandleFunc("GET "+prmPath, func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, 200, map[string]any{"resource": resource, "authorization_servers": []string{s.URL}, "scopes_supported": scopes})
	})
	prm := u.Scheme + "://" + u.Host + prmPath
	mux.HandleFunc(u.Path, func(w http.ResponseWriter, r *http.Request) {
		tok, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
		s.mu.Lock()
		g, known := s.access[tok]
		s.mu.Unlock()
		if !ok || !known || time.Now().After(g.expiry) {
			w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer resource_metadata=%q, scope=%q", prm, strings.Join(scopes, " ")))
			http.Error(w, "unauthorized", http.StatusUnauthorized)
			return
		}
		for _, sc := range scopes {
			if !slices.Contains(g.scopes, sc) {
				w.Header().Set("WWW-Authenticate", fmt.Sprintf("Bearer error=\"insufficient_scope\", resource_metadata=%q, scope=%q", prm, strings.Join(scopes, " ")))
				http.Error(w, "insufficient scope", http.StatusForbidden)
				return
			}
		}
		next.ServeHTTP(w, r)
	})
	return mux
}

// Mint issues an access token (valid for lifetime, which may be negative:
// already expired) and a refresh token to clientID, as a completed login
// would have.
func (s *Server) Mint(clientID string, scopes []string, lifetime time.Duration) (access, refresh string, expiry time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	access, refresh = "at-"+rand.Text(), "rt-"+rand.Text()
	g := grant{clientID: clientID, scopes: scopes, expiry: time.Now().Add(lifetime)}
	s.access[access] = g
	s.refresh[refresh] = g
	return access, refresh, g.expiry
}

// Approve is an authorization code fetcher for tests and the conformance
// client: it requests the authorization URL as a browser would and, where
// a person would approve, reads the code, state and iss from the redirect
// the authorization server answers with, without following it.
func Approve(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, args.URL, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	if resp.StatusCode/100 != 3 {
		return nil, fmt.Errorf("authorization endpoint answered %s, not a redirect", resp.Status)
	}
	loc, err := url.Parse(resp.Header.Get("Location"))
	if err != nil {
		return nil, fmt.Errorf("authorization redirect: %w", err)
	}
	q := loc.Query()
	if e := q.Get("error"); e != "" {
		return nil, fmt.Errorf("authorization refused: %s", e)
	}
	return &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}, nil
}
