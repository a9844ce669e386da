package reload

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestRefresh: a Source reloads only when a file changed (time, size or
// inode, removal included), keeps the last good value when a change does not
// load, and reports the problem until a change loads.
func TestRefresh(t *testing.T) {
	type step struct {
		name        string
		edit        func(main, side string) // nil: no edit
		wantChanged bool
		wantValue   string
		wantProblem string // "" for none
		wantLoads   int    // loads so far
	}
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	write := func(path, content string, at int) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, base, base.Add(time.Duration(at)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	replace := func(path, content string, at int) {
		next := path + ".next"
		write(next, content, at)
		if err := os.Rename(next, path); err != nil {
			t.Fatal(err)
		}
	}
	steps := []step{
		{name: "nothing changed", wantValue: "v1", wantProblem: "at start"},
		// Another file of the same time and size (cp -p, a fixed-time store):
		// its inode says it is another.
		{name: "replaced, same time and size", edit: func(m, _ string) { replace(m, "v2", 1) }, wantChanged: true, wantValue: "v2", wantLoads: 1},
		{name: "a good edit", edit: func(m, _ string) { write(m, "v3", 2) }, wantChanged: true, wantValue: "v3", wantLoads: 2},
		{name: "a bad edit keeps the last good", edit: func(m, _ string) { write(m, "bad", 3) }, wantChanged: true, wantValue: "v3", wantProblem: "cannot load bad", wantLoads: 3},
		{name: "unchanged after a bad edit", wantValue: "v3", wantProblem: "cannot load bad", wantLoads: 3},
		{name: "the second file changed", edit: func(_, s string) { write(s, "side", 4) }, wantChanged: true, wantValue: "bad+side", wantLoads: 4},
		{name: "a removal is a change", edit: func(m, _ string) { os.Remove(m) }, wantChanged: true, wantValue: "bad+side", wantProblem: "missing", wantLoads: 5},
		{name: "back again", edit: func(m, _ string) { write(m, "v4", 5) }, wantChanged: true, wantValue: "v4+side", wantLoads: 6},
	}
	dir := t.TempDir()
	main, side := filepath.Join(dir, "main"), filepath.Join(dir, "side")
	write(main, "v1", 1)
	loads := 0
	load := func() (string, error) {
		loads++
		b, err := os.ReadFile(main)
		if err != nil {
			return "", errors.New("missing")
		}
		v := string(b)
		if sb, err := os.ReadFile(side); err == nil {
			v += "+" + string(sb)
		} else if v == "bad" {
			return "", fmt.Errorf("cannot load %s", v)
		}
		return v, nil
	}
	src := New(Look(main, side), "v1", errors.New("at start"), load)
	for _, st := range steps {
		if st.edit != nil {
			st.edit(main, side)
		}
		changed, err := src.Refresh()
		v, problem := src.Current()
		gotProblem := ""
		if problem != nil {
			gotProblem = problem.Error()
		}
		if changed != st.wantChanged || v != st.wantValue || gotProblem != st.wantProblem || loads != st.wantLoads {
			t.Errorf("%s: changed %v, value %q, problem %q, %d loads; want %v, %q, %q, %d", st.name, changed, v, gotProblem, loads, st.wantChanged, st.wantValue, st.wantProblem, st.wantLoads)
		}
		if st.wantChanged && (err != nil) != (st.wantProblem != "") {
			t.Errorf("%s: Refresh error %v, want one only with a problem", st.name, err)
		}
	}
}

// TestRefreshInterval: however many Refreshes ask, the files are stat'ed
// once per Every at most; with no interval, at every Refresh; once the
// interval has passed, a change is seen.
func TestRefreshInterval(t *testing.T) {
	cases := []struct {
		name      string
		every     time.Duration
		refreshes int
		want      int64 // stats: two files per look
	}{
		{"every Refresh without an interval", 0, 50, 100},
		{"none within the interval", time.Hour, 50, 0},
	}
	newSource := func(t *testing.T, every time.Duration, stats *atomic.Int64) (*Source[string], string) {
		dir := t.TempDir()
		main, side := filepath.Join(dir, "main"), filepath.Join(dir, "side")
		s := New(Look(main, side), "v1", nil, func() (string, error) { return "v2", nil })
		s.Every = every
		s.Stat = func(name string) (fs.FileInfo, error) {
			stats.Add(1)
			return os.Stat(name)
		}
		return s, main
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var stats atomic.Int64
			s, _ := newSource(t, c.every, &stats)
			for range c.refreshes {
				if changed, err := s.Refresh(); changed || err != nil {
					t.Fatalf("Refresh = %v, %v with no file written", changed, err)
				}
			}
			if got := stats.Load(); got != c.want {
				t.Errorf("%d stats for %d refreshes, want %d", got, c.refreshes, c.want)
			}
		})
	}
	t.Run("a change is seen once the interval has passed", func(t *testing.T) {
		var stats atomic.Int64
		s, main := newSource(t, time.Hour, &stats)
		if err := os.WriteFile(main, []byte("edit"), 0o644); err != nil {
			t.Fatal(err)
		}
		if changed, _ := s.Refresh(); changed {
			t.Fatal("looked within the interval")
		}
		s.mu.Lock()
		s.looked = s.looked.Add(-time.Hour) // the interval has passed
		s.mu.Unlock()
		if changed, err := s.Refresh(); !changed || err != nil {
			t.Errorf("Refresh = %v, %v after the interval, want the written file seen", changed, err)
		}
		if v, _ := s.Current(); v != "v2" {
			t.Errorf("value %q, want v2", v)
		}
	})
}

// TestChangeDuringFirstLoad: a file that changes after the files were
// looked at and the first value loaded, but before New, is seen by the
// first Refresh, which loads it again: the change is not lost until the
// next one.
func TestChangeDuringFirstLoad(t *testing.T) {
	base := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	write := func(t *testing.T, path, content string, at int) {
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Chtimes(path, base, base.Add(time.Duration(at)*time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	cases := []struct {
		name      string
		before    func(t *testing.T, path string) // the file as the first load reads it; nil: missing
		during    func(t *testing.T, path string) // the change after that load
		wantValue string
	}{
		{"an edit", func(t *testing.T, p string) { write(t, p, "v1", 1) }, func(t *testing.T, p string) { write(t, p, "v2", 2) }, "v2"},
		{"a removal", func(t *testing.T, p string) { write(t, p, "v1", 1) }, func(t *testing.T, p string) { os.Remove(p) }, "missing"},
		{"a creation", nil, func(t *testing.T, p string) { write(t, p, "v2", 2) }, "v2"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "main")
			if c.before != nil {
				c.before(t, path)
			}
			load := func() (string, error) {
				b, err := os.ReadFile(path)
				if err != nil {
					return "missing", nil
				}
				return string(b), nil
			}
			seen := Look(path)
			first, _ := load()
			c.during(t, path)
			src := New(seen, first, nil, load)
			changed, err := src.Refresh()
			v, _ := src.Current()
			if !changed || err != nil || v != c.wantValue {
				t.Errorf("first Refresh = %v, %v, value %q; want the change seen and %q loaded", changed, err, v, c.wantValue)
			}
		})
	}
}
