package telemetry

import (
	"context"
	"testing"
	"time"
)

// TestBatchCommitsPerSizeOrInterval: the writer commits when a batch holds
// BatchSize events, without waiting for the interval, and commits a
// smaller batch when FlushInterval passes, without waiting for more events.
func TestBatchCommitsPerSizeOrInterval(t *testing.T) {
	waitWritten := func(t *testing.T, r *Recorder, want uint64) {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second) // a hang guard, not a speed check
		for r.Health().Written < want {
			if time.Now().After(deadline) {
				t.Fatalf("written %d, want %d", r.Health().Written, want)
			}
			time.Sleep(time.Millisecond)
		}
	}
	send := func(r *Recorder, n int) {
		for i := range n {
			r.Call(Call{Session: "b/1", Seq: uint64(i), Tool: "t", Start: time.Now()})
		}
	}

	t.Run("full batches commit before the interval", func(t *testing.T) {
		dir := t.TempDir()
		r, _ := openTestRecorder(t, dir, RecorderOptions{Replica: "b", BatchSize: 10, FlushInterval: time.Hour})
		send(r, 25)
		waitWritten(t, r, 20)
		// The 5 left wait for the interval (an hour) or Close.
		time.Sleep(50 * time.Millisecond)
		if h := r.Health(); h.Written != 20 {
			t.Fatalf("written %d before the interval, want the 2 full batches (20)", h.Written)
		}
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
		if _, calls, err := ReadAll(context.Background(), []string{dir}, Window{}); err != nil || len(calls) != 25 {
			t.Fatalf("after Close: %d calls, %v; want 25", len(calls), err)
		}
	})
	t.Run("a partial batch commits when the interval passes", func(t *testing.T) {
		r, _ := openTestRecorder(t, t.TempDir(), RecorderOptions{Replica: "b", BatchSize: 1000, FlushInterval: 5 * time.Millisecond})
		send(r, 3)
		waitWritten(t, r, 3) // without Close: only the interval commits it
		if err := r.Close(); err != nil {
			t.Fatal(err)
		}
	})
}
