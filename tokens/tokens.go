// Package tokens reads a tokens file: the bearer tokens an HTTP gateway
// accepts, each bound to a profile and a ceiling, so that one URL serves
// different callers different profiles.
//
// The file is TOML, one [[token]] table per token:
//
//	[[token]]
//	name = "team-a"     # a label for logs and health; optional
//	sha256 = "9f86d0…"  # SHA-256 of the token, 64 hex digits; required
//	profile = "core"    # the profile served to this token; optional
//	ceiling = "full"    # no profile beyond this one is served to it; optional
//
// Tokens are stored as their SHA-256 only (`printf %s TOKEN | sha256sum`):
// the file never holds one in clear, and a lookup hashes what the client
// presents. A Source reloads the file when it changes and keeps the last
// good set when an edit does not parse; its Health says so.
package tokens

import (
	"bufio"
	"bytes"
	"cmp"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/BurntSushi/toml"
	"github.com/toolprof/toolprof/internal/reload"
)

// Entry is one accepted token.
type Entry struct {
	Name string
	// Hash is the token's SHA-256, lower-case hex: what identifies the
	// caller in telemetry, never the token.
	Hash    string
	Profile string // "" serves the path's profile
	Ceiling string // "" bounds by the path and the server's ceiling only
	Line    int    // of its [[token]] header; 0 for an entry not from the file
}

// Selects reports whether the entry changes what a path serves: a listing
// it selects differs from caller to caller at one URL.
func (e Entry) Selects() bool { return e.Profile != "" || e.Ceiling != "" }

// Error is one problem in a tokens file.
type Error struct {
	File string
	Line int // 1-based; 0 when the file as a whole is wrong
	Key  string
	Msg  string
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": " + e.Key)
	}
	b.WriteString(": " + e.Msg)
	return b.String()
}

// Set is a parsed tokens file.
type Set struct {
	File    string
	entries map[[sha256.Size]byte]Entry
}

// Lookup returns the entry of token, hashing it first.
func (s *Set) Lookup(token string) (Entry, bool) {
	if s == nil {
		return Entry{}, false
	}
	e, ok := s.entries[sha256.Sum256([]byte(token))]
	return e, ok
}

// Entries returns the entries sorted by line.
func (s *Set) Entries() []Entry {
	var out []Entry
	for _, e := range s.entries {
		out = append(out, e)
	}
	slices.SortFunc(out, func(a, b Entry) int { return cmp.Or(cmp.Compare(a.Line, b.Line), cmp.Compare(a.Hash, b.Hash)) })
	return out
}

var (
	hashPattern = regexp.MustCompile(`^[0-9a-fA-F]{64}$`)
	headerLine  = regexp.MustCompile(`^\s*\[\[\s*token\s*\]\]`)
)

// Parse parses src, read from file; extra entries (such as the single
// --auth-token-file token) join the file's. Every problem is an *Error
// naming file and line.
func Parse(file string, src []byte, extra ...Entry) (*Set, error) {
	var doc struct {
		Token []struct {
			Name    string `toml:"name"`
			SHA256  string `toml:"sha256"`
			Profile string `toml:"profile"`
			Ceiling string `toml:"ceiling"`
		} `toml:"token"`
	}
	md, err := toml.Decode(string(src), &doc)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			return nil, &Error{File: file, Line: pe.Position.Line, Key: pe.LastKey, Msg: "invalid TOML: " + pe.Message}
		}
		return nil, &Error{File: file, Msg: err.Error()}
	}
	headers := tokenHeaders(src)
	lineOf := func(i int) int {
		if i < len(headers) {
			return headers[i]
		}
		return 0
	}
	if u := md.Undecoded(); len(u) > 0 {
		k := u[0].String()
		line := 0
		if len(u[0]) > 1 {
			line = keyLine(src, headers, u[0][len(u[0])-1])
		}
		return nil, &Error{File: file, Line: line, Key: k, Msg: "unknown key; a [[token]] holds name, sha256, profile and ceiling"}
	}
	s := &Set{File: file, entries: make(map[[sha256.Size]byte]Entry)}
	add := func(e Entry, key string) error {
		if !hashPattern.MatchString(e.Hash) {
			return &Error{File: file, Line: e.Line, Key: key, Msg: "want the token's SHA-256 as 64 hex digits (printf %s TOKEN | sha256sum), never the token itself"}
		}
		e.Hash = strings.ToLower(e.Hash)
		var k [sha256.Size]byte
		hex.Decode(k[:], []byte(e.Hash))
		if prev, dup := s.entries[k]; dup {
			where := "an earlier entry"
			if prev.Line > 0 {
				where = fmt.Sprintf("line %d", prev.Line)
			}
			return &Error{File: file, Line: e.Line, Key: key, Msg: "the same token as " + where + "; each token is listed once"}
		}
		s.entries[k] = e
		return nil
	}
	for i, t := range doc.Token {
		e := Entry{Name: t.Name, Hash: t.SHA256, Profile: t.Profile, Ceiling: t.Ceiling, Line: lineOf(i)}
		if err := add(e, fmt.Sprintf("token[%d].sha256", i)); err != nil {
			return nil, err
		}
	}
	for _, e := range extra {
		if err := add(e, e.Name); err != nil {
			return nil, err
		}
	}
	return s, nil
}

// tokenHeaders returns the line of each [[token]] header, in order.
func tokenHeaders(src []byte) []int {
	var lines []int
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		if headerLine.Match(sc.Bytes()) {
			lines = append(lines, n)
		}
	}
	return lines
}

// keyLine is the first line after a [[token]] header that sets key, or 0.
func keyLine(src []byte, headers []int, key string) int {
	if len(headers) == 0 {
		return 0
	}
	pat := regexp.MustCompile(`^\s*"?` + regexp.QuoteMeta(key) + `"?\s*=`)
	sc := bufio.NewScanner(bytes.NewReader(src))
	for n := 1; sc.Scan(); n++ {
		if n > headers[0] && pat.Match(sc.Bytes()) {
			return n
		}
	}
	return 0
}

// Load reads and parses file.
func Load(file string, extra ...Entry) (*Set, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	return Parse(file, src, extra...)
}

// HashToken is the Entry.Hash of token.
func HashToken(token string) string {
	h := sha256.Sum256([]byte(token))
	return hex.EncodeToString(h[:])
}

// Health is a Source's state.
type Health struct {
	File    string    `json:"file"`
	Tokens  int       `json:"tokens"`
	Loaded  time.Time `json:"loaded"`
	Problem string    `json:"problem,omitempty"` // why the last edit was not taken up; the last good set is served
}

// Source is a tokens file kept current: Refresh reloads it when it has
// changed, and an edit that does not parse (or fails Check) leaves the
// last good set in force.
type Source struct {
	file  string
	extra []Entry
	// Check validates a set beyond its syntax (profiles it names exist);
	// nil accepts every set that parses.
	check func(*Set) error
	src   *reload.Source[*Set]

	mu sync.Mutex
	// statErr is why the file could not be found at the last Refresh;
	// it stays until the file is seen to change.
	statErr error
}

// Open loads file; an error stops the server at start. check, when not
// nil, validates each set loaded, the first one too.
func Open(file string, check func(*Set) error, extra ...Entry) (*Source, error) {
	s := &Source{file: file, extra: extra, check: check}
	if _, err := os.Stat(file); err != nil {
		return nil, &Error{File: file, Msg: err.Error()}
	}
	seen := reload.Look(file) // before the load: an edit during it is reloaded
	set, err := s.load()
	if err != nil {
		return nil, err
	}
	s.src = reload.New(seen, set, nil, s.load)
	return s, nil
}

func (s *Source) load() (*Set, error) {
	set, err := Load(s.file, s.extra...)
	if err != nil {
		return nil, err
	}
	if s.check != nil {
		if err := s.check(set); err != nil {
			return nil, err
		}
	}
	return set, nil
}

// Refresh reloads the file if its modification time or size changed. It
// returns the problem with a changed file, nil when the new set was taken
// up or nothing changed.
func (s *Source) Refresh() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, err := os.Stat(s.file); err != nil {
		s.statErr = &Error{File: s.file, Msg: err.Error() + "; serving the tokens loaded before"}
		return s.statErr
	}
	changed, err := s.src.Refresh()
	if changed {
		s.statErr = nil
	}
	return err
}

// Lookup looks token up in the set in force.
func (s *Source) Lookup(token string) (Entry, bool) {
	set, _ := s.src.Current()
	return set.Lookup(token)
}

// Current is the set in force.
func (s *Source) Current() *Set {
	set, _ := s.src.Current()
	return set
}

// Health reports the set in force and the last edit's problem.
func (s *Source) Health() Health {
	s.mu.Lock()
	statErr := s.statErr
	s.mu.Unlock()
	set, problem := s.src.Current()
	h := Health{File: s.file, Tokens: len(set.entries), Loaded: s.src.Loaded()}
	if statErr != nil {
		problem = statErr
	}
	if problem != nil {
		h.Problem = problem.Error()
	}
	return h
}
