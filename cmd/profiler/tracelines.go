package main

import (
	"fmt"
	"io"

	"github.com/toolprof/toolprof/telemetry"
)

// maxLineErrors is how many malformed trace lines a command names on
// stderr: a file with one systematic fault would otherwise print a line
// per session and bury what follows.
const maxLineErrors = 20

// traceReport is what reading trace files found besides the sessions,
// reported the same way by every command that reads them.
type traceReport struct {
	Bad    []error // malformed lines, in file order
	NoZone int     // session starts without a zone offset, read as UTC
}

// report writes to w, prefixed by cmd, the malformed lines (at most
// maxLineErrors, then how many more) and, once, how many starts were read
// as UTC. Without skipBad any malformed line is an error saying how many
// there were, what was not done (nothing, e.g. "nothing written") and how
// to go on without them (rest: what --skip-bad does, e.g. "import the
// rest").
func (r traceReport) report(w io.Writer, cmd string, skipBad bool, nothing, rest string) error {
	verb := ""
	if skipBad {
		verb = "skipped "
	}
	for i, e := range r.Bad {
		if i == maxLineErrors {
			fmt.Fprintf(w, "%s: ... and %d more malformed line(s)\n", cmd, len(r.Bad)-maxLineErrors)
			break
		}
		fmt.Fprintf(w, "%s: %s%v\n", cmd, verb, e)
	}
	if r.NoZone > 0 {
		fmt.Fprintf(w, "%s: %d session start(s) without a time zone offset, read as UTC\n", cmd, r.NoZone)
	}
	if len(r.Bad) > 0 && !skipBad {
		return fmt.Errorf("%s: %d malformed trace line(s), %s (first %w): fix them, or pass --skip-bad to %s", cmd, len(r.Bad), nothing, r.Bad[0], rest)
	}
	return nil
}

// decodedTraceReport is the report of telemetry.DecodeTrace's result.
func decodedTraceReport(sessions []telemetry.TraceSession, bad []telemetry.LineError) traceReport {
	var r traceReport
	for i := range bad {
		r.Bad = append(r.Bad, &bad[i])
	}
	for _, s := range sessions {
		if s.StartedNoZone {
			r.NoZone++
		}
	}
	return r
}
