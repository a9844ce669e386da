package derive

import (
	"strings"
	"testing"
)

// TestSplit: the newest holdout share is held out; with sessions Derive
// does not see (groups' grouped sessions), the cut never falls before the
// last session Derive learned from.
func TestSplit(t *testing.T) {
	// marks spells the sessions oldest first: d for one Derive sees, g for
	// one it does not.
	for _, c := range []struct {
		name      string
		marks     string
		holdout   float64
		noMarks   bool // pass unseen as nil
		wantLearn int
	}{
		{"newest share", "dddddddddd", 0.2, true, 8},
		{"nothing held out", "dddddddddd", 0, true, 10},
		{"every session seen is as nil", "dddddddddd", 0.2, false, 8},
		{"no sessions", "", 0.2, true, 0},
		// Derive holds out its 2 newest of 10; the newest 20% of all 21
		// (4) would reach back into Derive's derive part.
		{"unseen sessions older", "ggggggggggddddddddgdd", 0.2, false, 18},
		// Derive's derive part ends long before the newest 20% of all.
		{"unseen sessions newer", "ddddddddddgggggggggg", 0.2, false, 16},
	} {
		t.Run(c.name, func(t *testing.T) {
			used := make([]Demand, len(c.marks))
			var unseen []bool
			if !c.noMarks {
				unseen = make([]bool, len(c.marks))
			}
			for i, m := range c.marks {
				used[i].Tools = []int{i} // its position, to tell sessions apart
				if unseen != nil {
					unseen[i] = m == 'g'
				}
			}
			learn, test := Split(used, c.holdout, unseen)
			if len(learn) != c.wantLearn || len(learn)+len(test) != len(used) {
				t.Fatalf("split %d/%d, want %d/%d", len(learn), len(test), c.wantLearn, len(used)-c.wantLearn)
			}
			// Derive's own split of the sessions it sees: none it learned
			// from is held out.
			seen := strings.Count(c.marks, "d")
			learned := seen - int(float64(seen)*c.holdout+0.5)
			for _, d := range test {
				if i := d.Tools[0]; c.marks[i] == 'd' && strings.Count(c.marks[:i], "d") < learned {
					t.Errorf("held out session %d, which Derive learned from", i)
				}
			}
		})
	}
}
