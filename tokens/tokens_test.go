package tokens

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const (
	tokenA = "secret-a"
	tokenB = "secret-b"
)

func TestParse(t *testing.T) {
	good := "[[token]]\nname = \"a\"\nsha256 = \"" + HashToken(tokenA) + "\"\nprofile = \"core\"\n\n[[token]]\nsha256 = \"" + strings.ToUpper(HashToken(tokenB)) + "\"\n"
	set, err := Parse("t.toml", []byte(good))
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		token, profile string
		line           int
		ok             bool
	}{
		{tokenA, "core", 1, true},
		{tokenB, "", 6, true},
		{"secret-c", "", 0, false},
		{HashToken(tokenA), "", 0, false}, // the hash itself is not a token
	} {
		e, ok := set.Lookup(tt.token)
		if ok != tt.ok || e.Profile != tt.profile || e.Line != tt.line {
			t.Errorf("Lookup(%q) = %+v, %v; want profile %q line %d, %v", tt.token, e, ok, tt.profile, tt.line, tt.ok)
		}
	}
	if e, _ := set.Lookup(tokenB); e.Hash != HashToken(tokenB) {
		t.Errorf("hash %q not normalized to lower case", e.Hash)
	}
}

func TestParseErrors(t *testing.T) {
	h := HashToken(tokenA)
	for _, tt := range []struct {
		name, src string
		want      string // prefix: file:line
	}{
		{"syntax", "[[token]]\nsha256 = \"" + h + "\nprofile = \"x\"\n", "t.toml:2"},
		{"clear token", "# comment\n[[token]]\nsha256 = \"" + tokenA + "\"\n", "t.toml:2: token[0].sha256"},
		{"unknown key", "[[token]]\nsha256 = \"" + h + "\"\nprofle = \"core\"\n", "t.toml:3: token.profle"},
		{"duplicate", "[[token]]\nsha256 = \"" + h + "\"\n[[token]]\nsha256 = \"" + strings.ToUpper(h) + "\"\n", "t.toml:3: token[1].sha256: the same token as line 1"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("t.toml", []byte(tt.src))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Fatalf("error %v, want prefix %q", err, tt.want)
			}
		})
	}
}

func TestSourceKeepsLastGoodSet(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.toml")
	write := func(src string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(src), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("[[token]]\nsha256 = \"" + HashToken(tokenA) + "\"\n")
	src, err := Open(path, nil)
	if err != nil {
		t.Fatal(err)
	}
	write("[[token]]\nsha256 = \"" + HashToken(tokenB) + "\"\nbroken = \n")
	if err := src.Refresh(); err == nil {
		t.Fatal("broken edit taken up")
	}
	if _, ok := src.Lookup(tokenA); !ok {
		t.Error("last good set dropped after a broken edit")
	}
	if h := src.Health(); !strings.Contains(h.Problem, "tokens.toml:3") || h.Tokens != 1 {
		t.Errorf("health %+v, want the problem at line 3 and 1 token", h)
	}
	write("[[token]]\nsha256 = \"" + HashToken(tokenB) + "\"\nprofile = \"core\"\n")
	if err := src.Refresh(); err != nil {
		t.Fatal(err)
	}
	if _, ok := src.Lookup(tokenA); ok {
		t.Error("removed token still accepted")
	}
	if e, ok := src.Lookup(tokenB); !ok || e.Profile != "core" {
		t.Errorf("new token: %+v, %v", e, ok)
	}
	if h := src.Health(); h.Problem != "" {
		t.Errorf("problem %q after a good edit", h.Problem)
	}
}

func TestOpenChecks(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tokens.toml")
	os.WriteFile(path, []byte("[[token]]\nsha256 = \""+HashToken(tokenA)+"\"\n"), 0o600)
	_, err := Open(path, nil, Entry{Name: "--auth-token-file", Hash: HashToken(tokenA)})
	if err == nil || !strings.Contains(err.Error(), "the same token as line 1") {
		t.Fatalf("duplicate extra token: %v", err)
	}
}

// TestRevokedTokenRefusedWhenTimeKept: a tokens file replaced by one of
// the same size whose modification time is the old one's (a deploy that
// keeps times: cp -p, rsync -t, tar, or a fixed-time store such as
// Nix's, symlinked in place) still revokes the token it drops.
func TestRevokedTokenRefusedWhenTimeKept(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.toml")
	at := time.Date(1970, 1, 1, 0, 0, 1, 0, time.UTC)
	write := func(path, token string) {
		if err := os.WriteFile(path, []byte("[[token]]\nsha256 = \""+HashToken(token)+"\"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, at, at); err != nil {
			t.Fatal(err)
		}
	}
	write(file, tokenA)
	src, err := Open(file, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, replace := range []struct {
		name string
		put  func(next string)
	}{
		{"renamed over it", func(next string) {
			if err := os.Rename(next, file); err != nil {
				t.Fatal(err)
			}
		}},
		{"a symlink swapped to it", func(next string) {
			link := file + ".link"
			if err := os.Symlink(next, link); err != nil {
				t.Fatal(err)
			}
			if err := os.Rename(link, file); err != nil {
				t.Fatal(err)
			}
		}},
	} {
		revoked, kept := tokenA, tokenB
		if _, ok := src.Lookup(tokenB); ok {
			revoked, kept = tokenB, tokenA
		}
		next := filepath.Join(dir, replace.name+".toml")
		write(next, kept)
		replace.put(next)
		if err := src.Refresh(); err != nil {
			t.Fatalf("%s: %v", replace.name, err)
		}
		if _, ok := src.Lookup(revoked); ok {
			t.Errorf("%s: the revoked token is still accepted", replace.name)
		}
		if _, ok := src.Lookup(kept); !ok {
			t.Errorf("%s: the new token is refused", replace.name)
		}
	}
}
