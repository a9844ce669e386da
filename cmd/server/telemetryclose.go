package main

import (
	"fmt"
	"io"

	"github.com/toolprof/toolprof/telemetry"
)

// closeTelemetry closes the recorder at shutdown, flushing what is queued.
// A telemetry failure never fails a tool call, and neither does
// it fail the shutdown: an unwritable directory and a full disk both exit
// 0, and what could not be stored is said on stderr with the count of
// events lost, so that an operator sees the gap in the record.
func closeTelemetry(r *telemetry.Recorder, dir string, stderr io.Writer) {
	err := r.Close()
	h := r.Health()
	if err == nil && h.Lost == 0 {
		return
	}
	msg := fmt.Sprintf("server: close telemetry %s: %d of the %d events accepted could not be stored (lost); tool calls were not affected", dir, h.Lost, h.Enqueued)
	if err != nil {
		msg += ": " + err.Error()
	}
	fmt.Fprintln(stderr, msg)
}
