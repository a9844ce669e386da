package upstream

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/oauthex"
	"golang.org/x/oauth2"

	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
)

// StateNeedsLogin is the state of an OAuth server without a usable token:
// none stored, the refresh token rejected, or more scopes asked for. Only
// `profiler login` cures it; the Client keeps retrying with backoff (which
// only reads the token file) and connects once a login stored tokens.
const StateNeedsLogin State = "needs_login"

// UnauthorizedError is the error of an OAuth server that needs a login.
// It wraps ErrUnavailable, so callers that know nothing of OAuth see an
// unavailable upstream.
type UnauthorizedError struct {
	Server string
	Reason string // never holds a token
	// Login is the command that stores new tokens for the server.
	Login string
}

func (e *UnauthorizedError) Error() string {
	return fmt.Sprintf("upstream %q needs login (%s); run: %s", e.Server, e.Reason, e.Login)
}

func (e *UnauthorizedError) Unwrap() error { return ErrUnavailable }

// LoginFlow makes a Client run the authorization code flow itself when it
// has no usable token, instead of waiting in StateNeedsLogin. Only
// `profiler login` (and the conformance client) set it: the gateway never
// starts an interactive flow.
type LoginFlow struct {
	// RedirectURL is where the authorization server sends the code.
	RedirectURL string
	// Fetch shows the user the authorization URL and returns what the
	// redirect brought.
	Fetch auth.AuthorizationCodeFetcher
}

// ResourceKey is the token store key of an OAuth server: its name and its
// canonical URL (scheme, host and path: no user info, query or fragment).
func ResourceKey(srv *launch.ResolvedServer) oauthstore.Key {
	res := srv.URL
	if u, err := url.Parse(srv.URL); err == nil {
		res = (&url.URL{Scheme: strings.ToLower(u.Scheme), Host: strings.ToLower(u.Host), Path: u.Path}).String()
	}
	return oauthstore.Key{Server: srv.Name, Resource: res}
}

// oauthHandler is the auth.OAuthHandler of an OAuth server: it attaches the
// stored token, refreshes it on a 401, records a step-up on
// insufficient_scope, and runs the login flow only when given one.
type oauthHandler struct {
	c     *Client
	src   *oauthstore.Source
	login string // the command that cures a needs_login
	flow  *auth.AuthorizationCodeHandler

	mu    sync.Mutex
	needs string // why a login is needed; "" while tokens work

	// current are the values the server may echo in an error that are
	// scrubbed for as long as they are current: the access token, the
	// refresh token, the client secret the entry holds and the one the
	// launch document gives. past are the newest maxSecrets values they
	// replaced, which an answer in flight may still carry. scrub removes
	// both; all three change under mu.
	current    [4]string
	past       []string
	scrubFn    func(string) string
	lastAccess string // the access token last handed out
}

// maxSecrets bounds the replaced values scrubbed for one server, on top
// of the current ones, which are always scrubbed.
const maxSecrets = 9

// The slots of oauthHandler.current.
const (
	currentAccess = iota
	currentRefresh
	currentClientSecret
	launchClientSecret
)

func newOAuthHandler(c *Client) (*oauthHandler, error) {
	o := c.srv.OAuth
	if c.opts.Tokens == nil {
		return nil, fmt.Errorf("upstream %q: oauth: no token store configured", c.srv.Name)
	}
	key := ResourceKey(&c.srv)
	h := &oauthHandler{c: c, src: c.opts.Tokens.Source(key, o.ClientSecret), login: c.opts.loginCommand(c.srv)}
	h.current[launchClientSecret] = o.ClientSecret
	h.learn("", "", "") // scrubs the launch document's secret even with no entry stored
	h.learnStored()
	if f := c.opts.Login; f != nil {
		cfg := &auth.AuthorizationCodeHandlerConfig{
			RedirectURL:              f.RedirectURL,
			AuthorizationCodeFetcher: f.Fetch,
			DynamicClientRegistrationConfig: &auth.DynamicClientRegistrationConfig{Metadata: &oauthex.ClientRegistrationMetadata{
				ClientName:   "toolprof",
				RedirectURIs: []string{f.RedirectURL},
				GrantTypes:   []string{"authorization_code", "refresh_token"},
			}},
			RequestRefreshToken: true,
			Client:              &http.Client{Transport: originGuard{base: c.http, server: c.srv.Name}},
			ScopeFilter:         h.scopes,
			NewTokenSource:      h.keep,
		}
		if o.ClientMetadataURL != "" {
			cfg.ClientIDMetadataDocumentConfig = &auth.ClientIDMetadataDocumentConfig{URL: o.ClientMetadataURL}
		}
		if o.ClientID != "" {
			pre := &oauthex.ClientCredentials{ClientID: o.ClientID}
			if o.ClientSecret != "" {
				pre.ClientSecretAuth = &oauthex.ClientSecretAuth{ClientSecret: o.ClientSecret}
			}
			cfg.PreregisteredClient = pre
		}
		flow, err := auth.NewAuthorizationCodeHandler(cfg)
		if err != nil {
			return nil, fmt.Errorf("upstream %q: oauth: %w", c.srv.Name, err)
		}
		h.flow = flow
	}
	return h, nil
}

// loginCommand is the command that logs in to srv.
func (o Options) loginCommand(srv launch.ResolvedServer) string {
	if o.LoginCommand != nil {
		return o.LoginCommand(srv.Name)
	}
	file, _, _ := strings.Cut(srv.Template.Source, ":")
	return fmt.Sprintf("profiler login --launch %s --server %s", file, srv.Name)
}

// scopes are the scopes a login requests: the declared ones instead of
// the discovered ones, plus those the server asked for in a step-up.
func (h *oauthHandler) scopes(discovered []string) []string {
	want := discovered
	if s := h.c.srv.OAuth.Scopes; len(s) > 0 {
		want = slices.Clone(s)
	}
	if e, ok, err := h.c.opts.Tokens.Get(h.src.Key()); err == nil && ok {
		for _, s := range e.StepUp {
			if !slices.Contains(want, s) {
				want = append(want, s)
			}
		}
	}
	return want
}

// keep stores the tokens a login obtained.
func (h *oauthHandler) keep(_ context.Context, cfg *oauth2.Config, tok *oauth2.Token) (oauth2.TokenSource, error) {
	e := oauthstore.Entry{
		Key:      h.src.Key(),
		TokenURL: cfg.Endpoint.TokenURL, ClientID: cfg.ClientID, AuthStyle: int(cfg.Endpoint.AuthStyle),
		AccessToken: tok.AccessToken, TokenType: tok.TokenType, RefreshToken: tok.RefreshToken, Expiry: tok.Expiry,
		Scopes: cfg.Scopes,
	}
	if h.c.srv.OAuth.ClientID == "" {
		e.ClientSecret = cfg.ClientSecret // registered by the flow: nowhere else to find it
	}
	if sc, ok := tok.Extra("scope").(string); ok && sc != "" {
		e.Scopes = strings.Fields(sc)
	}
	h.learn(e.AccessToken, e.RefreshToken, cfg.ClientSecret)
	if err := h.src.Put(e); err != nil {
		return nil, err
	}
	h.setNeeds("")
	return oauth2.StaticTokenSource(tok), nil
}

// learn makes access, refresh and clientSecret the current values ("":
// unknown, the current one stays); a value replaced joins past, whose
// oldest values go first.
func (h *oauthHandler) learn(access, refresh, clientSecret string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	changed := h.scrubFn == nil
	for slot, v := range map[int]string{currentAccess: access, currentRefresh: refresh, currentClientSecret: clientSecret} {
		old := h.current[slot]
		if v == "" || v == old {
			continue
		}
		h.current[slot], changed = v, true
		h.past = slices.DeleteFunc(h.past, func(p string) bool { return p == v })
		if old != "" {
			h.past = append(h.past, old)
		}
	}
	if !changed {
		return
	}
	if n := len(h.past) - maxSecrets; n > 0 {
		h.past = slices.Delete(h.past, 0, n)
	}
	h.scrubFn = launch.NewScrubber(append(slices.Clone(h.current[:]), h.past...)...)
}

// learnStored learns the tokens and client secret stored for the server.
func (h *oauthHandler) learnStored() {
	if e, ok, err := h.c.opts.Tokens.Get(h.src.Key()); err == nil && ok {
		h.learn(e.AccessToken, e.RefreshToken, e.ClientSecret)
	}
}

// handedOut learns tok's access token and, when it is a new one (a
// refresh, another process's refresh or login), the entry holding it: its
// refresh token may have rotated.
func (h *oauthHandler) handedOut(tok *oauth2.Token) {
	h.mu.Lock()
	known := tok.AccessToken == h.lastAccess
	h.lastAccess = tok.AccessToken
	h.mu.Unlock()
	if known {
		return
	}
	h.learn(tok.AccessToken, "", "")
	h.learnStored()
}

// scrub removes the server's tokens and client secret from msg, in every
// form launch.ResolvedServer.Scrub knows.
func (h *oauthHandler) scrub(msg string) string {
	if h == nil {
		return msg
	}
	h.mu.Lock()
	f := h.scrubFn
	h.mu.Unlock()
	if f == nil {
		return msg
	}
	return f(msg)
}

func (h *oauthHandler) setNeeds(why string) {
	h.mu.Lock()
	h.needs = why
	h.mu.Unlock()
}

// needsLogin is why the server needs a login, "" when it does not.
func (h *oauthHandler) needsLogin() string {
	if h == nil {
		return ""
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.needs
}

func (h *oauthHandler) unauthorized(why string) *UnauthorizedError {
	return &UnauthorizedError{Server: h.c.srv.Name, Reason: h.c.scrub(why), Login: h.login}
}

// fail records err from the store: a needs-login error marks the server.
func (h *oauthHandler) fail(err error) error {
	var le *oauthstore.LoginError
	if errors.As(err, &le) {
		h.setNeeds(le.Reason)
		return h.unauthorized(le.Reason)
	}
	return fmt.Errorf("oauth: %s", h.c.scrub(err.Error()))
}

// TokenSource returns the stored token, refreshed when near expiry.
func (h *oauthHandler) TokenSource(ctx context.Context) (oauth2.TokenSource, error) {
	return tokenFunc(func() (*oauth2.Token, error) {
		tok, err := h.src.Token(ctx)
		if err == nil {
			h.handedOut(tok)
			h.setNeeds("")
			return tok, nil
		}
		if errors.Is(err, oauthstore.ErrNeedsLogin) && h.flow != nil {
			// Send without a token: the 401 starts the login flow. The
			// transport lets an invalid_grant error through for this.
			return nil, &oauth2.RetrieveError{ErrorCode: "invalid_grant"}
		}
		return nil, h.fail(err)
	}), nil
}

type tokenFunc func() (*oauth2.Token, error)

func (f tokenFunc) Token() (*oauth2.Token, error) { return f() }

// Authorize handles a 401 or 403: refresh a refused token, record the
// scopes of an insufficient_scope, then log in when there is a flow or
// mark the server as needing a login.
func (h *oauthHandler) Authorize(ctx context.Context, req *http.Request, resp *http.Response) error {
	challenges, _ := oauthex.ParseWWWAuthenticate(resp.Header.Values("WWW-Authenticate"))
	errCode, scope := "", ""
	for _, c := range challenges {
		if c.Scheme == "bearer" {
			errCode, scope = c.Params["error"], c.Params["scope"]
			break
		}
	}
	if resp.StatusCode == http.StatusForbidden && errCode != "insufficient_scope" {
		// Not an authorization problem: the retry returns the refusal.
		drain(resp)
		return nil
	}
	var why string
	if resp.StatusCode == http.StatusUnauthorized {
		rejected, _ := strings.CutPrefix(req.Header.Get("Authorization"), "Bearer ")
		tok, err := h.src.Refresh(ctx, rejected)
		if err == nil {
			h.handedOut(tok)
			drain(resp)
			return nil
		}
		if !errors.Is(err, oauthstore.ErrNeedsLogin) {
			drain(resp)
			return h.fail(err)
		}
		var le *oauthstore.LoginError
		errors.As(err, &le)
		why = le.Reason
	} else {
		why = "the server asked for more scopes: " + scope
		if err := h.src.StepUp(strings.Fields(scope)); err != nil {
			drain(resp)
			return h.fail(err)
		}
	}
	if h.flow == nil {
		drain(resp)
		h.setNeeds(why)
		return h.unauthorized(why)
	}
	if err := h.flow.Authorize(ctx, req, resp); err != nil { // closes resp.Body
		return fmt.Errorf("oauth login: %s", h.c.scrub(err.Error()))
	}
	return nil
}

func drain(resp *http.Response) {
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}
