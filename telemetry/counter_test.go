package telemetry

import (
	"context"
	"testing"
	"time"
)

// TestReloadKeepsKeysUnique: after the name tables are reloaded from the
// file (what a failed commit does), the next key counter must be above
// every counter in use. Keys sort by time first, so the last key's counter
// is not the largest when calls arrive out of start order (a long call
// ends after shorter ones that began later); a counter taken from it reused
// a key and the new call overwrote a stored one.
func TestReloadKeepsKeysUnique(t *testing.T) {
	t0 := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Second)
	tests := []struct {
		name   string
		before []time.Time // starts of the calls committed before the reload, in commit order
		after  time.Time   // start of the call committed after it
		reopen bool        // reload by opening the file again, not after a failed commit
	}{
		{"in order", []time.Time{t0, t1}, t1, false},
		{"out of order, same start as the largest counter", []time.Time{t1, t0}, t0, false},
		{"out of order, later start", []time.Time{t1, t0}, t1, false},
		{"reopened, out of order, same start as the largest counter", []time.Time{t1, t0}, t0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			path := segmentPath(dir, "r", t0, false)
			db, err := createSegment(path, "r", t0)
			if err != nil {
				t.Fatal(err)
			}
			w, err := newSegmentWriter(db, path)
			if err != nil {
				t.Fatal(err)
			}
			var batch []event
			for _, s := range tt.before {
				batch = append(batch, event{kind: eventCall, call: Call{Session: "r/1", Tool: "t", Start: s}})
			}
			if err := w.commit(batch, 0, false); err != nil {
				t.Fatal(err)
			}
			if tt.reopen {
				db.Close()
				if db, err = createSegment(path, "r", t0); err != nil {
					t.Fatal(err)
				}
				if w, err = newSegmentWriter(db, path); err != nil {
					t.Fatal(err)
				}
			} else if err := db.View(w.load); err != nil {
				t.Fatal(err)
			}
			if err := w.commit([]event{{kind: eventCall, call: Call{Session: "r/1", Tool: "t", Start: tt.after}}}, 0, false); err != nil {
				t.Fatal(err)
			}
			if err := w.close(t1, 0, ""); err != nil {
				t.Fatal(err)
			}
			snap, err := Scan(context.Background(), []string{dir}, Window{})
			if err != nil {
				t.Fatal(err)
			}
			var calls int
			for _, u := range snap.Usage {
				calls += u.Calls
			}
			if want := 3; calls != want {
				t.Errorf("%d calls stored in the directory, want %d: a call overwrote another", calls, want)
			}
		})
	}
}
