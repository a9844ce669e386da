package ownfile

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// report is the shape the JSONLike cases recognise: Notes is left out of
// the zero value's encoding, so it may be present or absent.
type report struct {
	Name  string   `json:"name"`
	Count int      `json:"count"`
	Notes []string `json:"notes,omitempty"`
}

var (
	errUnreadable = errors.New("unreadable")
	errForeign    = errors.New("foreign")
)

// TestCheck: each arm of Check, with JSONLike as the recogniser; the
// returned error is the arm's own (nil, Unreadable's or Foreign's) and
// carries the reason Check was given.
func TestCheck(t *testing.T) {
	dir := t.TempDir()
	tests := []struct {
		name string
		// setup makes what is at path; nil: nothing.
		setup   func(path string) error
		ours    Recogniser
		want    error  // nil, errUnreadable or errForeign
		wantWhy string // in the reason or read error passed on
	}{
		{name: "missing file", setup: func(string) error { return nil }, ours: JSONLike(report{})},
		{name: "missing directory above", ours: JSONLike(report{})},
		{name: "own file", setup: write(`{"name": "a", "count": 3}`), ours: JSONLike(report{})},
		{name: "own file with an allowed extra", setup: write(`{"name": "a", "count": 3, "notes": ["x"]}`), ours: JSONLike(report{}, "notes")},
		{name: "own file without the allowed extra", setup: write(`{"name": "a", "count": 3}`), ours: JSONLike(report{}, "notes")},
		{name: "foreign text", setup: write("my notes\n"), ours: JSONLike(report{}),
			want: errForeign, wantWhy: "not a JSON object: invalid character 'm'"},
		{name: "extra key", setup: write(`{"name": "a", "count": 3, "theme": "dark"}`), ours: JSONLike(report{}),
			want: errForeign, wantWhy: `unknown key "theme"`},
		{name: "extra key not allowed", setup: write(`{"name": "a", "count": 3, "notes": []}`), ours: JSONLike(report{}),
			want: errForeign, wantWhy: `unknown key "notes"`},
		{name: "missing key", setup: write(`{"name": "a"}`), ours: JSONLike(report{}, "notes"),
			want: errForeign, wantWhy: `no "count" key`},
		{name: "missing keys name the first sorted", setup: write(`{"notes": []}`), ours: JSONLike(report{}, "notes"),
			want: errForeign, wantWhy: `no "count" key`},
		{name: "array", setup: write(`[{"name": "a", "count": 3}]`), ours: JSONLike(report{}),
			want: errForeign, wantWhy: "not a JSON object: json: cannot unmarshal array"},
		{name: "string", setup: write(`"name"`), ours: JSONLike(report{}),
			want: errForeign, wantWhy: "not a JSON object: json: cannot unmarshal string"},
		{name: "trailing data", setup: write(`{"name": "a", "count": 3} {}`), ours: JSONLike(report{}),
			want: errForeign, wantWhy: "not a JSON object: invalid character '{' after top-level value"},
		{name: "zero that is no object", setup: write(`{}`), ours: JSONLike([]int{}),
			want: errForeign, wantWhy: "json: cannot unmarshal array"},
		{name: "directory", setup: func(path string) error { return os.Mkdir(path, 0o755) }, ours: JSONLike(report{}),
			want: errUnreadable, wantWhy: "is a directory"},
		{name: "recogniser's own reason", setup: write("x"), ours: func([]byte) error { return errors.New("no marker") },
			want: errForeign, wantWhy: "no marker"},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(dir, string(rune('a'+i)), "out")
			if tt.setup != nil {
				if err := os.Mkdir(filepath.Dir(path), 0o755); err != nil {
					t.Fatal(err)
				}
				if err := tt.setup(path); err != nil {
					t.Fatal(err)
				}
			}
			var why error
			err := Check(path, tt.ours, Wording{
				Unreadable: func(err error) error { why = err; return errUnreadable },
				Foreign:    func(err error) error { why = err; return errForeign },
			})
			if err != tt.want {
				t.Fatalf("Check = %v (reason %v), want %v", err, why, tt.want)
			}
			switch {
			case tt.want == nil && why != nil:
				t.Errorf("a Wording function was called with %v", why)
			case tt.want != nil && (why == nil || !strings.Contains(why.Error(), tt.wantWhy)):
				t.Errorf("reason %v, want one containing %q", why, tt.wantWhy)
			}
			if tt.want == errUnreadable && !strings.Contains(why.Error(), path) {
				t.Errorf("read error %v does not name %s", why, path)
			}
		})
	}
}

func write(content string) func(path string) error {
	return func(path string) error { return os.WriteFile(path, []byte(content), 0o644) }
}

// TestImportsOnlyTheStandardLibrary: both the serving and the analysis
// side may use the package, so it links nothing of either.
func TestImportsOnlyTheStandardLibrary(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", "github.com/toolprof/toolprof/internal/ownfile").Output()
	if err != nil {
		t.Fatalf("go list -deps: %v", err)
	}
	if got := strings.Fields(string(out)); len(got) != 1 || got[0] != "github.com/toolprof/toolprof/internal/ownfile" {
		t.Errorf("internal/ownfile links %v, want only itself and the standard library", got)
	}
}
