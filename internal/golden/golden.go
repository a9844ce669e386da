// Package golden compares a test's output with a file committed beside the
// test, and rewrites that file when the test binary is run with -update.
//
// A golden file is the reviewed, expected output of a test: a change to the
// output shows up as a diff in the test log and, once accepted with
// `go test ./PKG -run TestX -update`, as a diff in the commit. The -update
// flag is declared here, once, for every test binary that imports the
// package; a failing comparison names the file, shows a line diff and prints
// the command that would accept the new output.
package golden

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite golden files with the output the tests produce")

// Update reports whether the test binary was run with -update, for a test
// that writes its golden file itself rather than through Assert.
func Update() bool { return *update }

// Assert fails t unless got equals the contents of the file at path (relative
// to the package directory, like testdata/name). Under -update it writes got
// to path first, creating its directory, so the comparison passes and the
// change is left for review in git.
func Assert(t testing.TB, path string, got []byte) {
	t.Helper()
	if *update {
		if err := write(path, got); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v\nto create it, run: %s", err, Command(t))
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the test's output; if the change is intended, run: %s\n%s",
			path, Command(t), Diff(path, want, "got", got))
	}
}

func write(path string, b []byte) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}

// Command returns the go test command line that reruns t's top-level test
// with -update, naming the package by its path from the module root.
func Command(t testing.TB) string {
	name, _, _ := strings.Cut(t.Name(), "/")
	return fmt.Sprintf("go test %s -run '^%s$' -update", pkgDir(), name)
}

// pkgDir is the test's working directory (its package directory) relative
// to the enclosing module root, as ./dir; "." when the root is not found.
func pkgDir() string {
	wd, err := os.Getwd()
	if err != nil {
		return "."
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			rel, err := filepath.Rel(dir, wd)
			if err != nil || rel == "." {
				return "."
			}
			return "./" + filepath.ToSlash(rel)
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "."
		}
		dir = parent
	}
}
