package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
)

// newCommandFlags returns the FlagSet of subcommand name with the help every
// subcommand prints, on -h and on a usage error, to stderr:
//
//	usage: profiler NAME SYNOPSIS
//
//	DESCRIPTION
//
//	flags:
//	  (each flag and its default)
//
// synopsis shows the required flags and arguments as the README's table of
// commands does; description says in one to three lines what the command
// does and any exit status besides 0, 1 for failure and 2 for usage.
func newCommandFlags(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: profiler %s %s\n\n%s\n\nflags:\n", name, synopsis, description)
		fs.PrintDefaults()
	}
	return fs
}

// parseCommandFlags parses fs and maps errors to usage errors (exit 2); help
// is true when -h was asked for, which is not an error. On an error the
// FlagSet has already printed the usage, which the error records so that
// run does not print it twice.
func parseCommandFlags(name string, fs *flag.FlagSet, args []string) (help bool, err error) {
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return true, nil
		}
		return false, usageError{err: fmt.Errorf("%s: %w", name, err), shown: true}
	}
	return false, nil
}
