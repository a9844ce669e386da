package atomicfile

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWrite(t *testing.T) {
	for _, tc := range []struct {
		name    string
		setup   func(t *testing.T, dir string) string // returns the target path
		perm    os.FileMode
		wantErr bool
		want    string // content of the target afterwards ("" when not a file)
		isDir   bool   // the target is a directory that must stay one
	}{
		{"creates a new file", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "new.toml")
		}, 0o644, false, "new", false},
		{"replaces an existing file", func(t *testing.T, dir string) string {
			p := filepath.Join(dir, "old.toml")
			if err := os.WriteFile(p, []byte("old content"), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, 0o640, false, "new", false},
		{"a missing directory fails and creates nothing", func(t *testing.T, dir string) string {
			return filepath.Join(dir, "missing", "x.toml")
		}, 0o644, true, "", false},
		{"a failed rename leaves the target as it was", func(t *testing.T, dir string) string {
			// A non-empty directory cannot be replaced by a file.
			p := filepath.Join(dir, "target")
			if err := os.MkdirAll(filepath.Join(p, "child"), 0o755); err != nil {
				t.Fatal(err)
			}
			return p
		}, 0o644, true, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			path := tc.setup(t, dir)
			err := Write(path, []byte("new"), tc.perm)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Write: %v, want error %v", err, tc.wantErr)
			}
			if err != nil && !strings.Contains(err.Error(), path) {
				t.Errorf("error %q does not name %s", err, path)
			}
			if tc.want != "" {
				got, rerr := os.ReadFile(path)
				if rerr != nil || string(got) != tc.want {
					t.Fatalf("content %q, %v; want %q", got, rerr, tc.want)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != tc.perm {
					t.Errorf("mode %v, want %v", fi.Mode().Perm(), tc.perm)
				}
			}
			if fi, serr := os.Stat(path); tc.isDir && (serr != nil || !fi.IsDir()) {
				t.Errorf("target changed: %v %v", fi, serr)
			}
			// No temporary file is left behind, success or not.
			entries, _ := os.ReadDir(dir)
			for _, e := range entries {
				if strings.HasSuffix(e.Name(), ".tmp") {
					t.Errorf("temporary file %s left behind", e.Name())
				}
			}
		})
	}
}
