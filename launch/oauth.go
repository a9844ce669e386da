package launch

import (
	"encoding/json"
	"net/url"
	"slices"
	"strings"
)

// OAuth is the "oauth" key of an HTTP server entry: toolprof authorizes
// itself to the server with OAuth 2.1 (the MCP authorization spec). "oauth":
// {} discovers everything (protected resource and authorization server
// metadata, dynamic client registration); the fields override discovery.
type OAuth struct {
	// ClientID is a client registered beforehand with the authorization
	// server; "" registers one dynamically (or uses ClientMetadataURL).
	ClientID string `json:"client_id,omitempty" toml:"client_id,omitempty"`
	// ClientSecret is ClientID's secret, usually "${VAR}"; "" for a public
	// client. Its resolved value is a secret like any ${VAR} value.
	ClientSecret string `json:"client_secret,omitempty" toml:"client_secret,omitempty"`
	// ClientMetadataURL is an https URL of a client ID metadata document
	// toolprof is known by, used when the authorization server supports
	// them.
	ClientMetadataURL string `json:"client_metadata_url,omitempty" toml:"client_metadata_url,omitempty"`
	// Scopes are requested instead of the ones the server advertises; nil
	// requests those.
	Scopes []string `json:"scopes,omitempty" toml:"scopes,omitempty"`
	// RedirectPort is the loopback port `profiler login` receives the code
	// on (http://127.0.0.1:PORT/callback); 0 picks a free one, which a
	// pre-registered client's authorization server must allow.
	RedirectPort int `json:"redirect_port,omitempty" toml:"redirect_port,omitempty"`
}

// ResolvedOAuth is OAuth with its variables resolved. ClientSecret is a
// secret.
type ResolvedOAuth struct {
	ClientID          string
	ClientSecret      string
	ClientMetadataURL string
	Scopes            []string
	RedirectPort      int
}

// oauth decodes the "oauth" object of server name, starting at base.
func (p *parser) oauth(name string, base int64, raw json.RawMessage) (*OAuth, error) {
	o := &OAuth{}
	has := map[string]int64{}
	err := p.object(raw, base, name, `"oauth"`, "oauth.", func(key string, keyOff, _ int64, raw json.RawMessage) error {
		has[key] = keyOff
		var target any
		want := "a string"
		switch key {
		case "client_id":
			target = &o.ClientID
		case "client_secret":
			target = &o.ClientSecret
		case "client_metadata_url":
			target = &o.ClientMetadataURL
		case "scopes":
			target, want = &o.Scopes, "an array of strings"
		case "redirect_port":
			target, want = &o.RedirectPort, "an integer port from 1 to 65535"
		default:
			return p.fail(keyOff, name, "oauth."+key, "unknown key; valid keys: client_id, client_secret, client_metadata_url, scopes, redirect_port")
		}
		if string(raw) == "null" || json.Unmarshal(raw, target) != nil {
			return p.fail(keyOff, name, "oauth."+key, "want %s, got %s", want, kind(raw))
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if off, ok := has["redirect_port"]; ok && (o.RedirectPort < 1 || o.RedirectPort > 65535) {
		return nil, p.fail(off, name, "oauth.redirect_port", "want an integer port from 1 to 65535, got %d", o.RedirectPort)
	}
	if off, ok := has["client_secret"]; ok && o.ClientID == "" {
		return nil, p.fail(off, name, "oauth.client_secret", "needs oauth.client_id: a secret belongs to a pre-registered client")
	}
	for _, s := range o.Scopes {
		if s == "" || strings.ContainsAny(s, " \t\r\n\"\\") {
			return nil, p.fail(has["scopes"], name, "oauth.scopes", "invalid scope %q: a scope is one word without spaces, quotes or backslashes", s)
		}
	}
	if off, ok := has["client_metadata_url"]; ok {
		if u, err := url.Parse(o.ClientMetadataURL); err != nil || u.Scheme != "https" || strings.Trim(u.Path, "/") == "" {
			return nil, p.fail(off, name, "oauth.client_metadata_url", "want an https URL with a path, such as https://example.com/client.json")
		}
	}
	return o, nil
}

// checkOAuth refuses what contradicts an "oauth" key in an entry: it
// authorizes HTTP servers only and sets the Authorization header itself.
func (p *parser) checkOAuth(name string, e entry, s Server) error {
	off, ok := e.has["oauth"]
	if !ok {
		return nil
	}
	if s.Transport != StreamableHTTP {
		return p.fail(off, name, "oauth", "not valid for a stdio server (OAuth authorizes HTTP servers)")
	}
	for k := range e.headers {
		if strings.EqualFold(k, "Authorization") {
			return p.fail(e.has["headers"], name, "headers", `an "Authorization" header and "oauth" contradict each other: drop one`)
		}
	}
	return nil
}

// resolveOAuth expands the templates of o.
func (r *resolver) resolveOAuth(o *OAuth) *ResolvedOAuth {
	if o == nil {
		return nil
	}
	ro := &ResolvedOAuth{
		ClientID:          r.expand("oauth.client_id", o.ClientID),
		ClientSecret:      r.expand("oauth.client_secret", o.ClientSecret),
		ClientMetadataURL: r.expand("oauth.client_metadata_url", o.ClientMetadataURL),
		Scopes:            slices.Clone(o.Scopes),
		RedirectPort:      o.RedirectPort,
	}
	if ro.ClientSecret != "" {
		// A secret typed into the file is a secret all the same.
		r.secrets[ro.ClientSecret] = true
	}
	return ro
}

// redacted returns o with a client_secret that holds literal text
// replaced by Redaction.
func (o *OAuth) redacted() *OAuth {
	if o == nil {
		return nil
	}
	out := *o
	out.Scopes = slices.Clone(o.Scopes)
	if o.ClientSecret != "" && !onlyReferences(o.ClientSecret) {
		out.ClientSecret = Redaction
	}
	return &out
}
