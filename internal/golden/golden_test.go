package golden

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
)

func TestDiff(t *testing.T) {
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"equal", "a\nb\n", "a\nb\n", ""},
		{"one line changed", "a\nb\nc\n", "a\nB\nc\n", "--- old\n+++ new\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n"},
		{"added at end", "a\n", "a\nb\n", "--- old\n+++ new\n@@ -1 +1,2 @@\n a\n+b\n"},
		{"from empty", "", "a\n", "--- old\n+++ new\n@@ -0,0 +1 @@\n+a\n"},
		{"to empty", "a\nb\n", "", "--- old\n+++ new\n@@ -1,2 +0,0 @@\n-a\n-b\n"},
		{"missing final newline", "a\n", "a", "--- old\n+++ new\n@@ -1 +1 @@\n-a\n+a\n\\ No newline at end of file\n"},
		{"context is three lines",
			"1\n2\n3\n4\n5\n6\n7\n8\n9\n",
			"1\n2\n3\n4\nfive\n6\n7\n8\n9\n",
			"--- old\n+++ new\n@@ -2,7 +2,7 @@\n 2\n 3\n 4\n-5\n+five\n 6\n 7\n 8\n"},
		{"changes far apart make two hunks",
			"a\n1\n2\n3\n4\n5\n6\n7\nb\n",
			"A\n1\n2\n3\n4\n5\n6\n7\nB\n",
			"--- old\n+++ new\n@@ -1,4 +1,4 @@\n-a\n+A\n 1\n 2\n 3\n@@ -6,4 +6,4 @@\n 5\n 6\n 7\n-b\n+B\n"},
		{"changes six lines apart share a hunk",
			"a\n1\n2\n3\n4\n5\n6\nb\n",
			"A\n1\n2\n3\n4\n5\n6\nB\n",
			"--- old\n+++ new\n@@ -1,8 +1,8 @@\n-a\n+A\n 1\n 2\n 3\n 4\n 5\n 6\n-b\n+B\n"},
		{"line moved", "x\na\nb\nc\n", "a\nb\nc\nx\n", "--- old\n+++ new\n@@ -1,4 +1,4 @@\n-x\n a\n b\n c\n+x\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Diff("old", []byte(tc.old), "new", []byte(tc.new)); got != tc.want {
				t.Errorf("Diff =\n%s\nwant\n%s", got, tc.want)
			}
		})
	}
}

// recordingTB records what Assert reports instead of failing the test.
type recordingTB struct {
	testing.TB
	name   string
	errors []string
	fatal  string
}

func (r *recordingTB) Helper()      {}
func (r *recordingTB) Name() string { return r.name }
func (r *recordingTB) Errorf(format string, args ...any) {
	r.errors = append(r.errors, fmt.Sprintf(format, args...))
}
func (r *recordingTB) Fatal(args ...any) { r.Fatalf("%s", fmt.Sprint(args...)) }
func (r *recordingTB) Fatalf(format string, args ...any) {
	r.fatal = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// assert runs Assert against a recordingTB and returns it.
func assert(name, path string, got []byte) *recordingTB {
	r := &recordingTB{name: name}
	done := make(chan struct{})
	go func() {
		defer close(done)
		Assert(r, path, got)
	}()
	<-done
	return r
}

// setUpdate sets -update for one test, so that the tests mean the same
// whether or not the binary was run with -update.
func setUpdate(t *testing.T, v bool) {
	was := Update()
	if err := flag.Set("update", fmt.Sprint(v)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { flag.Set("update", fmt.Sprint(was)) })
}

func TestAssert(t *testing.T) {
	setUpdate(t, false)
	dir := t.TempDir()
	path := filepath.Join(dir, "out.golden")
	if err := os.WriteFile(path, []byte("one\ntwo\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	const cmd = "go test ./internal/golden -run '^TestX$' -update"

	if r := assert("TestX", path, []byte("one\ntwo\n")); len(r.errors) > 0 || r.fatal != "" {
		t.Errorf("equal output reported %q %q", r.errors, r.fatal)
	}

	r := assert("TestX/sub", path, []byte("one\nTWO\n"))
	if len(r.errors) != 1 {
		t.Fatalf("differing output: errors %q, fatal %q", r.errors, r.fatal)
	}
	for _, want := range []string{path + " differs", cmd, "-two\n+TWO\n"} {
		if !strings.Contains(r.errors[0], want) {
			t.Errorf("report lacks %q:\n%s", want, r.errors[0])
		}
	}

	r = assert("TestX", filepath.Join(dir, "missing"), []byte("x"))
	if !strings.Contains(r.fatal, cmd) || !strings.Contains(r.fatal, "missing") {
		t.Errorf("missing file: fatal %q, want the path and %q", r.fatal, cmd)
	}
}

func TestAssertUpdate(t *testing.T) {
	setUpdate(t, true)
	if !Update() {
		t.Fatal("Update() is false under -update")
	}
	path := filepath.Join(t.TempDir(), "new", "dir", "out.golden")
	if r := assert("TestX", path, []byte("fresh\n")); len(r.errors) > 0 || r.fatal != "" {
		t.Fatalf("update reported %q %q", r.errors, r.fatal)
	}
	b, err := os.ReadFile(path)
	if err != nil || string(b) != "fresh\n" {
		t.Errorf("golden file after -update = %q, %v; want %q", b, err, "fresh\n")
	}
}
