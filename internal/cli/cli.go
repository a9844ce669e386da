// Package cli holds the command-line conventions of profiler's
// subcommands, so that each command's file keeps only its flags, its
// wiring and its output:
//
//   - Every subcommand prints one help shape, on -h and on a usage error:
//     "usage: PROG NAME SYNOPSIS", a one to three line description, then
//     the flags with their defaults (NewFlags).
//   - A UsageError (how the command was called) exits 2 and shows the
//     command's help once; an ExitError carries its own status (a budget
//     guard that exits 1); any other error exits 1 (ExitCode).
//   - A SerialWriter lets started servers copy their stderr into the
//     command's while the command writes to it too.
package cli

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"
)

// UsageError marks an error in how a command was called; it exits 2.
// Shown is true when the command's usage was already printed (the FlagSet
// does so on a flag it cannot parse).
type UsageError struct {
	Err   error
	Shown bool
}

func (e UsageError) Error() string { return e.Err.Error() }
func (e UsageError) Unwrap() error { return e.Err }

// Usagef is a UsageError with a formatted message.
func Usagef(format string, args ...any) error {
	return UsageError{Err: fmt.Errorf(format, args...)}
}

// ExitError carries a specific exit status with its message.
type ExitError struct {
	Code int
	Err  error
}

func (e ExitError) Error() string { return e.Err.Error() }
func (e ExitError) Unwrap() error { return e.Err }

// ExitCode prints err to stderr, prefixed by prog, and maps it to the
// process exit status: 0 for nil, 2 for a UsageError, an ExitError's
// code, else 1.
func ExitCode(prog string, err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	fmt.Fprintln(stderr, prog+":", err)
	var ue UsageError
	if errors.As(err, &ue) {
		return 2
	}
	var ee ExitError
	if errors.As(err, &ee) {
		return ee.Code
	}
	return 1
}

// NewFlags returns the FlagSet of subcommand name of prog with the help
// every subcommand prints, on -h and on a usage error, to stderr:
//
//	usage: PROG NAME SYNOPSIS
//
//	DESCRIPTION
//
//	flags:
//	  (each flag and its default)
//
// synopsis shows the required flags and arguments as the README's table of
// commands does; description says in one to three lines what the command
// does and any exit status besides 0, 1 for failure and 2 for usage.
func NewFlags(prog, name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: %s %s %s\n\n%s\n\nflags:\n", prog, name, synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

// Parse parses fs and maps errors to usage errors (exit 2); help is true
// when -h was asked for, which is not an error. On an error the FlagSet
// has already printed the usage, which the error records so that it is
// not printed twice.
func Parse(name string, fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, UsageError{Err: fmt.Errorf("%s: %w", name, err), Shown: true}
	}
	return false, nil
}

// List collects a repeatable string flag.
type List []string

func (l *List) String() string     { return strings.Join(*l, ",") }
func (l *List) Set(v string) error { *l = append(*l, v); return nil }

// SerialWriter serialises writes to W: started servers copy their stderr
// into it from their own goroutines while the command writes too.
type SerialWriter struct {
	mu sync.Mutex
	W  io.Writer
}

func (s *SerialWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.W.Write(p)
}

// Dirs is a repeatable flag of directory paths (one --telemetry DIR per
// replica); an empty path is refused.
type Dirs []string

func (d *Dirs) String() string { return strings.Join(*d, ",") }
func (d *Dirs) Set(v string) error {
	if v == "" {
		return errors.New("want a directory path, not an empty string")
	}
	*d = append(*d, v)
	return nil
}

// Time is a time flag (--since, --until, --before): RFC 3339 or a UTC
// date. T is zero when the flag was not given.
type Time struct{ T time.Time }

func (t *Time) String() string {
	if t.T.IsZero() {
		return ""
	}
	return t.T.Format(time.RFC3339)
}

func (t *Time) Set(v string) error {
	for _, layout := range []string{time.RFC3339Nano, "2006-01-02T15:04", "2006-01-02"} {
		if p, err := time.Parse(layout, v); err == nil {
			t.T = p.UTC()
			return nil
		}
	}
	return fmt.Errorf("%q is not a time: want RFC 3339 (2026-03-01T12:00:00Z) or a UTC date (2026-03-01)", v)
}
