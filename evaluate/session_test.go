package evaluate

import "testing"

// TestSessionQuery: a search's query is written from the call's turn and
// the turn with words before it, never a later turn.
func TestSessionQuery(t *testing.T) {
	s := Session{Turns: []string{"estimate the distance to Stonebrook", "", "I'm travelling from Rivermist.", "  ", "buy 100 shares", "later words"}}
	for _, tc := range []struct {
		turn, turns int
		want        string
	}{
		{0, 2, "estimate the distance to Stonebrook"},
		{2, 2, "estimate the distance to Stonebrook I'm travelling from Rivermist."}, // the blank turn 1 skipped
		{3, 2, "estimate the distance to Stonebrook I'm travelling from Rivermist."}, // a blank call turn asks with the ones before
		{4, 2, "I'm travelling from Rivermist. buy 100 shares"},
		{4, 1, "buy 100 shares"},
		{4, 3, "estimate the distance to Stonebrook I'm travelling from Rivermist. buy 100 shares"},
		{4, 0, "buy 100 shares"},
		{9, 1, "later words"}, // a turn past the trace's: its last
		{-1, 2, ""},           // the trace does not say
	} {
		if got := s.queryFrom(tc.turn, tc.turns); got != tc.want {
			t.Errorf("queryFrom(%d, %d) = %q, want %q", tc.turn, tc.turns, got, tc.want)
		}
	}
	if got, want := s.query(2), s.queryFrom(2, QueryTurns); got != want {
		t.Errorf("query(2) = %q, want %q", got, want)
	}
}
