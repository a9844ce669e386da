package oauthstore

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/oauth2"
	"golang.org/x/sys/unix"

	"github.com/toolprof/toolprof/internal/fakeoauth"
)

// fixture is a fake authorization server with a pre-registered client and
// a store holding one entry for it.
type fixture struct {
	as     *fakeoauth.Server
	path   string
	key    Key
	secret string
	entry  Entry
}

func newFixture(t *testing.T, lifetime time.Duration) *fixture {
	t.Helper()
	as := fakeoauth.New()
	t.Cleanup(as.Close)
	const secret = "client-secret-value"
	as.Register("toolprof", secret)
	access, refresh, expiry := as.Mint("toolprof", []string{"read"}, lifetime)
	f := &fixture{as: as, path: filepath.Join(t.TempDir(), "cfg", "toolprof", "tokens.json"),
		key: Key{Server: "remote", Resource: "https://mcp.example/mcp"}, secret: secret}
	f.entry = Entry{Key: f.key, Issuer: as.URL, TokenURL: as.URL + "/token", ClientID: "toolprof",
		AccessToken: access, TokenType: "Bearer", RefreshToken: refresh, Expiry: expiry, Scopes: []string{"read"}}
	if err := Open(f.path).Put(f.entry); err != nil {
		t.Fatal(err)
	}
	return f
}

func TestFileMode(t *testing.T) {
	f := newFixture(t, time.Hour)
	for path, want := range map[string]os.FileMode{f.path: 0o600, filepath.Dir(f.path): 0o700 | os.ModeDir} {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if info.Mode() != want {
			t.Errorf("%s: mode %v, want %v", path, info.Mode(), want)
		}
	}
	// A refresh rewrites the file: still 0600.
	if err := Open(f.path).Put(f.entry); err != nil {
		t.Fatal(err)
	}
	if info, _ := os.Stat(f.path); info.Mode() != 0o600 {
		t.Errorf("after a rewrite: mode %v, want 0600", info.Mode())
	}
}

func TestRefusesFileOthersCanRead(t *testing.T) {
	f := newFixture(t, time.Hour)
	if err := os.Chmod(f.path, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := Open(f.path).Source(f.key, f.secret).Token(context.Background())
	if err == nil || !strings.Contains(err.Error(), "chmod 600") {
		t.Fatalf("err = %v, want a refusal naming chmod 600", err)
	}
}

func TestDefaultPath(t *testing.T) {
	t.Setenv(EnvPath, "/elsewhere/tokens.json")
	if p, err := DefaultPath(); err != nil || p != "/elsewhere/tokens.json" {
		t.Errorf("DefaultPath() = %q, %v; want the %s value", p, err, EnvPath)
	}
	t.Setenv(EnvPath, "")
	t.Setenv("XDG_CONFIG_HOME", "/cfg")
	if p, err := DefaultPath(); err != nil || p != "/cfg/toolprof/tokens.json" {
		t.Errorf("DefaultPath() = %q, %v; want /cfg/toolprof/tokens.json", p, err)
	}
}

// Two sessions (two stores on one file, as two gateway processes) find the
// token expired at once: one refreshes, both get the new token.
func TestConcurrentRefreshOnce(t *testing.T) {
	f := newFixture(t, -time.Minute)
	srcs := []*Source{Open(f.path).Source(f.key, f.secret), Open(f.path).Source(f.key, f.secret)}
	var wg sync.WaitGroup
	got := make([]string, len(srcs))
	errs := make([]error, len(srcs))
	start := make(chan struct{})
	for i, src := range srcs {
		wg.Go(func() {
			<-start
			tok, err := src.Token(context.Background())
			errs[i] = err
			if err == nil {
				got[i] = tok.AccessToken
			}
		})
	}
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := f.as.Refreshes(); n != 1 {
		t.Errorf("%d refreshes, want 1", n)
	}
	if got[0] != got[1] || got[0] == f.entry.AccessToken {
		t.Errorf("tokens %q and %q: want the same new token", got[0], got[1])
	}
	e, _, err := Open(f.path).Get(f.key)
	if err != nil || e.AccessToken != got[0] || e.RefreshToken == f.entry.RefreshToken {
		t.Errorf("stored entry not the refreshed one (rotated refresh token): err %v", err)
	}
}

func TestRefreshAfterRejection(t *testing.T) {
	f := newFixture(t, time.Hour)
	src := Open(f.path).Source(f.key, f.secret)
	tok, err := src.Token(context.Background())
	if err != nil || tok.AccessToken != f.entry.AccessToken || f.as.Refreshes() != 0 {
		t.Fatalf("Token() = %v, %v after %d refreshes; want the stored token, no refresh", tok, err, f.as.Refreshes())
	}
	// The server refused it: refreshed although not expired.
	fresh, err := src.Refresh(context.Background(), tok.AccessToken)
	if err != nil || fresh.AccessToken == tok.AccessToken || f.as.Refreshes() != 1 {
		t.Fatalf("Refresh() = %v, %v after %d refreshes; want a new token from one refresh", fresh, err, f.as.Refreshes())
	}
	// Another session refused the old token too: it gets the new one
	// without a second refresh.
	other, err := Open(f.path).Source(f.key, f.secret).Refresh(context.Background(), tok.AccessToken)
	if err != nil || other.AccessToken != fresh.AccessToken || f.as.Refreshes() != 1 {
		t.Fatalf("second Refresh() = %v, %v after %d refreshes; want the first one's token", other, err, f.as.Refreshes())
	}
}

func TestNeedsLogin(t *testing.T) {
	for _, tt := range []struct {
		name   string
		setup  func(f *fixture)
		reason string
	}{
		{"revoked refresh token", func(f *fixture) { f.as.RevokeAll() }, "rejected the refresh token (invalid_grant)"},
		{"no refresh token", func(f *fixture) {
			e := f.entry
			e.RefreshToken = ""
			if err := Open(f.path).Put(e); err != nil {
				panic(err)
			}
		}, "access token expired and no refresh token stored"},
		{"no entry", func(f *fixture) { f.key.Server = "other" }, "no tokens stored"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := newFixture(t, -time.Minute)
			tt.setup(f)
			src := Open(f.path).Source(f.key, f.secret)
			_, err := src.Token(context.Background())
			if !errors.Is(err, ErrNeedsLogin) || !strings.Contains(err.Error(), tt.reason) {
				t.Fatalf("err = %v, want ErrNeedsLogin because %s", err, tt.reason)
			}
			// Marked: the next try does not ask the server again.
			before := f.as.Refreshes()
			if _, err := src.Token(context.Background()); !errors.Is(err, ErrNeedsLogin) || f.as.Refreshes() != before {
				t.Errorf("second Token: %v after %d more refreshes", err, f.as.Refreshes()-before)
			}
		})
	}
}

func TestStepUp(t *testing.T) {
	f := newFixture(t, time.Hour)
	s := Open(f.path)
	if err := s.StepUp(f.key, []string{"read", "write"}); err != nil {
		t.Fatal(err)
	}
	e, _, _ := s.Get(f.key)
	if fmt.Sprint(e.StepUp) != "[write]" {
		t.Errorf("StepUp = %v, want [write] (read is granted)", e.StepUp)
	}
	if _, err := s.Source(f.key, f.secret).Token(context.Background()); !errors.Is(err, ErrNeedsLogin) {
		t.Errorf("Token after a step-up request: %v, want ErrNeedsLogin", err)
	}
}

// No token, refresh token or client secret in an error, a String or a
// status, even when the token endpoint echoes the refresh token.
func TestNoTokenInOutput(t *testing.T) {
	f := newFixture(t, -time.Minute)
	f.as.RevokeAll()
	src := Open(f.path).Source(f.key, f.secret)
	_, err := src.Token(context.Background())
	if err == nil {
		t.Fatal("want an error")
	}
	e, _, _ := Open(f.path).Get(f.key)
	e.ClientSecret = "dyn-secret-value"
	out := err.Error() + e.String() + fmt.Sprintf("%v %+v %#v", e, e, e) + e.Status(time.Now())
	for _, secret := range []string{f.entry.AccessToken, f.entry.RefreshToken, f.secret, e.ClientSecret} {
		if strings.Contains(out, secret) {
			t.Errorf("output holds a secret %q: %s", secret, out)
		}
	}
}

// heldEndpoint is a token endpoint that accepts each request and answers
// only after answer, with the access token access; arrived receives once
// per request. A client that gives up first gets nothing.
type heldEndpoint struct {
	url     string
	arrived chan struct{}
	release chan struct{}
	answer  func()
}

func newHeldEndpoint(t *testing.T, access string) *heldEndpoint {
	t.Helper()
	h := &heldEndpoint{arrived: make(chan struct{}, 16), release: make(chan struct{})}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.arrived <- struct{}{}
		select {
		case <-h.release:
		case <-r.Context().Done():
			return
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":%q,"token_type":"Bearer","expires_in":3600}`, access)
	}))
	t.Cleanup(ts.Close)
	h.answer = sync.OnceFunc(func() { close(h.release) })
	t.Cleanup(h.answer) // runs before ts.Close
	h.url = ts.URL + "/token"
	return h
}

// storeWithExpired is a store at a new path holding an expired entry whose
// refreshes go to tokenURL.
func storeWithExpired(t *testing.T, tokenURL string) (*Store, Entry) {
	t.Helper()
	s := Open(filepath.Join(t.TempDir(), "tokens.json"))
	e := Entry{Key: Key{Server: "remote", Resource: "https://mcp.example/mcp"}, TokenURL: tokenURL, ClientID: "c",
		AccessToken: "expired-access", RefreshToken: "refresh", Expiry: time.Now().Add(-time.Hour)}
	if err := s.Put(e); err != nil {
		t.Fatal(err)
	}
	return s, e
}

// within runs f and fails the test when it has not returned after d, the
// sign that it blocks for good.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s still blocked after %v", what, d)
	}
}

// A token endpoint that accepts and never answers fails the refresh after
// RefreshTimeout, with an error naming the server, the endpoint and the
// timeout.
func TestRefreshTimeoutOnSilentTokenEndpoint(t *testing.T) {
	h := newHeldEndpoint(t, "never-sent")
	s, e := storeWithExpired(t, h.url)
	s.RefreshTimeout = 200 * time.Millisecond
	var err error
	within(t, 20*time.Second, "refresh", func() { _, err = s.Source(e.Key, "").Token(context.Background()) })
	for _, want := range []string{`server "remote"`, h.url, "no answer within 200ms"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("err = %v, want one naming %s", err, want)
		}
	}
	if errors.Is(err, ErrNeedsLogin) {
		t.Errorf("err = %v: a silent server is no reason to log in again", err)
	}
}

// While a refresh waits for the token endpoint, another process can still
// write the file: `profiler login` is not locked out.
func TestPutWhileRefreshWaits(t *testing.T) {
	h := newHeldEndpoint(t, "from-refresh")
	s, e := storeWithExpired(t, h.url)
	s.RefreshTimeout = time.Hour
	go s.Source(e.Key, "").Token(context.Background())
	<-h.arrived
	login := e
	login.AccessToken, login.Expiry = "from-login", time.Now().Add(time.Hour)
	within(t, 10*time.Second, "Put during a refresh", func() {
		if err := Open(s.Path()).Put(login); err != nil {
			t.Error(err)
		}
	})
}

// Tokens another process stores while a refresh is under way are kept:
// the refresh hands them out and does not overwrite them with its own.
func TestRefreshKeepsTokensStoredMeanwhile(t *testing.T) {
	h := newHeldEndpoint(t, "from-refresh")
	s, e := storeWithExpired(t, h.url)
	type result struct {
		access string
		err    error
	}
	got := make(chan result, 1)
	go func() {
		tok, err := s.Source(e.Key, "").Token(context.Background())
		if err != nil {
			got <- result{err: err}
			return
		}
		got <- result{access: tok.AccessToken}
	}()
	<-h.arrived
	login := e
	login.AccessToken, login.RefreshToken, login.Expiry = "from-login", "login-refresh", time.Now().Add(time.Hour)
	within(t, 10*time.Second, "Put during a refresh", func() {
		if err := Open(s.Path()).Put(login); err != nil {
			t.Error(err)
		}
	})
	h.answer()
	r := <-got
	if r.err != nil || r.access != "from-login" {
		t.Errorf("Token() = %q, %v; want the token stored meanwhile, from-login", r.access, r.err)
	}
	stored, _, err := s.Get(e.Key)
	if err != nil || stored.AccessToken != "from-login" || stored.RefreshToken != "login-refresh" {
		t.Errorf("stored access token %q (err %v): the login's tokens were overwritten", stored.AccessToken, err)
	}
}

// A refresh names the resource its tokens are for (RFC 8707), as the
// initial token request does.
func TestRefreshSendsResource(t *testing.T) {
	var form url.Values
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := r.ParseForm(); err != nil {
			t.Error(err)
		}
		form = r.PostForm
		w.Header().Set("Content-Type", "application/json")
		w.Write([]byte(`{"access_token":"new","token_type":"Bearer","expires_in":3600}`))
	}))
	defer ts.Close()
	s, e := storeWithExpired(t, ts.URL)
	if _, err := s.Source(e.Key, "").Token(context.Background()); err != nil {
		t.Fatal(err)
	}
	for key, want := range map[string]string{"grant_type": "refresh_token", "refresh_token": "refresh", "resource": e.Resource} {
		if got := form.Get(key); got != want {
			t.Errorf("refresh form %s = %q, want %q", key, got, want)
		}
	}
}

// A token endpoint that redirects is refused, not followed: whatever the
// status, the other host never sees the refresh request's body, which
// holds the refresh token.
func TestRefreshRefusesRedirects(t *testing.T) {
	for _, status := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		t.Run(strconv.Itoa(status), func(t *testing.T) {
			var reached atomic.Int32
			other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				reached.Add(1)
				w.Header().Set("Content-Type", "application/json")
				w.Write([]byte(`{"access_token":"stolen","token_type":"Bearer","expires_in":3600}`))
			}))
			defer other.Close()
			ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				http.Redirect(w, r, other.URL+"/token?code=secret-looking", status)
			}))
			defer ts.Close()
			s, e := storeWithExpired(t, ts.URL)
			_, err := s.Source(e.Key, "").Token(context.Background())
			if err == nil || !strings.Contains(err.Error(), strconv.Itoa(status)) {
				t.Errorf("refresh redirected with %d: %v, want the endpoint's %d as the failure", status, err, status)
			}
			if err != nil && strings.Contains(err.Error(), "secret-looking") {
				t.Errorf("refresh error quotes the redirect's target: %v", err)
			}
			if n := reached.Load(); n != 0 {
				t.Errorf("the redirect's target got %d requests, want none", n)
			}
		})
	}
}

// A process that holds the file's lock and never lets go (stuck, or
// stopped in a debugger) makes writers give up after LockTimeout, naming
// the lock, rather than wait with it.
func TestLockWaitBounded(t *testing.T) {
	f := newFixture(t, time.Hour)
	held, err := os.OpenFile(f.path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	defer held.Close()
	if err := unix.Flock(int(held.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	s := Open(f.path)
	s.LockTimeout = 100 * time.Millisecond
	within(t, 20*time.Second, "Put on a held lock", func() { err = s.Put(f.entry) })
	if err == nil || !strings.Contains(err.Error(), "still held by another process") || !strings.Contains(err.Error(), f.path+".lock") {
		t.Errorf("Put on a held lock: %v, want an error naming the lock held by another process", err)
	}
}

// Tokens a refresh obtained are not lost when the file's lock stays held
// past the write-back's wait: the server has consumed the old refresh
// token, so the new tokens are handed out from memory and written on the
// next refresh, which then redeems the rotated refresh token, not the
// consumed one.
func TestRefreshKeepsTokensTheFileCouldNotTake(t *testing.T) {
	var path string
	var held *os.File
	var mu sync.Mutex // the handler's goroutine and the test's
	var redeemed []string
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.ParseForm()
		mu.Lock()
		defer mu.Unlock()
		redeemed = append(redeemed, r.PostForm.Get("refresh_token"))
		n := len(redeemed)
		if n == 1 { // another process takes the file's lock and keeps it
			f, err := os.OpenFile(path+".lock", os.O_RDWR|os.O_CREATE, 0o600)
			if err != nil {
				t.Error(err)
			} else if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
				t.Error(err)
			}
			held = f
		}
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"access_token":"access-%d","refresh_token":"rotated-%d","token_type":"Bearer","expires_in":3600}`, n, n)
	}))
	defer ts.Close()
	s, e := storeWithExpired(t, ts.URL)
	path = s.Path()
	s.LockTimeout, s.RefreshTimeout = 100*time.Millisecond, 200*time.Millisecond
	var log strings.Builder
	s.Logger = slog.New(slog.NewTextHandler(&log, nil))
	src := s.Source(e.Key, "")
	var tok *oauth2.Token
	var err error
	within(t, 20*time.Second, "refresh with the lock held", func() { tok, err = src.Token(context.Background()) })
	if err != nil || tok.AccessToken != "access-1" {
		t.Fatalf("Token() with the file's lock held at write-back = %v, %v; want access-1 from memory", tok, err)
	}
	if stored, _, _ := s.Get(e.Key); stored.RefreshToken != "refresh" {
		t.Fatalf("stored refresh token %q while the lock was held, want the old one", stored.RefreshToken)
	}
	if !strings.Contains(log.String(), "not written") || strings.Contains(log.String(), "rotated-1") {
		t.Errorf("log %q, want the failed write reported without the token", log.String())
	}
	mu.Lock()
	held.Close()
	mu.Unlock()
	if tok, err = src.Refresh(context.Background(), "access-1"); err != nil || tok.AccessToken != "access-2" {
		t.Fatalf("Refresh() after the lock was released = %v, %v; want access-2", tok, err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := "[refresh rotated-1]"; fmt.Sprint(redeemed) != want {
		t.Errorf("refresh tokens redeemed %v, want %s: the rotated one, not the consumed one", redeemed, want)
	}
	if stored, _, _ := s.Get(e.Key); stored.RefreshToken != "rotated-2" || stored.AccessToken != "access-2" {
		t.Errorf("stored tokens %q/%q, want access-2/rotated-2", stored.AccessToken, stored.RefreshToken)
	}
}

// An entry removed while its refresh waits for the token endpoint (a
// logout) stays removed: the refresh neither writes it back nor hands out
// the new token.
func TestLogoutDuringRefreshWins(t *testing.T) {
	h := newHeldEndpoint(t, "from-refresh")
	s, e := storeWithExpired(t, h.url)
	src := s.Source(e.Key, "")
	type result struct {
		tok *oauth2.Token
		err error
	}
	got := make(chan result, 1)
	go func() {
		tok, err := src.Token(context.Background())
		got <- result{tok, err}
	}()
	<-h.arrived
	if err := os.Remove(s.Path()); err != nil {
		t.Fatal(err)
	}
	h.answer()
	r := <-got
	if !errors.Is(r.err, ErrNeedsLogin) {
		t.Errorf("Token() across a logout = %v, %v; want an error wrapping ErrNeedsLogin", r.tok, r.err)
	}
	if _, ok, err := s.Get(e.Key); ok || err != nil {
		t.Errorf("entry after the logout: present %v (err %v), want absent", ok, err)
	}
}
