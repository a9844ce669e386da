package main

// Reloading the profiles: the profiles file and the profiles.toml
// beside it are checked when an HTTP session opens. When either changed
// (modification time or size), the set is loaded again; a set that loads is
// served to new sessions (the gateway swaps its catalog whole, so a request
// sees the old set or the new one, never a mix), and a broken one is
// reported (stderr, and health warnings) while the last good set keeps
// serving; so is the removal of either file once it was served
// (profiles.Reload), until it is back. A stdio server has one session, served what was read at start.
// A 2026-07-28 client opens no session, so each of its requests would
// check the files: they are looked at once per reloadEvery at most, and a
// change reaches the sessions opened from then on.

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"time"

	"github.com/toolprof/toolprof/internal/reload"
	"github.com/toolprof/toolprof/profiles"
)

// reloadEvery is the least time between two looks at the profiles files.
const reloadEvery = time.Second

// profileSource is the profile set being served (nil: no profiles file,
// every tool as full), kept current from the generated file and the
// profiles.toml beside it.
type profileSource struct {
	path   string // the generated file
	stderr io.Writer
	src    *reload.Source[*profiles.Set]
}

// lookProfiles looks at the files a profileSource for path watches; take
// it before loading the set, so that an edit during the load is reloaded.
func lookProfiles(path string) reload.Seen {
	return reload.Look(path, profiles.PolicyPathFor(path))
}

// newProfileSource serves set, read from path after seen was taken, with
// finding (why the files on disk are not what is served; "" when they
// are) until they change.
func newProfileSource(path string, seen reload.Seen, set *profiles.Set, finding string, stderr io.Writer) *profileSource {
	var problem error
	if finding != "" {
		problem = errors.New(finding)
	}
	last := set // the set in force: written only by load, which the Source serializes
	load := func() (*profiles.Set, error) {
		next, err := profiles.Reload(path, last)
		if err == nil {
			last = next
			return next, nil
		}
		if _, serr := os.Stat(path); errors.Is(err, fs.ErrNotExist) && serr != nil {
			err = fmt.Errorf("%s was removed", path)
		}
		return nil, fmt.Errorf("profiles %s changed but cannot be served (%v); serving the last good profiles", path, err)
	}
	src := reload.New(seen, set, problem, load)
	src.Every = reloadEvery
	return &profileSource{path: path, stderr: stderr, src: src}
}

// current is the set to resolve with, and the finding to report with it.
func (p *profileSource) current() (*profiles.Set, string) {
	set, problem := p.src.Current()
	if problem != nil {
		return set, problem.Error()
	}
	return set, ""
}

// changed rereads the files when they changed since last seen and reports
// whether what should be served (the set or the finding) changed.
func (p *profileSource) changed() bool {
	changed, err := p.src.Refresh()
	switch {
	case err != nil:
		fmt.Fprintln(p.stderr, "server: warning:", err)
	case changed:
		fmt.Fprintf(p.stderr, "server: profiles %s changed: reloaded\n", p.path)
	}
	return changed
}

// reloader returns what the HTTP handler calls when a session opens: a
// change of the files re-resolves the profiles through refresh (the
// gateway's ProfilesChanged, which calls resolve against the tools last
// listed): the request opening the session waits on no upstream, and the
// session is served the reloaded profiles.
func (p *profileSource) reloader(refresh func(string) error) func() {
	return func() {
		if p.changed() {
			refresh("profiles " + p.path) // on error the gateway logs it and serves the profiles in force
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
