package telemetry

import (
	"sort"
	"time"
)

// Stats summarises a snapshot: its window, totals, and calls and sessions
// per tool, client, outcome and attribution rule. Its JSON form is profiler stats --format
// json.
type Stats struct {
	Since    *time.Time `json:"since,omitempty"` // earliest session start; nil without sessions
	Until    *time.Time `json:"until,omitempty"` // latest session start or end, or call end
	Sessions int        `json:"sessions"`
	Calls    int        `json:"calls"`
	Dropped  uint64     `json:"dropped_events"`
	Segments int        `json:"segments"`
	Skipped  []string   `json:"skipped_segments,omitempty"` // paths of segments left out (being written)
	Tools    []StatRow  `json:"tools"`
	Clients  []StatRow  `json:"clients"`  // "name version"; "(unnamed)" for a client without a name
	Outcomes []StatRow  `json:"outcomes"` // "(not recorded)" for calls without one
	// Attribution splits sessions and calls by the rule that grouped them
	// into a usage session: connection (protocol sessions), trace or
	// caller (2026-07-28 requests).
	Attribution []StatRow `json:"attribution"`
	// Effects counts per effect kind; left for the caller, who knows the
	// catalog (see SummarizeEffects).
	Effects []EffectStat `json:"effects,omitempty"`
}

// StatRow is one row of a breakdown: calls and sessions per key.
type StatRow struct {
	Name     string `json:"name"`
	Calls    int    `json:"calls"`
	Sessions int    `json:"sessions"`
}

// Summarize counts snap's sessions and calls. Each breakdown is sorted by
// calls, most first, then by name; a session without calls still counts
// for its client. snap is a Scan's, or a ScanStats' (which holds counts
// instead of the calls).
func Summarize(snap *Snapshot) Stats {
	tallies, toolNames, outcomeNames := snap.statTallies()
	st := Stats{Dropped: snap.Dropped, Segments: len(snap.Segments)}
	for _, s := range snap.Skipped {
		st.Skipped = append(st.Skipped, s.Path)
	}
	var first, last time.Time
	// Each session is visited once, so a key's sessions are a count, not
	// a set; tools and outcomes are ids, clients and rules few.
	tools := make([]tally, len(toolNames))
	outcomes := make([]tally, len(outcomeNames))
	clients, rules := keyed{}, keyed{}
	for i := range tallies {
		t := &tallies[i]
		calls := 0
		for _, c := range t.tools {
			tools[c.id].calls += int(c.n)
			tools[c.id].sessions++
			calls += int(c.n)
		}
		for _, c := range t.outcomes {
			outcomes[c.id].calls += int(c.n)
			outcomes[c.id].sessions++
		}
		st.Calls += calls
		last = later(last, t.lastEnd)
		client := ""
		if t.session {
			st.Sessions++
			// A session known from a switch alone has no start: the
			// window is of the others.
			if !t.start.IsZero() && (first.IsZero() || t.start.Before(first)) {
				first = t.start
			}
			last = later(last, later(t.start, t.end))
			client = t.clientName
			if client == "" {
				client = "(unnamed)"
			}
			if t.clientVersion != "" {
				client += " " + t.clientVersion
			}
			rules.add(t.attribution.Name(), calls)
		}
		clients.add(client, calls)
	}
	st.Tools = rowsOf(tools, func(id int) string { return toolNames[id] })
	st.Outcomes = rowsOf(outcomes, func(id int) string {
		if outcomeNames[id] == "" {
			return "(not recorded)"
		}
		return string(outcomeNames[id])
	})
	st.Clients, st.Attribution = clients.rows(), rules.rows()
	if !first.IsZero() {
		st.Since, st.Until = &first, &last
	}
	return st
}

// statTallies returns the per-session tallies of snap and the names of
// the ids they use: a ScanStats' own, or counted from Sessions and Calls.
// Calls of a session not in Sessions are tallied by session id, without
// a session.
func (snap *Snapshot) statTallies() ([]sessionTally, []string, []Outcome) {
	if snap.tallies != nil {
		return snap.tallies, snap.toolNames, snap.outcomeNames
	}
	tallies := make([]sessionTally, len(snap.Sessions))
	index := make(map[string]int, len(snap.Sessions))
	for i := range snap.Sessions {
		s := &snap.Sessions[i]
		tallies[i] = sessionTally{session: true, start: s.Start, end: s.End, clientName: s.ClientName, clientVersion: s.ClientVersion, attribution: s.Attribution}
		index[s.ID] = i
	}
	toolIDs, outcomeIDs := map[string]int32{}, map[Outcome]int32{}
	var toolNames []string
	var outcomeNames []Outcome
	for _, c := range snap.Calls {
		i, ok := index[c.Session]
		if !ok {
			i = len(tallies)
			index[c.Session] = i
			tallies = append(tallies, sessionTally{})
		}
		tid, ok := toolIDs[c.Tool]
		if !ok {
			tid = int32(len(toolNames))
			toolIDs[c.Tool] = tid
			toolNames = append(toolNames, c.Tool)
		}
		oid, ok := outcomeIDs[c.Outcome]
		if !ok {
			oid = int32(len(outcomeNames))
			outcomeIDs[c.Outcome] = oid
			outcomeNames = append(outcomeNames, c.Outcome)
		}
		t := &tallies[i]
		t.tools = addCount(t.tools, tid, 1)
		t.outcomes = addCount(t.outcomes, oid, 1)
		t.lastEnd = later(t.lastEnd, c.Start.Add(c.Duration))
	}
	return tallies, toolNames, outcomeNames
}

type tally struct{ calls, sessions int }

// keyed counts calls and sessions per key, for keys that are few.
type keyed map[string]*tally

func (k keyed) add(key string, calls int) {
	t := k[key]
	if t == nil {
		t = &tally{}
		k[key] = t
	}
	t.calls += calls
	t.sessions++
}

func (k keyed) rows() []StatRow {
	out := make([]StatRow, 0, len(k))
	for name, t := range k {
		out = append(out, StatRow{Name: name, Calls: t.calls, Sessions: t.sessions})
	}
	sortRows(out)
	return out
}

// rowsOf makes rows of the ids with a session.
func rowsOf(ts []tally, name func(id int) string) []StatRow {
	out := make([]StatRow, 0, len(ts))
	for id, t := range ts {
		if t.sessions > 0 {
			out = append(out, StatRow{Name: name(id), Calls: t.calls, Sessions: t.sessions})
		}
	}
	sortRows(out)
	return out
}

func sortRows(rows []StatRow) {
	sort.Slice(rows, func(i, j int) bool {
		if rows[i].Calls != rows[j].Calls {
			return rows[i].Calls > rows[j].Calls
		}
		return rows[i].Name < rows[j].Name
	})
}

func later(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// NotInCatalog is the Kind of the EffectStat row counting calls to tools
// no catalog given holds.
const NotInCatalog = "(not in catalog)"

// EffectStat is one row of the per-effect-kind breakdown.
type EffectStat struct {
	Kind     string `json:"kind"`
	Tools    int    `json:"tools"`    // catalog tools of this kind
	External int    `json:"external"` // of those, with an external side effect
	Calls    int    `json:"calls"`
	Sessions int    `json:"sessions"`
}

// ToolEffect is how the server classifies one catalog tool.
type ToolEffect struct {
	Name     string
	Kind     string
	External bool // an external side effect (openWorldHint)
}

// SummarizeEffects counts catalog tools, calls and sessions per effect
// kind, one row per kind in the order given, then a NotInCatalog row for
// calls to tools not in catalog when there are any. Tools of a kind not
// listed, and calls to them, are left out.
func SummarizeEffects(snap *Snapshot, kinds []string, catalog []ToolEffect) []EffectStat {
	tallies, toolNames, _ := snap.statTallies()
	rows := make([]EffectStat, 0, len(kinds)+1)
	row := map[string]int{}
	for _, k := range append(kinds[:len(kinds):len(kinds)], NotInCatalog) {
		row[k] = len(rows)
		rows = append(rows, EffectStat{Kind: k})
	}
	kindOf := map[string]string{}
	for _, t := range catalog {
		kindOf[t.Name] = t.Kind
		i, ok := row[t.Kind]
		if !ok {
			continue
		}
		rows[i].Tools++
		if t.External {
			rows[i].External++
		}
	}
	rowOf := make([]int, len(toolNames)) // tool id -> row, -1 for a kind not listed
	for id, name := range toolNames {
		k, ok := kindOf[name]
		if !ok {
			k = NotInCatalog
		}
		if i, ok := row[k]; ok {
			rowOf[id] = i
		} else {
			rowOf[id] = -1
		}
	}
	seen := make([]int, len(rows)) // the last tally (plus one) counted per row
	for ti := range tallies {
		for _, c := range tallies[ti].tools {
			i := rowOf[c.id]
			if i < 0 {
				continue
			}
			rows[i].Calls += int(c.n)
			if seen[i] != ti+1 {
				seen[i] = ti + 1
				rows[i].Sessions++
			}
		}
	}
	out := rows[:len(kinds)]
	if nic := rows[len(kinds)]; nic.Calls > 0 {
		out = append(out, nic)
	}
	return out
}
