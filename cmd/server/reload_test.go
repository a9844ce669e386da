package main

import (
	"io"
	"path/filepath"
	"testing"
)

// TestProfilesLookedAtOncePerInterval: the server's profiles source
// looks at the files once per reloadEvery at most (the interval itself is
// tested in internal/reload), so a 2026-07-28 client's requests do not
// each stat them.
func TestProfilesLookedAtOncePerInterval(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.generated.toml")
	p := newProfileSource(path, lookProfiles(path), nil, "", io.Discard)
	if p.src.Every != reloadEvery || reloadEvery <= 0 {
		t.Errorf("profiles looked at every %v, want every %v (> 0)", p.src.Every, reloadEvery)
	}
}
