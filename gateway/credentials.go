package gateway

// Credentials: with HTTPOptions.Tokens set, every HTTP request carries a
// bearer token of the tokens file (package tokens), and the token may bind
// the profile served. The profile served is the token's profile when it
// names one, else the path's (/mcp: the default, /mcp/NAME: NAME), and it
// must lie within every ceiling of the request: the server's
// (Options.MaxProfile), the token's ceiling, and on /mcp/NAME the profile
// NAME when the token names its own profile (a token narrows what a path
// serves, never widens it). A missing or unknown token is 401 (never a
// fall-back to the default profile), a profile beyond a ceiling 403.
// The token's ceiling then bounds every request as the server's does
// (listing, calls, groups, search: requestSnapshot), looked up on each
// request so that an edit of the tokens file holds for open sessions.
// A protocol session serves only the token that opened it (bindSessions):
// another token on its Mcp-Session-Id is 403.

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/auth"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/tokens"
)

// authRealm is the realm a 401 challenge names.
const authRealm = "toolprof"

// bearer returns the bearer token of an Authorization header value: the
// scheme and one token (RFC 6750 tokens hold no space), read as the SDK's
// auth middleware reads it (bindSessions).
func bearer(h string) (token string, ok bool) {
	f := strings.Fields(h)
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return "", false
	}
	return f[1], true
}

// authenticate answers 401 and returns false unless r carries a token of
// the tokens file. Neither answer echoes what the client sent.
func (g *Gateway) authenticate(w http.ResponseWriter, r *http.Request) (tokens.Entry, bool) {
	tok, ok := bearer(r.Header.Get("Authorization"))
	if ok {
		if e, found := g.opts.HTTP.Tokens.Lookup(tok); found {
			return e, true
		}
	}
	g.refused.unknownToken.Add(1)
	challenge := fmt.Sprintf("Bearer realm=%q", authRealm)
	msg := "missing bearer token: send Authorization: Bearer TOKEN (a token of the server's --tokens-file)"
	switch {
	case ok:
		challenge += `, error="invalid_token"`
		msg = "invalid bearer token: not in the server's --tokens-file"
	case r.Header.Get("Authorization") != "":
		msg = "malformed Authorization header: want Bearer TOKEN, one token without spaces (a token of the server's --tokens-file)"
	}
	w.Header().Set("WWW-Authenticate", challenge)
	http.Error(w, msg, http.StatusUnauthorized)
	return tokens.Entry{}, false
}

// bindSessions binds each protocol session of h, a stateful SDK handler,
// to the token that opened it: what a session serves (its profile,
// whether it is explored) is decided by its first request's token, so a
// request on its Mcp-Session-Id with another token must not be served by
// it (its own token, once out of the tokens file, is 401: authenticate).
// The SDK keeps the UserID of the TokenInfo that opened a session and
// answers a later POST, GET or DELETE of another UserID 403 "session user
// mismatch" before the session sees it. The UserID is the token's hash,
// never the token. The request was authenticated before (authenticate):
// the entry found is in its context.
func bindSessions(h http.Handler) http.Handler {
	verify := func(ctx context.Context, _ string, _ *http.Request) (*auth.TokenInfo, error) {
		cred, ok := ctx.Value(credentialKey{}).(tokens.Entry)
		if !ok || cred.Hash == "" {
			return nil, fmt.Errorf("%w: no authenticated token", auth.ErrInvalidToken)
		}
		return &auth.TokenInfo{UserID: cred.Hash}, nil
	}
	// Tokens of the tokens file do not expire; removing one refuses it.
	return auth.RequireBearerToken(verify, &auth.RequireBearerTokenOptions{AllowMissingExpiration: true})(h)
}

// requestCredential is the tokens-file entry of an MCP request's bearer
// token (from the HTTP headers the SDK passes along); ok is false without
// a tokens file, over stdio, or without a known token.
func (g *Gateway) requestCredential(req mcp.Request) (tokens.Entry, bool) {
	if g.opts.HTTP.Tokens == nil {
		return tokens.Entry{}, false
	}
	extra := req.GetExtra()
	if extra == nil || extra.Header == nil {
		return tokens.Entry{}, false
	}
	tok, ok := bearer(extra.Header.Get("Authorization"))
	if !ok {
		return tokens.Entry{}, false
	}
	return g.opts.HTTP.Tokens.Lookup(tok)
}

// credentialProfile is the profile served to a request on a path of
// profile pathProfile (named: the path was /mcp/NAME) with credential e.
// The error is a *ProfileError: Ceiling set means 403.
func (g *Gateway) credentialProfile(pathProfile string, named bool, e tokens.Entry) (string, error) {
	served := pathProfile
	if e.Profile != "" {
		served = e.Profile
	}
	if err := g.checkProfile(served); err != nil {
		return "", err
	}
	if named && e.Profile != "" && !g.within(served, pathProfile) {
		return "", &ProfileError{Name: served, Valid: g.servable(), Ceiling: pathProfile, Why: fmt.Sprintf("the profile of this token (%q) holds tools outside the path's profile %q; a token narrows a path, never widens it: use /mcp", served, pathProfile)}
	}
	if e.Ceiling != "" && !g.withinTokenCeiling(served, e.Ceiling) {
		return "", &ProfileError{Name: served, Valid: g.servable(), Ceiling: e.Ceiling, Why: fmt.Sprintf("profile %q holds tools outside this token's ceiling %q", served, e.Ceiling)}
	}
	return served, nil
}

// within reports whether every tool of profile is allowed by ceiling (a
// profile that does not exist holds nothing and allows nothing).
func (g *Gateway) within(profile, ceiling string) bool {
	res := g.cat().resolved
	p, ok := res.Profiles[profile]
	if _, cok := res.Profiles[ceiling]; !ok || !cok {
		return false
	}
	for _, t := range p.Tools {
		if !res.Allowed(ceiling, t) {
			return false
		}
	}
	return true
}

// withinTokenCeiling is within for a token's ceiling, which bounds every
// request as the server's ceiling does (requestSnapshot): a profile with
// always_load lies within it when its always_load profile does, and is
// listed its other tools within the ceiling (withinCeiling). A path's
// profile bounds nothing after the check, so within judges that one.
func (g *Gateway) withinTokenCeiling(profile, ceiling string) bool {
	if p, ok := g.cat().resolved.Profiles[profile]; ok && p.AlwaysLoad != "" {
		return g.within(p.AlwaysLoad, ceiling)
	}
	return g.within(profile, ceiling)
}

// CheckCredential reports why a tokens-file entry could never be served:
// a profile or ceiling that does not exist, a profile beyond the server's
// ceiling or its own. The tokens file's loader calls it for each entry.
func (g *Gateway) CheckCredential(e tokens.Entry) error {
	res := g.cat().resolved
	for _, f := range []struct{ key, name string }{{"profile", e.Profile}, {"ceiling", e.Ceiling}} {
		if f.name == "" {
			continue
		}
		if _, ok := res.Profiles[f.name]; !ok {
			return fmt.Errorf("%s %q: no such profile; profiles: %s", f.key, f.name, strings.Join(res.Names(), ", "))
		}
	}
	if e.Profile == "" {
		return nil
	}
	if err := g.checkProfile(e.Profile); err != nil {
		return fmt.Errorf("profile: %w", err)
	}
	if e.Ceiling != "" && !g.withinTokenCeiling(e.Profile, e.Ceiling) {
		return fmt.Errorf("profile %q holds tools outside its ceiling %q", e.Profile, e.Ceiling)
	}
	return nil
}

// refusals counts requests refused for bad input (Health.Refused).
type refusals struct {
	headerMismatch atomic.Int64
	unknownToken   atomic.Int64
}

// RefusedHealth counts requests refused before they reached a profile.
type RefusedHealth struct {
	// HeaderMismatch: the Mcp-Protocol-Version header and the body's
	// _meta protocol version disagree, or the header is missing (-32020).
	HeaderMismatch int64 `json:"header_mismatch"`
	// UnknownToken: no bearer token, or one not in the tokens file (401).
	UnknownToken int64 `json:"unknown_token"`
}

func (r *refusals) health() RefusedHealth {
	return RefusedHealth{HeaderMismatch: r.headerMismatch.Load(), UnknownToken: r.unknownToken.Load()}
}
