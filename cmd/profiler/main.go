// Command profiler reads toolprof telemetry, derives tool profiles from
// measured usage, measures what each profile costs in tokens and renders
// reports.
//
// Usage:
//
//	profiler COMMAND [flags]
//
// Run "profiler help" for the list of commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sort"
	"syscall"

	"github.com/toolprof/toolprof/internal/cli"
)

// The command-line conventions are package cli's, under the names the
// commands use.
type (
	usageError = cli.UsageError
	exitError  = cli.ExitError
)

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// command is one profiler subcommand.
type command struct {
	summary string
	run     func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

// commands lists the subcommands. Each is implemented in its own file.
func commands() map[string]command {
	return map[string]command{
		"import":   {summary: "store session traces (JSON Lines) in a telemetry directory", run: runImport},
		"export":   {summary: "write telemetry as session JSON Lines", run: runExport},
		"stats":    {summary: "summarise telemetry: sessions, calls, drops, per tool, client and outcome", run: runStats},
		"compact":  {summary: "remove closed telemetry segments older than a date", run: runCompact},
		"derive":   {summary: "derive nested tool profiles from measured sessions (profiles.generated.toml)", run: runDerive},
		"evaluate": {summary: "replay held-out sessions against full, default, groups, search and always-load: served share, recall, cost", run: runEvaluate},
		"bench":    {summary: "measure the tokens of each profile's initialize + tools/list exchange", run: runBench},
		"catalog":  {summary: "write the tools/list catalog of live upstreams", run: runCatalog},
		"check":    {summary: "which sessions of a trace a profiles file would refuse, and why", run: runCheck},
		"doctor":   {summary: "check the operating-context sidecar and print its findings", run: runDoctor},
		"login":    {summary: "log in to the OAuth servers of a launch document and store their tokens", run: runLogin},
		"launch":   {summary: "print the launch document a pack resolves to, secrets redacted", run: runLaunch},
		"report":   {summary: "write a static HTML usage report: per server and tool, tokens, frontier, trend", run: runReport},
		"replay":   {summary: "drive one real MCP session per trace line against a server and count call outcomes", run: runReplay},
	}
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// exitCode prints err and maps it to the process exit status.
func exitCode(err error, stderr io.Writer) int { return cli.ExitCode("profiler", err, stderr) }

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cmds := commands()
	if len(args) == 0 || args[0] == "help" || args[0] == "-h" || args[0] == "--help" {
		printUsage(stdout, cmds)
		if len(args) == 0 {
			return usagef("no command given")
		}
		return nil
	}
	c, ok := cmds[args[0]]
	if !ok {
		return usagef("unknown command %q; run 'profiler help' for the list", args[0])
	}
	err := c.run(ctx, args[1:], stdout, stderr)
	if ue := (usageError{}); errors.As(err, &ue) && !ue.Shown {
		// -h does nothing but print the usage (TestCommandHelp), so a
		// usage error found after parsing shows the same help a bad flag does.
		_ = c.run(ctx, []string{"-h"}, io.Discard, stderr)
	}
	return err
}

func printUsage(w io.Writer, cmds map[string]command) {
	names := make([]string, 0, len(cmds))
	for n := range cmds {
		names = append(names, n)
	}
	sort.Strings(names)
	fmt.Fprintln(w, "usage: profiler COMMAND [flags]\n\ncommands:")
	for _, n := range names {
		fmt.Fprintf(w, "  %-10s %s\n", n, cmds[n].summary)
	}
	fmt.Fprintln(w, "\nRun 'profiler COMMAND -h' for a command's flags.")
}
