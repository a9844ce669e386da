// Package evaluate replays held-out sessions against ways of serving tools
// (arms: the full catalog, a static profile, groups, search, always-load
// with client search) and reports, per arm, the share of needed tool uses
// served, the recall of search and the expected model-token cost per
// session. profiler evaluate prints its report; make eval checks its
// figures on the real traces.
//
// A needed tool use is a tool's first call in a session. It is served when
// the arm lists the tool, or when a search returned it within the search
// limit. A search is made for a needed use that nothing listed or found
// yet: it asks with the user's words of the call's turn and the turn
// before (QueryTurns), and the tools the session called before as
// history. A tool once found stays callable for the rest of the session,
// and a search never returns it again (as the gateway's find_tools: the
// model has its definition). A needed use a search missed is found by
// name: the model reads find_tools' list of the names it may still find
// (toolsearch.ListQuery, once a session) and asks for the tool by name,
// both answers priced as conversation; such uses are reported apart
// (ArmReport.RecoveredShare), not as served. Any other needed use an arm
// does not serve is refused, and the session is priced on the full
// catalog from that turn, written to the cache again, as derive and bench
// price a refusal; the served share stays the arm's own.
//
// Each arm says which clients its figures are for (ArmReport.Protocols):
// a request of protocol 2026-07-28 or later is offered no tool groups, so
// the groups arm is what clients of 2025-11-25 and earlier are served,
// and the default arm serves the file's default profile as a 2026-07-28
// client is served it: without groups or enable_tools, with find_tools
// when the profile has search = true. ChooseDefault chooses among the
// arms a 2026-07-28 client is served only.
package evaluate

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/telemetry"
)

// Session is one replayed session: its turns' words and its calls in order.
type Session struct {
	ID    string
	Start time.Time
	Turns []string
	Calls []Call
}

// Call is one call: the tool and the index of the turn it answers (-1 when
// the trace does not say).
type Call struct {
	Tool string
	Turn int
}

// FromTrace converts trace sessions, in order.
func FromTrace(ts []telemetry.TraceSession) []Session {
	out := make([]Session, 0, len(ts))
	for _, t := range ts {
		s := Session{ID: t.Session, Turns: t.Turns}
		if t.Started != nil {
			s.Start = *t.Started
		}
		for _, c := range t.Calls {
			turn := -1
			if c.Turn != nil {
				turn = *c.Turn
			}
			s.Calls = append(s.Calls, Call{Tool: c.Tool, Turn: turn})
		}
		out = append(out, s)
	}
	return out
}

// Started is when s started (zero when the trace does not say): the key
// derive.SplitByStart holds sessions out by.
func (s Session) Started() time.Time { return s.Start }

// Tools returns the distinct tools s called, sorted.
func (s Session) Tools() []string {
	var out []string
	for _, c := range s.Calls {
		out = append(out, c.Tool)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// QueryTurns is how many turns a replayed search's query is written from:
// the call's turn and the one before it. A later turn often only answers
// a clarification ("His name is Bob.", "To EUR please") and the request
// it completes is the turn before; older turns name tools the session
// has mostly used already, and their words pull their siblings up. The
// best on a validation part of the learning sessions
// (TestEvalDefaultWeights).
const QueryTurns = 2

// query is what a search for a call of turn i asks: a model writes its
// query from the conversation so far, so the words of the latest
// QueryTurns turns with words up to and including turn i, oldest first,
// joined by a space (a turn that only answers the assistant, or that a
// trace left blank, is skipped); never a later turn's. "" when there are
// none.
func (s Session) query(i int) string { return s.queryFrom(i, QueryTurns) }

// queryFrom is query written from the latest n turns with words (n < 1:
// one).
func (s Session) queryFrom(i, n int) string {
	var parts []string
	for i = min(i, len(s.Turns)-1); i >= 0 && len(parts) < max(n, 1); i-- {
		if strings.TrimSpace(s.Turns[i]) != "" {
			parts = append(parts, s.Turns[i])
		}
	}
	slices.Reverse(parts)
	return strings.Join(parts, " ")
}

// LoadTrace reads the sessions of a trace file (JSON Lines, as profiler
// import reads it); a malformed line is an error, since a skipped session
// would move every figure.
func LoadTrace(path string) ([]Session, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open trace: %w", err)
	}
	defer f.Close()
	ts, _, err := telemetry.DecodeTrace(f, path, false)
	if err != nil {
		return nil, err
	}
	return FromTrace(ts), nil
}

// HeldOut returns the sessions whose ids are in ids, in the order of ids:
// the held-out part derive reports (derive.Result.HoldoutSessions). An id
// no session has is an error, since the figures would then rest on fewer
// sessions than derive tested its profiles on.
func HeldOut(sessions []Session, ids []string) ([]Session, error) {
	byID := make(map[string]int, len(sessions))
	for i, s := range sessions {
		byID[s.ID] = i
	}
	out := make([]Session, 0, len(ids))
	for _, id := range ids {
		i, ok := byID[id]
		if !ok {
			return nil, fmt.Errorf("held-out session %q is not in the trace", id)
		}
		out = append(out, sessions[i])
	}
	return out, nil
}

// Learning returns the sessions that started before the first held-out
// one (heldOut: derive.Result.HoldoutSessions), in time order as derive
// orders them (derive.TimeOrderIndex): the part of a trace derive learned
// from, which a search base is derived from (ChooseConfig.Learn). A
// session derive kept out of both parts (served a restricted profile)
// that started in the held-out period is not learned from either: the
// held-out part would then test a base learned from its own period. With
// nothing held out, every session.
func Learning(sessions []Session, heldOut []string) []Session {
	held := make(map[string]bool, len(heldOut))
	for _, id := range heldOut {
		held[id] = true
	}
	starts := make([]time.Time, len(sessions))
	for i, s := range sessions {
		starts[i] = s.Start
	}
	order := derive.TimeOrderIndex(starts)
	var out []Session
	for i := range sessions {
		if order != nil {
			i = order[i]
		}
		if held[sessions[i].ID] {
			break
		}
		out = append(out, sessions[i])
	}
	return out
}
