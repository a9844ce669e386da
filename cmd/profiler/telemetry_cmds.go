package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/cli"
	"github.com/toolprof/toolprof/otelmcp"
	"github.com/toolprof/toolprof/report"
	"github.com/toolprof/toolprof/telemetry"
)

// telemetryDirs is a repeatable --telemetry flag: one directory per
// replica; telemetryTime a --since, --until or --before flag.
type (
	telemetryDirs = cli.Dirs
	telemetryTime = cli.Time
)

// importHeap is where an import's collections start: it keeps two batches
// and the ids it has seen (about 100 MiB at 1M sessions), so with the
// segment's mapped pages it stays under 512 MiB.
const importHeap = 320 << 20

// runImport stores session traces (JSON Lines) in a telemetry directory.
func runImport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("import", "--telemetry DIR [flags] FILE.jsonl...",
		"Stores the sessions of trace files (JSON Lines, one session per line) in a telemetry\n"+
			"directory; a malformed line writes nothing unless --skip-bad. With --otlp the files are\n"+
			"OTLP JSON traces whose MCP tools/call server spans become calls (docs/operating.md).", stderr)
	var dirs telemetryDirs
	fs.Var(&dirs, "telemetry", "telemetry `DIR` to import into (required, once)")
	var catalogs telemetryDirs
	fs.Var(&catalogs, "catalog", "tools/list catalog `FILE` (repeatable): calls to tools in none of them are counted (and kept)")
	skipBad := fs.Bool("skip-bad", false, "import the good lines of a file with malformed lines (reported on stderr); without it nothing is written")
	otlp := fs.Bool("otlp", false, "the files are OTLP JSON traces (a file that is not is an error naming it and its first bad field)")
	if help, err := parseCommandFlags("import", fs, args); help || err != nil {
		return err
	}
	switch {
	case len(dirs) != 1:
		return usagef("import: give exactly one --telemetry DIR to import into (got %d)", len(dirs))
	case fs.NArg() == 0:
		return usagef("import: no trace files given (want FILE.jsonl...)")
	}
	known, err := catalog.LoadNames(catalogs)
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer cli.BulkGC(importHeap)()

	// Sessions are written as they are read, a batch at a time; a malformed
	// line stops the writing (without --skip-bad), the reading goes on to
	// report every malformed line, and the import is then aborted.
	im, err := telemetry.NewImporter(ctx, dirs[0], time.Now())
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	defer im.Abort()
	var rep telemetry.TraceReport
	unknown := 0
	add := func(t *telemetry.TraceSession) error {
		added, err := im.Add(t)
		if added {
			unknown += t.CallsOutside(known)
		}
		return err
	}
	if *otlp {
		if *skipBad {
			return usagef("import: --skip-bad reads JSON Lines traces; an OTLP file is read whole or not at all (drop --skip-bad)")
		}
		if err := importOTLP(fs.Args(), add, stdout); err != nil {
			return err
		}
	} else if err := telemetry.ScanTraceFiles(ctx, fs.Args(), *skipBad, &rep, add); err != nil {
		return fmt.Errorf("import: %w", err)
	}
	if err := rep.Write(stderr, "import", *skipBad, "nothing written", "import the rest"); err != nil {
		return err
	}
	res, err := im.Commit()
	if err != nil {
		return fmt.Errorf("import: %w", err)
	}
	printImported(stdout, res, dirs[0], len(rep.Bad), len(catalogs) > 0, unknown)
	return nil
}

// printImported says what an import wrote into dir, what it skipped and,
// with catalogs, how many calls went to tools in none of them.
func printImported(stdout io.Writer, res telemetry.ImportResult, dir string, bad int, catalogs bool, unknown int) {
	fmt.Fprintf(stdout, "imported %d sessions, %d calls into %s", res.Sessions, res.Calls, dir)
	if res.Path != "" {
		fmt.Fprintf(stdout, " (%s)", res.Path)
	}
	fmt.Fprintln(stdout)
	if bad > 0 {
		fmt.Fprintf(stdout, "skipped %d malformed line(s)\n", bad)
	}
	if len(res.Skipped) > 0 {
		fmt.Fprintf(stdout, "skipped %d session(s) already in the telemetry directory\n", len(res.Skipped))
	}
	if catalogs {
		fmt.Fprintf(stdout, "%d call(s) to tools in no catalog given (kept)\n", unknown)
	}
}

// importOTLP reads OTLP JSON trace files whole and adds their sessions.
func importOTLP(paths []string, add func(*telemetry.TraceSession) error, stdout io.Writer) error {
	sessions, stats, err := otelmcp.ReadFiles(paths)
	if err != nil {
		return fmt.Errorf("import --otlp: %w", err)
	}
	fmt.Fprintf(stdout, "read %d spans: %d MCP tool calls in %d sessions, %d other spans skipped\n", stats.Spans, stats.Calls, stats.Sessions, stats.Skipped)
	for i := range sessions {
		if err := add(&sessions[i]); err != nil {
			return fmt.Errorf("import: %w", err)
		}
	}
	return nil
}

// readTelemetryFlags declares the flags shared by the readers.
func readTelemetryFlags(fs *flag.FlagSet) (*telemetryDirs, *telemetryTime, *telemetryTime) {
	var dirs telemetryDirs
	var since, until telemetryTime
	fs.Var(&dirs, "telemetry", "telemetry `DIR` (required; repeat for one directory per replica)")
	fs.Var(&since, "since", "only sessions started at or after `TIME` (RFC 3339 or YYYY-MM-DD, UTC)")
	fs.Var(&until, "until", "only sessions started before `TIME` (RFC 3339 or YYYY-MM-DD, UTC)")
	return &dirs, &since, &until
}

func telemetryWindow(name string, dirs telemetryDirs, since, until *telemetryTime) (telemetry.Window, error) {
	if len(dirs) == 0 {
		return telemetry.Window{}, usagef("%s: --telemetry DIR is required", name)
	}
	if !since.T.IsZero() && !until.T.IsZero() && !since.T.Before(until.T) {
		return telemetry.Window{}, usagef("%s: --since %s is not before --until %s", name, since, until)
	}
	return telemetry.Window{Since: since.T, Until: until.T}, nil
}

// scanTelemetry checks the reader flags of command name, reads the window
// with scan (telemetry.Scan or ScanStats) and says on stderr which segments
// were left out because a running server writes them.
func scanTelemetry(ctx context.Context, name string, scan func(context.Context, []string, telemetry.Window) (*telemetry.Snapshot, error), dirs telemetryDirs, since, until *telemetryTime, stderr io.Writer) (*telemetry.Snapshot, error) {
	w, err := telemetryWindow(name, dirs, since, until)
	if err != nil {
		return nil, err
	}
	snap, err := scan(ctx, dirs, w)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	for _, s := range snap.Skipped {
		fmt.Fprintf(stderr, "%s: left out %s: a running server writes it; it is read once rotated\n", name, s.Path)
	}
	return snap, nil
}

// runExport writes telemetry as session JSON Lines, the format import reads.
func runExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("export", "--telemetry DIR [--since T] [--until T]",
		"Writes the sessions of telemetry to stdout as JSON Lines, one session per line: the\n"+
			"format import reads.", stderr)
	dirs, since, until := readTelemetryFlags(fs)
	if help, err := parseCommandFlags("export", fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("export: unexpected argument %q", fs.Arg(0))
	}
	snap, err := scanTelemetry(ctx, "export", telemetry.Scan, *dirs, since, until, stderr)
	if err != nil {
		return err
	}
	if err := telemetry.EncodeTrace(stdout, snap.Sessions, snap.Calls); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	return nil
}

// runStats summarises telemetry: window, totals, per-tool, per-client and
// per-outcome breakdowns.
func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("stats", "--telemetry DIR [--format table|markdown|json] [flags]",
		"Summarises telemetry: its window, sessions, calls and drops, and counts per tool, client\n"+
			"and outcome; with --catalog, per effect kind too.", stderr)
	dirs, since, until := readTelemetryFlags(fs)
	format := fs.String("format", "table", "output `FORMAT`: table, markdown or json")
	var catalogs telemetryDirs
	fs.Var(&catalogs, "catalog", "tools/list catalog `FILE` (repeatable): add counts per effect kind (read, evaluate, mutate, destructive)")
	profilesPath := fs.String("profiles", "", "generated profiles `FILE` whose profiles.toml beside it corrects the effect kinds (with --catalog)")
	if help, err := parseCommandFlags("stats", fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("stats: unexpected argument %q", fs.Arg(0))
	}
	if *profilesPath != "" && len(catalogs) == 0 {
		return usagef("stats: --profiles needs --catalog FILE: effect kinds are of the catalog's tools")
	}
	if *format != "table" && *format != "markdown" && *format != "json" {
		return usagef("stats: --format %q: want table, markdown or json", *format)
	}
	snap, err := scanTelemetry(ctx, "stats", telemetry.ScanStats, *dirs, since, until, stderr)
	if err != nil {
		return err
	}
	st, err := report.Stats(snap, catalogs, *profilesPath)
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	var buf bytes.Buffer
	switch *format {
	case "json":
		enc := json.NewEncoder(&buf)
		enc.SetIndent("", "  ")
		err = enc.Encode(st)
	case "markdown":
		err = report.WriteStatsMarkdown(&buf, st)
	default:
		err = report.WriteStatsTable(&buf, st)
	}
	if err != nil {
		return fmt.Errorf("stats: %w", err)
	}
	_, err = stdout.Write(buf.Bytes())
	return err
}

// runCompact removes closed segments whose events all precede --before.
func runCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("compact", "--telemetry DIR --before DATE",
		"Retention: removes the closed telemetry segments whose events are all before DATE.", stderr)
	var dirs telemetryDirs
	fs.Var(&dirs, "telemetry", "telemetry `DIR` (required; repeatable)")
	var before telemetryTime
	fs.Var(&before, "before", "remove closed segments whose events are all before `DATE` (YYYY-MM-DD or RFC 3339, UTC) (required)")
	if help, err := parseCommandFlags("compact", fs, args); help || err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("compact: unexpected argument %q", fs.Arg(0))
	case len(dirs) == 0:
		return usagef("compact: --telemetry DIR is required")
	case before.T.IsZero():
		return usagef("compact: --before DATE is required")
	}
	total := 0
	for _, dir := range dirs {
		removed, err := telemetry.Compact(ctx, dir, before.T)
		for _, p := range removed {
			fmt.Fprintln(stdout, "removed", p)
		}
		total += len(removed)
		if err != nil {
			return fmt.Errorf("compact: %w", err)
		}
	}
	fmt.Fprintf(stdout, "removed %d segment(s) entirely before %s\n", total, before.T.Format(time.RFC3339))
	return nil
}
