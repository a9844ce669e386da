package telemetry

import (
	"context"
	"fmt"
	"os"
)

// ScanTraceFiles streams JSON Lines trace files to add, session by
// session; malformed lines and sessions repeated (in a file or across
// files) go to rep, and once there is one, without skipBad, nothing more
// is added (an import will be aborted) while the reading goes on to
// report every malformed line.
func ScanTraceFiles(ctx context.Context, paths []string, skipBad bool, rep *TraceReport, add func(*TraceSession) error) error {
	type seenAt struct{ file, line int32 }
	seen := newIDSet[seenAt]()
	for fi, path := range paths {
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		err = ScanTrace(ctx, f, path, func(line int, t *TraceSession) error {
			if prev, added := seen.insert(t.Session, seenAt{int32(fi), int32(line)}); !added {
				if int(prev.file) == fi {
					rep.Bad = append(rep.Bad, &LineError{File: path, Line: line, Err: fmt.Errorf("session %q already on line %d (session ids must be unique)", t.Session, prev.line)})
				} else {
					rep.Bad = append(rep.Bad, fmt.Errorf("%s: session %q is also in %s (session ids must be unique)", path, t.Session, paths[prev.file]))
				}
				return nil
			}
			if t.StartedNoZone {
				rep.NoZone++
			}
			if len(rep.Bad) > 0 && !skipBad {
				return nil // nothing will be written
			}
			return add(t)
		}, func(e LineError) { rep.Bad = append(rep.Bad, &e) })
		f.Close()
		if err != nil {
			return err
		}
	}
	return nil
}
