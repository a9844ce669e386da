package telemetry

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// errLockHeld is tryLock's answer for a file another open file holds.
var errLockHeld = errors.New("lock held")

// sweepCreating removes the .creating files in dir that recorders died
// creating (between creating the file and renaming it to its open name)
// and returns their paths. A file is taken only when it was last modified
// before staleBefore and its lock is free: a live creator holds the lock
// from just after creating the file until the rename, and the age covers
// the moment between the two, as staleAge does for open segments. A
// recorder of this replica is no exception, since another process given
// the same replica id could be in that moment.
func sweepCreating(dir string, staleBefore time.Time) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var removed []string
	var errs []error
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), creatingSuffix)
		if !ok || !segmentName.MatchString(name) || !e.Type().IsRegular() {
			continue
		}
		path := filepath.Join(dir, e.Name())
		switch err := removeCreating(path, staleBefore); {
		case err == nil:
			removed = append(removed, path)
		case errors.Is(err, errLockHeld), errors.Is(err, errClosedMeanwhile), errors.Is(err, errTooYoung):
		default:
			errs = append(errs, err)
		}
	}
	return removed, errors.Join(errs...)
}

// errTooYoung is removeCreating's answer for a file modified since
// staleBefore.
var errTooYoung = errors.New("modified recently")

// removeCreating removes the .creating file at path when it was last
// modified before staleBefore and, holding its lock, it is still the file
// at path. Removing while holding the lock means a creator that opens the
// name meanwhile waits for the lock, then fails its rename and retries:
// it never records into a file no name reaches.
func removeCreating(path string, staleBefore time.Time) error {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return errClosedMeanwhile
	}
	if err != nil {
		return err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return err
	}
	if !fi.ModTime().Before(staleBefore) {
		return errTooYoung
	}
	if err := tryLock(f); err != nil {
		return err
	}
	now, err := os.Stat(path)
	if errors.Is(err, fs.ErrNotExist) || err == nil && !os.SameFile(fi, now) {
		return errClosedMeanwhile
	}
	if err != nil {
		return err
	}
	return os.Remove(path)
}
