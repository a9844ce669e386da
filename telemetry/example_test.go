package telemetry_test

import (
	"context"
	"fmt"
	"log"
	"log/slog"
	"os"
	"time"

	"github.com/toolprof/toolprof/telemetry"
)

// A Recorder only enqueues: Session and Call return at once and one writer
// goroutine commits them to a segment in the directory. Close flushes and
// closes the segment; ReadAll then reads every segment of the directory.
func ExampleOpenRecorder() {
	dir, err := os.MkdirTemp("", "telemetry-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	rec, err := telemetry.OpenRecorder(dir, telemetry.RecorderOptions{
		Replica: "example",
		Logger:  slog.New(slog.DiscardHandler),
	})
	if err != nil {
		log.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	id := rec.NewSessionID() // unique across replicas, so not printed below
	rec.Session(telemetry.Session{
		ID: id, Start: start, Transport: telemetry.TransportStdio,
		ClientName: "claude-code", ClientVersion: "2.1", Profile: "core",
	})
	rec.Call(telemetry.Call{
		Session: id, Seq: 1, Tool: "read_file", Start: start.Add(time.Second),
		Duration: 20 * time.Millisecond, Outcome: telemetry.OutcomeOK,
		RequestBytes: 64, ResponseBytes: 512,
	})
	if err := rec.Close(); err != nil {
		log.Fatal(err)
	}

	sessions, calls, err := telemetry.ReadAll(context.Background(), []string{dir}, telemetry.Window{})
	if err != nil {
		log.Fatal(err)
	}
	for _, s := range sessions {
		fmt.Printf("session: %s %s over %s, profile %s, started %s\n", s.ClientName, s.ClientVersion, s.Transport, s.Profile, s.Start.Format(time.RFC3339))
	}
	for _, c := range calls {
		fmt.Printf("call %d (same session: %t): %s %s in %s, %d bytes in, %d out\n", c.Seq, c.Session == id, c.Tool, c.Outcome, c.Duration, c.RequestBytes, c.ResponseBytes)
	}
	// Output:
	// session: claude-code 2.1 over stdio, profile core, started 2026-03-01T09:00:00Z
	// call 1 (same session: true): read_file ok in 20ms, 64 bytes in, 512 out
}
