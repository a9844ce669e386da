package oauthstore

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

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
