package telemetry

import (
	"fmt"
	"io"
	"os"
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

// ReadTraceFile decodes the session trace at path for command cmd and
// writes its TraceReport to w (nothing and rest as for Write): with
// skipBad the good sessions of a file with malformed lines, without it an
// error. Every error is prefixed by cmd.
func ReadTraceFile(path, cmd string, skipBad bool, w io.Writer, nothing, rest string) ([]TraceSession, error) {
	file, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%s: open trace: %w", cmd, err)
	}
	sessions, bad, err := DecodeTrace(file, path, true)
	file.Close()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	if err := DecodedTraceReport(sessions, bad).Write(w, cmd, skipBad, nothing, rest); err != nil {
		return nil, err
	}
	return sessions, nil
}
