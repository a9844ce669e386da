// Package oauthstore keeps the OAuth tokens toolprof holds for upstream MCP
// servers, in one JSON file shared by every toolprof process of the user.
//
// The file (DefaultPath: $TOOLPROF_TOKENS, else tokens.json in the
// toolprof directory of os.UserConfigDir) holds one entry per server and
// resource. It is written with mode 0600 in a 0700 directory, and a file
// that group or others may read is refused rather than used. Writers take
// an exclusive lock on PATH.lock, re-read the file and write it whole
// (atomically, by rename), so processes never lose each other's entries.
//
// A [Source] hands out one entry's access token and refreshes it shortly
// before it expires, or when the server refused it (a 401). Refreshes of
// one entry take a second lock, PATH.refresh-HASH.lock, so that when two
// sessions (or two processes) find the token expired at once, one
// refreshes and the other finds the new token already stored. The file's
// own lock is never held across network I/O: a refresh reads the entry
// under it, asks the authorization server without it, and writes back
// under it only when the entry is still the one it read, so a login (or
// any other writer) that stored tokens meanwhile is never overwritten.
// Every lock is waited for only as long as the caller's context and
// [Store.LockTimeout] allow, and a refresh is bounded by
// [Store.RefreshTimeout]: an authorization server that never answers
// fails the refresh, it does not freeze the processes sharing the file.
// A refresh token the
// authorization server rejects marks the entry as needing login; every
// later Token fails with an error wrapping [ErrNeedsLogin] until `profiler
// login` stores new tokens.
//
// Tokens, refresh tokens and client secrets never appear in an error, a
// String or a log value of this package.
package oauthstore

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sys/unix"

	"github.com/toolprof/toolprof/internal/atomicfile"
)

// EnvPath names the variable that moves the token file.
const EnvPath = "TOOLPROF_TOKENS"

// FileVersion is the version of the file format this package writes.
const FileVersion = 1

// RefreshBefore is how long before its expiry an access token is refreshed:
// a token about to expire could expire on its way to the server.
const RefreshBefore = time.Minute

// DefaultRefreshTimeout bounds a refresh when Store.RefreshTimeout is zero:
// generous for a slow authorization server, short enough that a session
// waiting for its token gives up and reports it.
const DefaultRefreshTimeout = 30 * time.Second

// DefaultLockTimeout bounds the wait for the file's lock when
// Store.LockTimeout is zero. The lock is held only to read and write the
// file, so a longer wait means a stuck process, not a busy one.
const DefaultLockTimeout = 10 * time.Second

// ErrNeedsLogin is wrapped by every error that only `profiler login` can
// cure: no tokens stored, tokens marked invalid, an expired access token
// without a refresh token, a refresh token the server rejected.
var ErrNeedsLogin = errors.New("needs login")

// DefaultPath returns $TOOLPROF_TOKENS when set, else
// os.UserConfigDir()/toolprof/tokens.json.
func DefaultPath() (string, error) {
	if p := os.Getenv(EnvPath); p != "" {
		return p, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", fmt.Errorf("token store: %w (set %s to a file path)", err, EnvPath)
	}
	return filepath.Join(dir, "toolprof", "tokens.json"), nil
}

// Key names an entry: the server's name in the launch document and the
// resource (the server's canonical URL) the tokens are for.
type Key struct {
	Server   string `json:"server"`
	Resource string `json:"resource"`
}

// Entry is what is stored for one Key.
type Entry struct {
	Key
	// Issuer is the authorization server that issued the tokens.
	Issuer string `json:"issuer,omitempty"`
	// TokenURL is its token endpoint, where refreshes go.
	TokenURL string `json:"token_url"`
	// ClientID is the client the tokens were issued to. ClientSecret is
	// kept only for a client toolprof registered itself; a pre-registered
	// client's secret stays in the launch document.
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// AuthStyle is how the client authenticates at the token endpoint
	// (oauth2.AuthStyle).
	AuthStyle    int       `json:"auth_style,omitempty"`
	AccessToken  string    `json:"access_token"`
	TokenType    string    `json:"token_type,omitempty"`
	RefreshToken string    `json:"refresh_token,omitempty"`
	Expiry       time.Time `json:"expiry,omitzero"` // zero: the server gave none
	// Scopes are the scopes granted (or, when the server did not say,
	// requested).
	Scopes []string `json:"scopes,omitempty"`
	// StepUp are scopes the server asked for (insufficient_scope) beyond
	// Scopes; the next login requests them too.
	StepUp []string `json:"step_up,omitempty"`
	// Invalid, when not empty, says why the tokens can no longer be used
	// (the refresh token was rejected, more scopes are needed).
	Invalid string `json:"invalid,omitempty"`
	// Updated is when the entry was last written.
	Updated time.Time `json:"updated"`
}

// Usable reports whether the access token can be sent at now: present,
// not marked invalid, and not within RefreshBefore of its expiry.
func (e *Entry) Usable(now time.Time) bool {
	return e.AccessToken != "" && e.Invalid == "" && (e.Expiry.IsZero() || now.Add(RefreshBefore).Before(e.Expiry))
}

// String shows the entry without its secrets.
func (e Entry) String() string {
	return fmt.Sprintf("server %q resource %s: %s", e.Server, e.Resource, e.Status(time.Now()))
}

// GoString is String, for %#v.
func (e Entry) GoString() string { return e.String() }

// LogValue logs String.
func (e Entry) LogValue() slog.Value { return slog.StringValue(e.String()) }

// Status describes the entry's tokens at now, never showing one.
func (e *Entry) Status(now time.Time) string {
	refresh := "no refresh token"
	if e.RefreshToken != "" {
		refresh = "refresh token stored"
	}
	switch {
	case e.Invalid != "":
		return "needs login: " + e.Invalid
	case e.AccessToken == "":
		return "needs login: no access token"
	case e.Expiry.IsZero():
		return "valid, no expiry given; " + refresh
	case !now.Before(e.Expiry):
		if e.RefreshToken == "" {
			return fmt.Sprintf("needs login: expired %s, no refresh token", e.Expiry.UTC().Format(time.RFC3339))
		}
		return fmt.Sprintf("expired %s; refresh token stored", e.Expiry.UTC().Format(time.RFC3339))
	}
	return fmt.Sprintf("valid until %s; %s", e.Expiry.UTC().Format(time.RFC3339), refresh)
}

// file is the stored form.
type file struct {
	Version int     `json:"version"`
	Entries []Entry `json:"entries"`
}

// Store is the token file at one path. Its methods are safe for
// concurrent use, and so is the file by several processes.
type Store struct {
	path string
	// HTTPClient sends refresh requests; nil means http.DefaultClient.
	// Its Timeout, if any, applies on top of RefreshTimeout.
	HTTPClient *http.Client
	// RefreshTimeout bounds one refresh: the wait for another refresh of
	// the same entry, then the request to the token endpoint, each at most
	// this long. Zero means DefaultRefreshTimeout.
	RefreshTimeout time.Duration
	// LockTimeout bounds the wait for the file's lock in Put and StepUp,
	// and in a refresh on top of the caller's context. Writing back the
	// tokens a refresh obtained waits longer (LockTimeout plus
	// RefreshTimeout) and outlives the caller's context: the server has
	// already consumed the old refresh token. Zero means
	// DefaultLockTimeout.
	LockTimeout time.Duration
	// Logger receives the failures to write refreshed tokens back (the
	// tokens are then kept in memory and written on the next refresh);
	// nil means slog.Default().
	Logger *slog.Logger
}

// Open returns the store at path; the file is created on the first write.
func Open(path string) *Store { return &Store{path: path} }

// Path is the token file.
func (s *Store) Path() string { return s.path }

// lock takes the exclusive lock of the file, across processes, until
// unlock; it gives up when ctx ends or after wait.
func (s *Store) lock(ctx context.Context, wait time.Duration) (unlock func(), err error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	return lockFile(ctx, s.path+".lock", s.path)
}

// refreshLock takes the lock that serializes refreshes of k's entry.
func (s *Store) refreshLock(ctx context.Context, k Key) (unlock func(), err error) {
	sum := sha256.Sum256([]byte(k.Server + "\x00" + k.Resource))
	return lockFile(ctx, s.path+".refresh-"+hex.EncodeToString(sum[:8])+".lock", s.path)
}

// lockFile takes an exclusive flock on path, polling without blocking so
// that the wait ends with ctx. store names the token file in errors.
func lockFile(ctx context.Context, path, store string) (unlock func(), err error) {
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("token store %s: %w", store, err)
	}
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("token store %s: %w", store, err)
	}
	start, wait := time.Now(), time.Millisecond
	var t *time.Timer
	for {
		err = unix.Flock(int(f.Fd()), unix.LOCK_EX|unix.LOCK_NB)
		if err == nil {
			if t != nil {
				t.Stop()
			}
			return func() { f.Close() }, nil // closing releases the lock
		}
		if err != unix.EWOULDBLOCK && err != unix.EINTR {
			f.Close()
			return nil, fmt.Errorf("token store %s: lock %s: %w", store, path, err)
		}
		if t == nil {
			t = time.NewTimer(wait)
		} else {
			t.Reset(wait)
		}
		select {
		case <-ctx.Done():
			t.Stop()
			f.Close()
			return nil, fmt.Errorf("token store %s: lock %s still held by another process after %v: %w",
				store, path, time.Since(start).Round(time.Millisecond), context.Cause(ctx))
		case <-t.C:
		}
		wait = min(2*wait, 50*time.Millisecond)
	}
}

// read loads the file; a missing file is an empty store.
func (s *Store) read() (*file, error) {
	f, err := os.Open(s.path)
	if errors.Is(err, os.ErrNotExist) {
		return &file{Version: FileVersion}, nil
	}
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	defer f.Close()
	info, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("token store: %w", err)
	}
	if info.Mode().Perm()&0o077 != 0 {
		return nil, fmt.Errorf("token store %s: mode %v lets others read the tokens; run chmod 600 %s", s.path, info.Mode().Perm(), s.path)
	}
	var out file
	dec := json.NewDecoder(f)
	dec.DisallowUnknownFields()
	if err := dec.Decode(&out); err != nil {
		// The decoder's message quotes no values, only offsets and types.
		return nil, fmt.Errorf("token store %s: not a token file (%v); move it away and run profiler login again", s.path, err)
	}
	if out.Version != FileVersion {
		return nil, fmt.Errorf("token store %s: version %d, want %d", s.path, out.Version, FileVersion)
	}
	return &out, nil
}

func (s *Store) write(f *file) error {
	slices.SortFunc(f.Entries, func(a, b Entry) int {
		return cmp.Or(strings.Compare(a.Server, b.Server), strings.Compare(a.Resource, b.Resource))
	})
	data, err := json.MarshalIndent(f, "", "  ")
	if err != nil {
		return fmt.Errorf("token store: %w", err)
	}
	return atomicfile.Write(s.path, append(data, '\n'), 0o600)
}

func (f *file) find(k Key) int {
	return slices.IndexFunc(f.Entries, func(e Entry) bool { return e.Key == k })
}

// update runs change on the entry of k under the lock (ok false when there
// is none) and writes the file when change returns write true.
func (s *Store) update(ctx context.Context, k Key, change func(e *Entry, ok bool) (write bool, err error)) error {
	return s.updateWithin(ctx, cmp.Or(s.LockTimeout, DefaultLockTimeout), k, change)
}

// updateWithin is update waiting at most wait for the lock.
func (s *Store) updateWithin(ctx context.Context, wait time.Duration, k Key, change func(e *Entry, ok bool) (write bool, err error)) error {
	unlock, err := s.lock(ctx, wait)
	if err != nil {
		return err
	}
	defer unlock()
	f, err := s.read()
	if err != nil {
		return err
	}
	i := f.find(k)
	var e Entry
	if i >= 0 {
		e = f.Entries[i]
	}
	write, err := change(&e, i >= 0)
	if !write {
		return err
	}
	e.Key, e.Updated = k, time.Now().UTC()
	if i >= 0 {
		f.Entries[i] = e
	} else {
		f.Entries = append(f.Entries, e)
	}
	if werr := s.write(f); werr != nil {
		return werr
	}
	return err
}

// Put stores e, replacing the entry of its Key.
func (s *Store) Put(e Entry) error {
	return s.update(context.Background(), e.Key, func(old *Entry, _ bool) (bool, error) {
		*old = e
		return true, nil
	})
}

// Get returns the entry of k.
func (s *Store) Get(k Key) (Entry, bool, error) {
	f, err := s.read()
	if err != nil {
		return Entry{}, false, err
	}
	if i := f.find(k); i >= 0 {
		return f.Entries[i], true, nil
	}
	return Entry{}, false, nil
}

// List returns every entry, sorted by server and resource.
func (s *Store) List() ([]Entry, error) {
	f, err := s.read()
	if err != nil {
		return nil, err
	}
	return f.Entries, nil
}

// StepUp records that the server of k asked for scopes it was not granted
// and marks the entry as needing login, so the next login requests them.
func (s *Store) StepUp(k Key, scopes []string) error {
	return s.update(context.Background(), k, func(e *Entry, _ bool) (bool, error) {
		for _, sc := range scopes {
			if !slices.Contains(e.Scopes, sc) && !slices.Contains(e.StepUp, sc) {
				e.StepUp = append(e.StepUp, sc)
			}
		}
		e.Invalid = "the server asked for more scopes: " + strings.Join(scopes, " ")
		return true, nil
	})
}

// LoginError says why an entry needs login; it wraps ErrNeedsLogin.
type LoginError struct {
	Key    Key
	Reason string // never holds a token
}

func (e *LoginError) Error() string {
	return fmt.Sprintf("server %q: %s: %s", e.Key.Server, ErrNeedsLogin, e.Reason)
}

func (e *LoginError) Unwrap() error { return ErrNeedsLogin }

// Source hands out the access token of one entry, refreshing it when
// needed. ClientSecret is the pre-registered client's secret from the
// launch document ("" to use the stored one).
type Source struct {
	store        *Store
	key          Key
	clientSecret string

	mu     sync.Mutex
	cached Entry // the entry last read or written; AccessToken "" before
	// unsaved holds refreshed tokens the file could not take; nil when
	// the file holds what this Source hands out.
	unsaved *unsavedRefresh
}

// unsavedRefresh is a refresh's result not yet in the file: after replaces
// the entry when the file still holds before.
type unsavedRefresh struct{ before, after Entry }

// Source returns the Source of the entry of k.
func (s *Store) Source(k Key, clientSecret string) *Source {
	return &Source{store: s, key: k, clientSecret: clientSecret}
}

// Key is the entry the Source hands out.
func (src *Source) Key() Key { return src.key }

// Token returns a usable access token, refreshing it when it is within
// RefreshBefore of its expiry. The error wraps ErrNeedsLogin when only a
// login can help.
func (src *Source) Token(ctx context.Context) (*oauth2.Token, error) {
	src.mu.Lock()
	e := src.cached
	src.mu.Unlock()
	if e.Usable(time.Now()) {
		return token(&e), nil
	}
	return src.refresh(ctx, "")
}

// Refresh replaces an access token the server refused: rejected is that
// token. When the stored token is already another one (another session
// refreshed it), that one is returned without asking the server.
func (src *Source) Refresh(ctx context.Context, rejected string) (*oauth2.Token, error) {
	return src.refresh(ctx, rejected)
}

func token(e *Entry) *oauth2.Token {
	return &oauth2.Token{AccessToken: e.AccessToken, TokenType: cmp.Or(e.TokenType, "Bearer"), Expiry: e.Expiry}
}

func (src *Source) refresh(ctx context.Context, rejected string) (*oauth2.Token, error) {
	out, err := src.refreshEntry(ctx, rejected)
	if err != nil {
		src.remember(Entry{}) // a refused token is not handed out again
	}
	return out, err
}

// refreshEntry holds the entry's refresh lock while it refreshes, and the
// file's lock only to read the entry and to write the new tokens back.
func (src *Source) refreshEntry(ctx context.Context, rejected string) (*oauth2.Token, error) {
	timeout := cmp.Or(src.store.RefreshTimeout, DefaultRefreshTimeout)
	lctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("another refresh of server %q took longer than %v", src.key.Server, timeout))
	unlock, err := src.store.refreshLock(lctx, src.key)
	cancel()
	if err != nil {
		return nil, err
	}
	defer unlock()
	if err := src.flush(ctx); err != nil {
		// The file still holds the refresh token this Source redeemed:
		// refreshing from it would be refused and cost the login.
		return nil, err
	}

	var out *oauth2.Token
	var before Entry
	due := false
	err = src.store.update(ctx, src.key, func(e *Entry, ok bool) (bool, error) {
		if !ok {
			return false, &LoginError{Key: src.key, Reason: "no tokens stored"}
		}
		if e.Invalid != "" {
			return false, &LoginError{Key: src.key, Reason: e.Invalid}
		}
		if e.Usable(time.Now()) && (rejected == "" || e.AccessToken != rejected) {
			out = token(e)
			src.remember(*e)
			return false, nil
		}
		if e.RefreshToken == "" {
			reason := "access token expired and no refresh token stored"
			if rejected != "" {
				reason = "access token refused by the server and no refresh token stored"
			}
			e.Invalid = reason
			return true, &LoginError{Key: src.key, Reason: reason}
		}
		before, due = *e, true
		return false, nil
	})
	if err != nil || !due {
		return out, err
	}

	xctx, cancel := context.WithTimeoutCause(ctx, timeout, fmt.Errorf("no answer within %v (the token store's refresh timeout)", timeout))
	defer cancel()
	tok, code, xerr := src.exchange(xctx, &before)

	// The server has consumed the old refresh token: the write-back
	// outlives the caller and waits longer for the lock.
	wctx := context.WithoutCancel(ctx)
	wait := cmp.Or(src.store.LockTimeout, DefaultLockTimeout) + timeout
	var ran, wrote bool
	err = src.store.updateWithin(wctx, wait, src.key, func(e *Entry, ok bool) (bool, error) {
		ran = true
		if !ok {
			// The entry was removed meanwhile (a logout): that wins, the
			// new tokens are neither written nor handed out.
			return false, &LoginError{Key: src.key, Reason: "tokens removed while they were refreshed"}
		}
		if !sameTokens(e, &before) {
			// Another writer (a login, a refresh elsewhere) stored tokens
			// meanwhile: theirs stay, and are handed out when usable.
			if e.Invalid != "" {
				return false, &LoginError{Key: src.key, Reason: e.Invalid}
			}
			if e.Usable(time.Now()) && e.AccessToken != rejected {
				out = token(e)
				src.remember(*e)
				return false, nil
			}
			if xerr == nil {
				out = token(refreshed(before, tok))
				return false, nil
			}
			return false, xerr
		}
		switch {
		case xerr == nil:
		case code == "invalid_grant" || code == "invalid_client" || code == "unauthorized_client":
			e.Invalid = "the authorization server rejected the refresh token (" + code + ")"
			return true, &LoginError{Key: src.key, Reason: e.Invalid}
		default:
			return false, xerr
		}
		*e = *refreshed(*e, tok)
		out = token(e)
		src.remember(*e)
		wrote = true
		return true, nil
	})
	if err != nil && xerr == nil && (!ran || wrote) {
		// The lock, the read or the write failed: the tokens the server
		// issued are kept and handed out, and written on the next refresh.
		after := *refreshed(before, tok)
		src.mu.Lock()
		src.cached, src.unsaved = after, &unsavedRefresh{before: before, after: after}
		src.mu.Unlock()
		cmp.Or(src.store.Logger, slog.Default()).Warn("token store: refreshed tokens kept in memory, not written; writing them again on the next refresh",
			"server", src.key.Server, "err", err)
		return token(&after), nil
	}
	return out, err
}

// flush writes tokens an earlier refresh could not write, unless the file
// changed meanwhile: a login's tokens stay, and a removed entry (a logout)
// stays removed, and is no longer handed out from memory.
func (src *Source) flush(ctx context.Context) error {
	src.mu.Lock()
	u := src.unsaved
	src.mu.Unlock()
	if u == nil {
		return nil
	}
	removed := false
	err := src.store.update(ctx, src.key, func(e *Entry, ok bool) (bool, error) {
		if !ok || !sameTokens(e, &u.before) {
			removed = !ok
			return false, nil
		}
		*e = u.after
		return true, nil
	})
	if err != nil {
		return err
	}
	src.mu.Lock()
	if src.unsaved == u {
		src.unsaved = nil
		if removed {
			src.cached = Entry{}
		}
	}
	src.mu.Unlock()
	return nil
}

// sameTokens reports whether a and b hold the same tokens and state, that
// is, nobody wrote the entry between the two reads.
func sameTokens(a, b *Entry) bool {
	return a.AccessToken == b.AccessToken && a.RefreshToken == b.RefreshToken && a.Invalid == b.Invalid &&
		a.ClientID == b.ClientID && a.TokenURL == b.TokenURL && a.Updated.Equal(b.Updated)
}

// refreshed is e with the tokens of a refresh.
func refreshed(e Entry, tok *oauth2.Token) *Entry {
	e.AccessToken, e.TokenType, e.Expiry = tok.AccessToken, tok.TokenType, tok.Expiry
	if tok.RefreshToken != "" { // rotated
		e.RefreshToken = tok.RefreshToken
	}
	if sc, ok := tok.Extra("scope").(string); ok && sc != "" {
		e.Scopes = strings.Fields(sc)
	}
	return &e
}

func (src *Source) remember(e Entry) {
	src.mu.Lock()
	src.cached = e
	src.mu.Unlock()
}

// exchange redeems e's refresh token, returning the token endpoint's
// error code on failure. Its error never quotes the endpoint's body,
// which could echo a token.
func (src *Source) exchange(ctx context.Context, e *Entry) (*oauth2.Token, string, error) {
	cfg := &oauth2.Config{
		ClientID:     e.ClientID,
		ClientSecret: cmp.Or(src.clientSecret, e.ClientSecret),
		Endpoint:     oauth2.Endpoint{TokenURL: e.TokenURL, AuthStyle: oauth2.AuthStyle(e.AuthStyle)},
	}
	client := *cmp.Or(src.store.HTTPClient, http.DefaultClient)
	client.Transport = resourceParam{base: cmp.Or(client.Transport, http.DefaultTransport), resource: e.Resource}
	// A redirect is answered as the endpoint's own failure, never
	// followed: http.Client sends a 307's or 308's body again, and the body
	// holds the refresh token and, for some servers, the client secret.
	client.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	tok, err := cfg.TokenSource(context.WithValue(ctx, oauth2.HTTPClient, &client), &oauth2.Token{RefreshToken: e.RefreshToken}).Token()
	var re *oauth2.RetrieveError
	switch {
	case err == nil && tok.AccessToken == "":
		return nil, "", fmt.Errorf("server %q: refresh at %s: the token endpoint returned no access token", src.key.Server, e.TokenURL)
	case err == nil:
		return tok, "", nil
	case ctx.Err() != nil:
		return nil, "", fmt.Errorf("server %q: refresh at %s: %w", src.key.Server, e.TokenURL, context.Cause(ctx))
	case errors.As(err, &re):
		status := "no response"
		if re.Response != nil {
			status = re.Response.Status
		}
		return nil, re.ErrorCode, fmt.Errorf("server %q: refresh at %s: %s %s", src.key.Server, e.TokenURL, status, re.ErrorCode)
	}
	var ue *url.Error
	if errors.As(err, &ue) {
		return nil, "", fmt.Errorf("server %q: refresh at %s: %w", src.key.Server, e.TokenURL, ue.Err)
	}
	return nil, "", fmt.Errorf("server %q: refresh at %s failed", src.key.Server, e.TokenURL)
}

// resourceParam adds the resource the tokens are for to every token
// request (RFC 8707; the MCP authorization spec requires it in token
// requests), which oauth2's refresh does not send.
type resourceParam struct {
	base     http.RoundTripper
	resource string
}

func (t resourceParam) RoundTrip(r *http.Request) (*http.Response, error) {
	if t.resource == "" || r.Body == nil {
		return t.base.RoundTrip(r)
	}
	body, err := io.ReadAll(r.Body)
	r.Body.Close()
	if err != nil {
		return nil, err
	}
	form, err := url.ParseQuery(string(body))
	if err != nil {
		return nil, fmt.Errorf("token request: %w", err)
	}
	form.Set("resource", t.resource)
	enc := form.Encode()
	r = r.Clone(r.Context())
	r.Body, r.ContentLength = io.NopCloser(strings.NewReader(enc)), int64(len(enc))
	r.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(strings.NewReader(enc)), nil }
	return t.base.RoundTrip(r)
}

// Put stores e (a login's tokens) as the Source's entry and hands it out
// from now on.
func (src *Source) Put(e Entry) error {
	e.Key = src.key
	if err := src.store.Put(e); err != nil {
		return err
	}
	src.mu.Lock()
	src.cached, src.unsaved = e, nil // a login's tokens replace unsaved ones
	src.mu.Unlock()
	return nil
}

// StepUp is Store.StepUp for the Source's entry; the token the server
// found wanting is not handed out again.
func (src *Source) StepUp(scopes []string) error {
	src.remember(Entry{})
	return src.store.StepUp(src.key, scopes)
}
