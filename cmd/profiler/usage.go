package main

import (
	"flag"
	"io"

	"github.com/toolprof/toolprof/internal/cli"
)

// newCommandFlags returns the FlagSet of subcommand name with the help
// every subcommand prints (cli.NewFlags).
func newCommandFlags(name, synopsis, description string, stderr io.Writer) *flag.FlagSet {
	return cli.NewFlags("profiler", name, synopsis, description, stderr)
}

// parseCommandFlags parses fs, mapping errors to usage errors (cli.Parse).
func parseCommandFlags(name string, fs *flag.FlagSet, args []string) (help bool, err error) {
	return cli.Parse(name, fs, args)
}

// serialWriter serialises writes: started upstreams copy their stderr into
// it from their own goroutines while the command writes too.
type serialWriter = cli.SerialWriter

// listFlag collects a repeatable string flag.
type listFlag = cli.List
