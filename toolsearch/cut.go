package toolsearch

import "fmt"

// DefaultCut is the share of the best hit's score a hit must reach to be
// returned by find_tools (Cut): on a validation part of the learning
// sessions of bfcl-multi-turn and tau-airline (never their held-out part),
// over a grid of 0 to 0.9, the cut with which the search arm costs least
// per session at find_tools' limits 5 and 9 (evaluate's
// TestEvalDefaultCut; 0.35 and 0.45 cost more, 0.5 and above miss more),
// and at every limit TestEvalDefaultLimit tries (5 and 8 to 12; its full
// run, 3 to 12, found the same from 5 up).
// A clear query then returns the few tools it names and their measured
// companions, an ambiguous one up to the limit: every definition returned
// is conversation the model pays for in each later turn, and a needed one
// the search misses sends the session to the full catalog.
const DefaultCut = 0.4

// CheckCut reports whether fraction is a cut Cut accepts: 0 (none) to 1
// (only the hits tying the best).
func CheckCut(fraction float64) error {
	if !(fraction >= 0 && fraction <= 1) { // NaN too
		return fmt.Errorf("cut %g: want 0 to 1", fraction)
	}
	return nil
}

// Cut returns the leading hits, ranked best first as Search returns them,
// whose score is at least fraction of the first's: the first always, the
// rest while they score near it. Scores are never negative, so with a
// best score of 0 (no words matched, no priors) every hit stays, as does
// every hit tying the last one kept. Fraction 0 keeps all of them.
func Cut(hits []Hit, fraction float64) []Hit {
	if len(hits) == 0 {
		return hits
	}
	floor := fraction * hits[0].Score
	for i := 1; i < len(hits); i++ {
		if hits[i].Score < floor {
			return hits[:i]
		}
	}
	return hits
}
