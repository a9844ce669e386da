// Package reload keeps a value loaded from files current: Refresh loads it
// again when one of the files changed, and a change that does not load
// leaves the last good value in force, with the problem reported beside
// it. The gateway's profiles and its tokens file are both kept this way.
//
// A file has changed when its modification time, size, or (where the
// system tells them) device, inode or status change time differs from
// when it was last seen; a missing file is seen as empty, so that its
// removal is a change too. The inode and change time see a replacement
// that keeps the old modification time and size (cp -p, rsync -t, a
// fixed-time store symlinked in place), which a revoked token must not
// outlive. Refresh only stats the files until one changed, which makes it
// cheap enough to call per request or on a short poll. Saving a file in
// place twice within the filesystem's timestamp granularity, at the same
// size, may not be seen: write a new file and rename it over the old one.
package reload

import (
	"io/fs"
	"os"
	"slices"
	"sync"
	"time"
)

// stamp is what says a file changed; zero for a missing file.
type stamp struct {
	mod  time.Time
	size int64
	id   FileID
}

// FileID is which file a path names and when its inode last changed
// (IDOf); zero where the system does not tell it. Two stats of one path
// with equal time and size but different IDs are two versions of it.
type FileID struct {
	dev, ino uint64
	ctime    int64 // Unix nanoseconds
}

func stampOf(stat func(string) (fs.FileInfo, error), path string) stamp {
	fi, err := stat(path)
	if err != nil {
		return stamp{}
	}
	return stamp{fi.ModTime(), fi.Size(), IDOf(fi)}
}

// Source is a value loaded from files and kept current. It is safe for
// concurrent use.
type Source[T any] struct {
	// Every is the least time between two looks at the files: a Refresh
	// within Every of the last look does not stat them, which bounds what a
	// caller refreshing per request pays. Zero looks at every Refresh. Set
	// it before the first Refresh.
	Every time.Duration
	// Stat reads a file's stamp; nil is os.Stat. Set it before the first
	// Refresh.
	Stat func(string) (fs.FileInfo, error)

	paths []string
	load  func() (T, error)

	mu      sync.Mutex
	value   T
	stamps  []stamp
	looked  time.Time // when the files were last stat'ed
	loaded  time.Time
	problem error
}

// Seen is what the files were when Look looked at them.
type Seen struct {
	paths  []string
	stamps []stamp
	at     time.Time
}

// Look stats paths. Take it before loading the value given to New: a file
// that changes during that load is then seen by the next Refresh, where
// stat'ing after the load would take the new stamp for the old value.
func Look(paths ...string) Seen {
	return Seen{paths: paths, stamps: stampsOf(os.Stat, paths), at: time.Now()}
}

// New returns a Source holding value, loaded from the files as seen (by
// Look, before the load), with problem (nil for none) reported beside it
// until the files change; load reads the value again.
func New[T any](seen Seen, value T, problem error, load func() (T, error)) *Source[T] {
	return &Source[T]{paths: seen.paths, load: load, value: value, problem: problem,
		stamps: seen.stamps, looked: seen.at, loaded: time.Now()}
}

func stampsOf(stat func(string) (fs.FileInfo, error), paths []string) []stamp {
	out := make([]stamp, len(paths))
	for i, p := range paths {
		out[i] = stampOf(stat, p)
	}
	return out
}

func (s *Source[T]) stampsNow() []stamp {
	stat := s.Stat
	if stat == nil {
		stat = os.Stat
	}
	return stampsOf(stat, s.paths)
}

// Current returns the value in force and the problem with the files on
// disk: nil when they are what is served.
func (s *Source[T]) Current() (T, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.value, s.problem
}

// Loaded is when the value in force was loaded.
func (s *Source[T]) Loaded() time.Time {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.loaded
}

// Refresh loads the value again when a file changed since it was last
// seen, looking at most once per Every. changed reports whether Current's value or problem changed; err
// is the problem with the changed files, nil when their value was taken
// up or nothing changed.
func (s *Source[T]) Refresh() (changed bool, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	if now.Sub(s.looked) < s.Every {
		return false, nil
	}
	s.looked = now
	stamps := s.stampsNow()
	if slices.Equal(stamps, s.stamps) {
		return false, nil
	}
	s.stamps = stamps
	v, err := s.load()
	if err != nil {
		s.problem = err
		return true, err
	}
	s.value, s.problem, s.loaded = v, nil, time.Now()
	return true, nil
}
