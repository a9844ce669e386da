package main

// Reloading the profiles: the profiles file and the profiles.toml
// beside it are checked when an HTTP session opens. When either changed
// (modification time or size), the set is loaded again; a set that loads is
// served to new sessions (the gateway swaps its catalog whole, so a request
// sees the old set or the new one, never a mix), and a broken one is
// reported (stderr, and health warnings) while the last good set keeps
// serving. A stdio server has one session, served what was read at start.
// A 2026-07-28 client opens no session, so each of its requests would
// check the files: they are looked at once per reloadEvery at most, and a
// change reaches the sessions opened from then on.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"sync"
	"time"

	"github.com/toolprof/toolprof/profiles"
)

// fileStamp is what says a file changed: its modification time and size
// (zero for a missing file).
type fileStamp struct {
	mod  time.Time
	size int64
}

// reloadEvery is the least time between two looks at the profiles files.
const reloadEvery = time.Second

func stampOf(stat func(string) (fs.FileInfo, error), path string) fileStamp {
	fi, err := stat(path)
	if err != nil {
		return fileStamp{}
	}
	return fileStamp{fi.ModTime(), fi.Size()}
}

// profileSource is the profile set being served and how the files it came
// from looked when it was read.
type profileSource struct {
	path   string // the generated file; profiles.toml is beside it
	stderr io.Writer

	stat  func(string) (fs.FileInfo, error) // os.Stat
	every time.Duration                     // reloadEvery; 0 looks at every call of changed

	mu      sync.Mutex
	set     *profiles.Set // nil: no profiles file, every tool as full
	stamps  [2]fileStamp
	looked  time.Time // when the files were last looked at
	finding string    // why the files on disk are not served; "" when they are
}

func newProfileSource(path string, set *profiles.Set, stderr io.Writer) *profileSource {
	p := &profileSource{path: path, set: set, stderr: stderr, stat: os.Stat, every: reloadEvery}
	p.stamps, p.looked = p.stampsOf(), time.Now()
	return p
}

func (p *profileSource) stampsOf() [2]fileStamp {
	return [2]fileStamp{stampOf(p.stat, p.path), stampOf(p.stat, profiles.PolicyPathFor(p.path))}
}

// current is the set to resolve with, and the finding to report with it.
func (p *profileSource) current() (*profiles.Set, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.set, p.finding
}

// changed rereads the files when they changed since last seen and reports
// whether what should be served (the set or the finding) changed. Within
// every of the last look it does not look.
func (p *profileSource) changed() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	now := time.Now()
	if now.Sub(p.looked) < p.every {
		return false
	}
	p.looked = now
	stamps := p.stampsOf()
	if stamps == p.stamps {
		return false
	}
	p.stamps = stamps
	set, err := profiles.Load(p.path)
	switch {
	case errors.Is(err, fs.ErrNotExist) && stamps[0] == (fileStamp{}):
		err = fmt.Errorf("%s was removed", p.path)
	case err == nil:
		p.set, p.finding = set, ""
		fmt.Fprintf(p.stderr, "server: profiles %s changed: reloaded\n", p.path)
		return true
	}
	p.finding = fmt.Sprintf("profiles %s changed but cannot be served (%v); serving the last good profiles", p.path, err)
	fmt.Fprintln(p.stderr, "server: warning:", p.finding)
	return true
}

// reloader returns what the HTTP handler calls when a session opens: a
// change of the files re-resolves the profiles through refresh (the
// gateway's ToolsChanged, which calls resolve).
func (p *profileSource) reloader(ctx context.Context, refresh func(context.Context, string)) func() {
	return func() {
		if p.changed() {
			refresh(ctx, "profiles "+p.path)
		}
	}
}

// withFinding adds the source's finding, if any, to r's warnings.
func withFinding(r *profiles.Resolved, finding string) *profiles.Resolved {
	if finding != "" {
		r.Warnings = append(r.Warnings, finding)
	}
	return r
}
