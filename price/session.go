package price

import (
	"fmt"
	"maps"
	"math"
	"slices"
)

// CacheModel is how a provider bills a prompt prefix it caches, as
// multiples of the input token price.
type CacheModel struct {
	// Write is paid on every token of a prefix written to the cache: on the
	// first turn, and from a turn whose tools differ from the last turn's.
	Write float64 `json:"write"`
	// Read is paid on every token of a prefix read from the cache.
	Read float64 `json:"read"`
	// Growth is the tokens of conversation (messages the model sees after
	// the tools) each turn adds. They sit after the tools in the prompt, so
	// a change of tools invalidates them too: that turn writes them again.
	// The default, 0, assumes conversations the same under every profile
	// and prices the tool prefix alone.
	Growth int `json:"growth"`
}

// DefaultCache is Anthropic's published prompt-caching multipliers (a 5
// minute cache write at 1.25x, a read at 0.1x) and no conversation growth.
func DefaultCache() CacheModel { return CacheModel{Write: 1.25, Read: 0.1} }

// Check reports a multiplier or growth that cannot be a price.
func (m CacheModel) Check() error {
	for _, x := range []struct {
		name string
		v    float64
	}{{"write", m.Write}, {"read", m.Read}} {
		if x.v < 0 || math.IsNaN(x.v) || math.IsInf(x.v, 0) {
			return fmt.Errorf("cache %s multiplier %v: want a finite number at least 0", x.name, x.v)
		}
	}
	if m.Growth < 0 {
		return fmt.Errorf("conversation growth %d: want tokens per turn at least 0", m.Growth)
	}
	return nil
}

// Turn is the tool prefix one model request carries.
type Turn struct {
	// Prefix is the tokens of the tools and instructions listed.
	Prefix int
	// Changed says the listed tools differ from the previous turn's; the
	// first turn writes the prefix whatever it says.
	Changed bool
	// Added is the tokens of conversation this turn adds beyond Growth,
	// such as the tool definitions a search returned: written in this
	// turn, read from the cache in every later one, written again with the
	// rest of the conversation when the tools change.
	Added int
}

// SessionCost is what the turns of one session pay for their prompt
// prefix, in input-token equivalents. Turn t (from 0) carries the prefix
// and t*Growth tokens of conversation plus the Added tokens of turns 0 to
// t; the cached part is what turn t-1 carried. A turn that writes (the
// first, or one whose tools changed) pays Write on all of it; any other
// pays Read on what turn t-1 carried and Write on the Growth and Added
// tokens it adds.
func SessionCost(turns []Turn, m CacheModel) float64 {
	g := float64(m.Growth)
	total, conv := 0.0, 0.0 // conv: the conversation turn t-1 carried
	for t, tn := range turns {
		p, add := float64(tn.Prefix), float64(tn.Added)
		if t > 0 {
			add += g
		}
		if t == 0 || tn.Changed {
			total += m.Write * (p + conv + add)
		} else {
			total += m.Read*(p+conv) + m.Write*add
		}
		conv += add
	}
	return total
}

// Session is a traced session as the cost model reads it.
type Session struct {
	// Turns is the number of model requests.
	Turns int
	// Calls are the tools called, in order, with the turn of each.
	Calls []Call
}

// Call is one tool call and the turn (from 0) it was made in.
type Call struct {
	Tool string
	Turn int
}

// NewSession builds a session from a trace line's calls: with userTurns >
// 0 (the trace's "turns") there are that many turns and turns[i] is call
// i's "turn", which every call must then have (-1 marks one missing);
// without, each call is its own turn and one more turn answers after the
// last call.
func NewSession(tools []string, turns []int, userTurns int) (Session, error) {
	s := Session{Calls: make([]Call, len(tools))}
	if userTurns <= 0 {
		for i, t := range tools {
			s.Calls[i] = Call{Tool: t, Turn: i}
		}
		s.Turns = len(tools) + 1
		return s, nil
	}
	s.Turns = userTurns
	for i, t := range tools {
		if i >= len(turns) || turns[i] < 0 || turns[i] >= userTurns {
			got := "none"
			if i < len(turns) && turns[i] >= 0 {
				got = fmt.Sprint(turns[i])
			}
			return Session{}, fmt.Errorf("call %d (%s): turn %s: a session with %d turns needs each call's turn in [0,%d]", i, t, got, userTurns, userTurns-1)
		}
		if i > 0 && turns[i] < turns[i-1] {
			return Session{}, fmt.Errorf("call %d (%s): turn %d is before the previous call's turn %d", i, t, turns[i], turns[i-1])
		}
		s.Calls[i] = Call{Tool: t, Turn: turns[i]}
	}
	return s, nil
}

// Listing is what a profile lists over a session.
type Listing struct {
	// Base is listed from the first turn.
	Base []string
	// Groups maps a group to its tools, listed from the turn of the first
	// call to one of them (a session switches the group on to make it).
	Groups map[string][]string
	// Fallback is listed from the turn of a call that neither Base nor a
	// group holds: the session is refused and continues on the full
	// catalog. nil prices such a session without fallback (only the
	// listed tools).
	Fallback []string
}

// Prices gives the prefix tokens of a set of tools: Overhead (the
// instructions) plus the sum of the tools' own entries.
type Prices struct {
	Tools    map[string]int
	Overhead int
}

func (p Prices) prefix(set map[string]bool) int {
	n := p.Overhead
	for t := range set {
		n += p.Tools[t]
	}
	return n
}

// Turns lays out the prefix each turn of s carries under l, and whether s
// called a tool l does not hold (refused, priced on Fallback from then).
func (p Prices) Turns(s Session, l Listing) (turns []Turn, refused bool) {
	listed := map[string]bool{}
	for _, t := range l.Base {
		listed[t] = true
	}
	groupOf := map[string][]string{} // tool -> groups holding it, sorted
	for _, g := range slices.Sorted(maps.Keys(l.Groups)) {
		for _, t := range l.Groups[g] {
			groupOf[t] = append(groupOf[t], g)
		}
	}
	calls := s.Calls
	turns = make([]Turn, s.Turns)
	for t := range turns {
		changed := false
		for len(calls) > 0 && calls[0].Turn == t {
			c := calls[0]
			calls = calls[1:]
			if listed[c.Tool] {
				continue
			}
			if gs := groupOf[c.Tool]; len(gs) > 0 {
				for _, tool := range l.Groups[gs[0]] {
					listed[tool] = true
				}
				changed = true
				continue
			}
			if !refused {
				refused = true
				for _, tool := range l.Fallback {
					listed[tool] = true
				}
				changed = changed || len(l.Fallback) > 0
			}
		}
		turns[t] = Turn{Prefix: p.prefix(listed), Changed: changed}
	}
	return turns, refused
}

// Stats summarises per-session costs.
type Stats struct {
	Sessions int     `json:"sessions"`
	Mean     float64 `json:"mean"`
	P50      float64 `json:"p50"`
	P95      float64 `json:"p95"`
}

// Summarise returns the mean and the nearest-rank 50th and 95th
// percentiles of costs.
func Summarise(costs []float64) Stats {
	if len(costs) == 0 {
		return Stats{}
	}
	s := slices.Clone(costs)
	slices.Sort(s)
	sum := 0.0
	for _, c := range s {
		sum += c
	}
	rank := func(q float64) float64 {
		i := int(math.Ceil(q*float64(len(s)))) - 1
		return s[max(0, min(i, len(s)-1))]
	}
	return Stats{Sessions: len(s), Mean: sum / float64(len(s)), P50: rank(0.50), P95: rank(0.95)}
}
