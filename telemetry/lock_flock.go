//go:build !windows && !plan9 && !solaris && !aix && !android

package telemetry

import (
	"errors"
	"fmt"
	"os"
	"syscall"
)

// tryLock takes f's exclusive lock without waiting, as bbolt's writer
// takes it here (flock; the build constraint is bbolt's), failing with errLockHeld when another holds it. The
// lock goes with f's close.
func tryLock(f *os.File) error {
	err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
	if errors.Is(err, syscall.EWOULDBLOCK) {
		return errLockHeld
	}
	if err != nil {
		return fmt.Errorf("lock %s: %w", f.Name(), err)
	}
	return nil
}
