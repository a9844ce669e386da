package bench

import (
	"errors"
	"fmt"
	"maps"

	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/telemetry"
)

// SessionCost is one profile's cost per traced session with prompt
// caching, in input-token equivalents of the model measure
// (price.DefaultFamily, o200k_base).
type SessionCost struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
	// ShareOfFull is Mean over full's mean.
	ShareOfFull float64 `json:"share_of_full"`
	// Refused counts the sessions that called a tool outside the profile
	// and its groups: each is priced on the full catalog from the turn of
	// that call on (the client falls back to full), and kept in the figures.
	Refused int `json:"refused"`
}

// SessionSummary is what the session costs were priced on.
type SessionSummary struct {
	Sessions int              `json:"sessions"`
	Cache    price.CacheModel `json:"cache"`
	// Floor lists each session's own tools from its first turn.
	Floor            price.Stats `json:"floor"`
	FloorShareOfFull float64     `json:"floor_share_of_full"`
	// IgnoredCalls counts calls to tools full does not list (the gateway's
	// own, or tools the catalog lacks); they change no listing.
	IgnoredCalls int `json:"ignored_calls"`
}

// AddSessionCost prices every session under every profile of r (its tools,
// its groups switched on at the turn of their first call, full from a
// refused call on), under full and under the floor, and records the
// figures. A listing's prefix is its instructions plus the sum of its
// tools' own model entries.
func (r *Report) AddSessionCost(sessions []price.Session, cache price.CacheModel) error {
	if err := cache.Check(); err != nil {
		return fmt.Errorf("session cost: %w", err)
	}
	full := r.Profile("full")
	if full == nil {
		return errors.New("session cost: no full profile to price against")
	}
	if len(sessions) == 0 {
		return errors.New("session cost: the trace has no sessions")
	}
	prices := price.Prices{Tools: map[string]int{}}
	for _, tc := range r.ToolCosts {
		prices.Tools[tc.Name] = tc.Model[price.DefaultFamily]
	}
	inFull := map[string]bool{}
	for _, t := range full.ToolNames {
		inFull[t] = true
	}
	for _, t := range full.ToolNames {
		if _, ok := prices.Tools[t]; !ok {
			return fmt.Errorf("session cost: full's tool %q has no model price", t)
		}
	}
	sum := &SessionSummary{Sessions: len(sessions), Cache: cache}
	kept := make([]price.Session, len(sessions))
	for i, s := range sessions {
		k := price.Session{Turns: s.Turns}
		for _, c := range s.Calls {
			if inFull[c.Tool] {
				k.Calls = append(k.Calls, c)
			} else {
				sum.IgnoredCalls++
			}
		}
		kept[i] = k
	}
	overhead := func(p *ProfileCost) int { return p.InstructionTokens[string(price.DefaultFamily)][price.O200kBase] }
	cost := func(p price.Prices, s price.Session, l price.Listing) (float64, bool) {
		turns, refused := p.Turns(s, l)
		return price.SessionCost(turns, cache), refused
	}
	fp := prices
	fp.Overhead = overhead(full)
	fullCosts := make([]float64, len(kept))
	floorCosts := make([]float64, len(kept))
	for i, s := range kept {
		fullCosts[i], _ = cost(fp, s, price.Listing{Base: full.ToolNames})
		var used []string
		seen := map[string]bool{}
		for _, c := range s.Calls {
			if !seen[c.Tool] {
				seen[c.Tool] = true
				used = append(used, c.Tool)
			}
		}
		floorCosts[i], _ = cost(fp, s, price.Listing{Base: used})
	}
	fullStats := price.Summarise(fullCosts)
	sum.Floor = price.Summarise(floorCosts)
	share := func(mean float64) float64 {
		if fullStats.Mean == 0 {
			return 0
		}
		return round4(mean / fullStats.Mean)
	}
	sum.FloorShareOfFull = share(sum.Floor.Mean)
	for i := range r.Profiles {
		p := &r.Profiles[i]
		pp := price.Prices{Tools: maps.Clone(prices.Tools), Overhead: overhead(p)}
		for t, n := range p.entries {
			if _, ok := pp.Tools[t]; !ok {
				pp.Tools[t] = n // the gateway's own tools, such as enable_tools
			}
		}
		costs := make([]float64, len(kept))
		sc := &SessionCost{}
		for j, s := range kept {
			var refused bool
			costs[j], refused = cost(pp, s, price.Listing{Base: p.ToolNames, Groups: p.Groups, Fallback: full.ToolNames})
			if refused {
				sc.Refused++
			}
		}
		st := price.Summarise(costs)
		sc.Mean, sc.P50, sc.P95, sc.ShareOfFull = round2(st.Mean), round2(st.P50), round2(st.P95), share(st.Mean)
		p.SessionCost = sc
	}
	sum.Floor = price.Stats{Sessions: sum.Floor.Sessions, Mean: round2(sum.Floor.Mean), P50: round2(sum.Floor.P50), P95: round2(sum.Floor.P95)}
	r.Sessions = sum
	return nil
}

func round2(x float64) float64 { return float64(int64(x*100+0.5)) / 100 }

// SessionsFromTrace turns trace sessions into the cost model's sessions
// (price.NewSession), in order. A malformed turn is an error naming the
// session.
func SessionsFromTrace(ts []telemetry.TraceSession) ([]price.Session, error) {
	out := make([]price.Session, 0, len(ts))
	for _, t := range ts {
		tools := make([]string, len(t.Calls))
		turns := make([]int, len(t.Calls))
		for i, c := range t.Calls {
			tools[i], turns[i] = c.Tool, -1
			if c.Turn != nil {
				turns[i] = *c.Turn
			}
		}
		s, err := price.NewSession(tools, turns, len(t.Turns))
		if err != nil {
			return nil, fmt.Errorf("session %q: %w", t.Session, err)
		}
		out = append(out, s)
	}
	return out, nil
}
