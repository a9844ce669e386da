package derive

import (
	"math"
	"time"
)

// Split divides sessions, oldest first, into the older part profiles are
// learned from and the newest holdout share (rounded to whole sessions)
// held out to test them on. It is the one hold-out split: derive, groups
// and evaluate all cut with it.
//
// unseen, when not nil, has one entry per session and marks those Derive
// does not see, as in groups, which also learns from sessions served a
// grouped profile. Derive's split of the unmarked sessions holds: the cut
// never falls before the last session Derive learned from, so a profile
// learned there is never tested on a session it was learned from. With
// the marked sessions older than Derive's held-out part, the held-out
// part then starts at Derive's first held-out session; with every session
// unmarked, or unseen nil, it is the newest holdout share of all.
func Split[T any](used []T, holdout float64, unseen []bool) (learn, test []T) {
	cut := len(used) - int(math.Round(holdout*float64(len(used))))
	if unseen == nil {
		return used[:cut], used[cut:]
	}
	seenTotal := 0
	for _, u := range unseen {
		if !u {
			seenTotal++
		}
	}
	learned := seenTotal - int(math.Round(holdout*float64(seenTotal))) // Derive's derive part
	seen := 0
	for i, u := range unseen {
		if u {
			continue
		}
		if seen == learned {
			break
		}
		seen++
		cut = max(cut, i+1) // Derive learned from used[i]
	}
	return used[:cut], used[cut:]
}

// SplitByStart orders sessions by start as Derive does (TimeOrderIndex:
// stably, a session without a start after the one recorded before it) and
// splits them with Split, so that a caller holding its own kind of session
// (evaluate's, with turns) holds out the sessions Derive holds out.
func SplitByStart[T any](sessions []T, start func(T) time.Time, holdout float64) (learn, test []T) {
	starts := make([]time.Time, len(sessions))
	for i, s := range sessions {
		starts[i] = start(s)
	}
	ordered := sessions
	if order := TimeOrderIndex(starts); order != nil {
		ordered = make([]T, len(sessions))
		for i, o := range order {
			ordered[i] = sessions[o]
		}
	}
	return Split(ordered, holdout, nil)
}
