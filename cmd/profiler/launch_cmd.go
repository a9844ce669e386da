package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"

	"github.com/BurntSushi/toml"
	"github.com/toolprof/toolprof/launch"
)

// runLaunch prints the launch document a pack (and persona) resolves to,
// with every secret value redacted. Resolving first means an unset
// variable fails here exactly as it would at server start.
func runLaunch(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("launch", "--launch FILE [--persona NAME] [--format json|toml]",
		"Prints the launch document a pack (and persona) resolves to, every secret value redacted.\n"+
			"An unset variable fails here exactly as it would at server start; a command that cannot be\n"+
			"run (not on PATH, or no executable file) is warned about on stderr.", stderr)
	file := fs.String("launch", "", "pack `FILE` in .mcp.json format (required)")
	persona := fs.String("persona", "", "persona `NAME`: merges personas/NAME.mcp.json beside the pack")
	format := fs.String("format", "json", "output `format`: json or toml")
	if help, err := parseCommandFlags("launch", fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("launch: unexpected argument %q", fs.Arg(0))
	}
	if *file == "" {
		return usagef("launch: --launch FILE is required")
	}
	if *format != "json" && *format != "toml" {
		return usagef("launch: --format %q: want json or toml", *format)
	}
	doc, err := launch.Load(*file, *persona)
	if err != nil {
		return err
	}
	resolved, err := doc.Resolve(os.LookupEnv)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", *file, err)
	}
	for i := range resolved.Servers {
		// A warning, not a failure: the server would start down and be
		// retried while the others serve, and this machine may not be the
		// one that runs it.
		if err := resolved.Servers[i].LookCommand(); err != nil {
			fmt.Fprintf(stderr, "launch: warning: %s\n", resolved.Servers[i].Scrub(err.Error()))
		}
	}
	red := resolved.Redacted()
	if *format == "toml" {
		return toml.NewEncoder(stdout).Encode(red)
	}
	enc := json.NewEncoder(stdout)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	return enc.Encode(red)
}
