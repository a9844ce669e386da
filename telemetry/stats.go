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
// for its client.
func Summarize(snap *Snapshot) Stats {
	st := Stats{Sessions: len(snap.Sessions), Calls: len(snap.Calls), Dropped: snap.Dropped, Segments: len(snap.Segments)}
	for _, s := range snap.Skipped {
		st.Skipped = append(st.Skipped, s.Path)
	}
	var first, last time.Time
	client, rule := map[string]string{}, map[string]string{}
	for _, s := range snap.Sessions {
		if first.IsZero() || s.Start.Before(first) {
			first = s.Start
		}
		last = later(last, later(s.Start, s.End))
		name := s.ClientName
		if name == "" {
			name = "(unnamed)"
		}
		if s.ClientVersion != "" {
			name += " " + s.ClientVersion
		}
		client[s.ID] = name
		rule[s.ID] = s.Attribution.Name()
	}
	tools, clients, outcomes, rules := breakdown{}, breakdown{}, breakdown{}, breakdown{}
	for _, s := range snap.Sessions { // sessions without calls still count
		clients.session(client[s.ID], s.ID)
		rules.session(rule[s.ID], s.ID)
	}
	for _, c := range snap.Calls {
		last = later(last, c.Start.Add(c.Duration))
		tools.call(c.Tool, c.Session)
		clients.call(client[c.Session], c.Session)
		if r, ok := rule[c.Session]; ok {
			rules.call(r, c.Session)
		}
		o := string(c.Outcome)
		if o == "" {
			o = "(not recorded)"
		}
		outcomes.call(o, c.Session)
	}
	st.Tools, st.Clients, st.Outcomes, st.Attribution = tools.rows(), clients.rows(), outcomes.rows(), rules.rows()
	if !first.IsZero() {
		st.Since, st.Until = &first, &last
	}
	return st
}

// breakdown accumulates calls and distinct sessions per key.
type breakdown map[string]*tally

type tally struct {
	calls    int
	sessions map[string]bool
}

func (b breakdown) session(key, session string) {
	a := b[key]
	if a == nil {
		a = &tally{sessions: map[string]bool{}}
		b[key] = a
	}
	a.sessions[session] = true
}

func (b breakdown) call(key, session string) {
	b.session(key, session)
	b[key].calls++
}

func (b breakdown) rows() []StatRow {
	out := make([]StatRow, 0, len(b))
	for k, a := range b {
		out = append(out, StatRow{Name: k, Calls: a.calls, Sessions: len(a.sessions)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Calls != out[j].Calls {
			return out[i].Calls > out[j].Calls
		}
		return out[i].Name < out[j].Name
	})
	return out
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
	rows := map[string]*EffectStat{}
	sessions := map[string]map[string]bool{}
	for _, k := range append(kinds[:len(kinds):len(kinds)], NotInCatalog) {
		rows[k] = &EffectStat{Kind: k}
		sessions[k] = map[string]bool{}
	}
	kindOf := map[string]string{}
	for _, t := range catalog {
		kindOf[t.Name] = t.Kind
		row := rows[t.Kind]
		if row == nil {
			continue
		}
		row.Tools++
		if t.External {
			row.External++
		}
	}
	for _, c := range snap.Calls {
		k, ok := kindOf[c.Tool]
		if !ok {
			k = NotInCatalog
		}
		if row := rows[k]; row != nil {
			row.Calls++
			sessions[k][c.Session] = true
		}
	}
	out := make([]EffectStat, 0, len(rows))
	for _, k := range kinds {
		rows[k].Sessions = len(sessions[k])
		out = append(out, *rows[k])
	}
	if row := rows[NotInCatalog]; row.Calls > 0 {
		row.Sessions = len(sessions[NotInCatalog])
		out = append(out, *row)
	}
	return out
}
