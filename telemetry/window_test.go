package telemetry

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"
)

// TestWindowReadIsNotAFullScan: keys ordered by time let a window skip
// what precedes it. Segments closed before the window are not read (only
// their few session records are), and in the segments read the call cursor
// starts at the window, so fewer call records are visited than stored.
func TestWindowReadIsNotAFullScan(t *testing.T) {
	dir := t.TempDir()
	day := func(d int) time.Time { return time.Date(2026, 3, d, 0, 0, 0, 0, time.UTC) }
	const perSegment = 1000
	// Segments of days 1, 3 and 5, each with one session of perSegment
	// calls spread over its first hour. Session "long" starts on day 1 and
	// calls again on day 3: it is a day-1 session, whatever window reads it.
	for _, d := range []int{1, 3, 5} {
		path := segmentPath(dir, "r", day(d), false)
		db, err := createSegment(path, "r", day(d))
		if err != nil {
			t.Fatal(err)
		}
		w, err := newSegmentWriter(db, path)
		if err != nil {
			t.Fatal(err)
		}
		s := &Session{ID: fmt.Sprintf("r/day%d", d), Start: day(d)}
		batch := []event{{kind: eventSession, session: s}}
		for i := range perSegment {
			batch = append(batch, event{kind: eventCall, call: Call{Session: s.ID, Seq: uint64(i), Tool: "t", Start: day(d).Add(time.Duration(i) * time.Hour / perSegment)}})
		}
		switch d {
		case 1:
			batch = append(batch, event{kind: eventSession, session: &Session{ID: "r/long", Start: day(1)}},
				event{kind: eventCall, call: Call{Session: "r/long", Seq: 1, Tool: "t", Start: day(1)}})
		case 3:
			batch = append(batch, event{kind: eventCall, call: Call{Session: "r/long", Seq: 2, Tool: "t", Start: day(3)}})
		}
		if err := w.commit(batch, 0, false); err != nil {
			t.Fatal(err)
		}
		if err := w.close(day(d).Add(2*time.Hour), 0, ""); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name           string
		w              Window
		sessions       []string
		beforeWindow   int // segments whose calls were not read
		visitedAtMost  int // call records visited
		visitedAtLeast int
	}{
		{"no window reads everything", Window{}, []string{"r/day1", "r/long", "r/day3", "r/day5"}, 0, 3*perSegment + 2, 3*perSegment + 2},
		{"since day 4 reads only the day-5 segment", Window{Since: day(4)}, []string{"r/day5"}, 2, perSegment, perSegment},
		{"since day 2 skips day 1; long stays a day-1 session", Window{Since: day(2)}, []string{"r/day3", "r/day5"}, 1, 2*perSegment + 1, 2*perSegment + 1},
		{"since the middle of day 5's hour seeks into its calls", Window{Since: day(5).Add(30 * time.Minute)}, nil, 2, perSegment/2 + 1, perSegment/2 - 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			snap, err := Scan(context.Background(), []string{dir}, tc.w)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, s := range snap.Sessions {
				got = append(got, s.ID)
			}
			if !slices.Equal(got, tc.sessions) {
				t.Errorf("sessions %v, want %v", got, tc.sessions)
			}
			if snap.segmentsBeforeWindow != tc.beforeWindow {
				t.Errorf("%d segments skipped as before the window, want %d", snap.segmentsBeforeWindow, tc.beforeWindow)
			}
			if snap.callsVisited < tc.visitedAtLeast || snap.callsVisited > tc.visitedAtMost {
				t.Errorf("%d call records visited, want %d..%d", snap.callsVisited, tc.visitedAtLeast, tc.visitedAtMost)
			}
		})
	}
}
