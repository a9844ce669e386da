package main

import (
	"context"
	"fmt"
	"io"

	"github.com/toolprof/toolprof/report"
)

// runReport writes the static HTML usage report.
func runReport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("report", "--telemetry DIR --catalog FILE [--profiles FILE] --out DIR [flags]",
		"Writes a static, self-contained HTML usage report, DIR/index.html: per server and tool,\n"+
			"calls, sessions, outcomes and definition tokens, never-called tools with the profiles.toml\n"+
			"lines that deny them, the cost/coverage frontier and the trend by day. It fetches nothing.", stderr)
	dirs, since, until := readTelemetryFlags(fs)
	catalogPath := fs.String("catalog", "", "tools/list catalog `FILE` (required)")
	profilesPath := fs.String("profiles", "", "generated profiles `FILE` (its profiles.toml beside it is read too); default: every catalog tool, full")
	out := fs.String("out", "", "output `DIR` for index.html (required; created)")
	if help, err := parseCommandFlags("report", fs, args); help || err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("report: unexpected argument %q", fs.Arg(0))
	case *catalogPath == "":
		return usagef("report: --catalog FILE is required")
	case *out == "":
		return usagef("report: --out DIR is required")
	}
	w, err := telemetryWindow("report", *dirs, since, until)
	if err != nil {
		return err
	}
	r, err := report.Build(ctx, report.Options{Telemetry: *dirs, Window: w, Catalog: *catalogPath, Profiles: *profilesPath, Out: *out})
	if err != nil {
		return err
	}
	for _, s := range r.Skipped {
		fmt.Fprintf(stderr, "report: left out %s: a running server writes it; it is read once rotated\n", s)
	}
	path, err := r.Write(*out)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "wrote %s: %d sessions, %d calls, %d tools (%d never called)\n", path, r.Sessions, r.Calls, len(r.Tools), r.NeverCalled())
	return nil
}
