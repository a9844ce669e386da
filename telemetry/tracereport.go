package telemetry

import (
	"fmt"
	"io"
)

// MaxLineErrors is how many malformed trace lines a TraceReport names: a
// file with one systematic fault would otherwise print a line per session
// and bury what follows.
const MaxLineErrors = 20

// TraceReport is what reading trace files found besides the sessions,
// reported the same way by every command that reads them.
type TraceReport struct {
	Bad    []error // malformed lines, in file order
	NoZone int     // session starts without a zone offset, read as UTC
}

// DecodedTraceReport is the report of DecodeTrace's result.
func DecodedTraceReport(sessions []TraceSession, bad []LineError) TraceReport {
	var r TraceReport
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

// Write writes to w, prefixed by cmd, the malformed lines (at most
// MaxLineErrors, then how many more) and, once, how many starts were read
// as UTC. Without skipBad any malformed line is an error saying how many
// there were, what was not done (nothing, e.g. "nothing written") and how
// to go on without them (rest: what --skip-bad does, e.g. "import the
// rest").
func (r TraceReport) Write(w io.Writer, cmd string, skipBad bool, nothing, rest string) error {
	verb := ""
	if skipBad {
		verb = "skipped "
	}
	for i, e := range r.Bad {
		if i == MaxLineErrors {
			fmt.Fprintf(w, "%s: ... and %d more malformed line(s)\n", cmd, len(r.Bad)-MaxLineErrors)
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
