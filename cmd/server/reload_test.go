package main

import (
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestProfilesLookedAtOncePerInterval: however many requests ask, the
// profiles files are stat'ed once per interval at most; with no interval,
// at every request; once the interval has passed, a change is seen.
func TestProfilesLookedAtOncePerInterval(t *testing.T) {
	cases := []struct {
		name     string
		every    time.Duration
		requests int
		want     int64 // stats: two files per look
	}{
		{"every request without an interval", 0, 50, 100},
		{"none within the interval", time.Hour, 50, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "profiles.generated.toml")
			var stats atomic.Int64
			p := newProfileSource(path, nil, io.Discard)
			p.every = c.every
			p.stat = func(name string) (fs.FileInfo, error) {
				stats.Add(1)
				return os.Stat(name)
			}
			for range c.requests {
				if p.changed() {
					t.Fatal("changed with no file written")
				}
			}
			if got := stats.Load(); got != c.want {
				t.Errorf("%d stats for %d requests, want %d", got, c.requests, c.want)
			}
		})
	}
	t.Run("a change is seen once the interval has passed", func(t *testing.T) {
		path := filepath.Join(t.TempDir(), "profiles.generated.toml")
		p := newProfileSource(path, nil, io.Discard)
		p.every = time.Hour
		if err := os.WriteFile(path, []byte("version = 1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		if p.changed() {
			t.Fatal("looked within the interval")
		}
		p.mu.Lock()
		p.looked = p.looked.Add(-time.Hour) // the interval has passed
		p.mu.Unlock()
		if !p.changed() {
			t.Error("the written file was not seen after the interval")
		}
	})
}
