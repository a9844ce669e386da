package evaluate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/toolprof/toolprof/profiles"
)

// DerivedSearchProfile names the profile a search base derived from the
// learning sessions (DeriveSearchBase) is served under: its tools listed
// beside find_tools and call_tool, search = true.
const DerivedSearchProfile = "search"

// SearchBase is a search base derived from learning sessions: the tools
// to list beside find_tools and call_tool for the least mean cost per
// session of the search arm, as Run prices it (a needed use the search
// misses is a refusal, find_tools' answers are conversation).
type SearchBase struct {
	// Start is the profile the search started from: its tools are the
	// first base, and its measured demand ranks find_tools for the
	// derived one.
	Start string
	Tools []string // sorted
	// StartCost and Cost are the search arm's mean cost per learning
	// session over Start's tools and over Tools.
	StartCost, Cost float64
	// Moves are the steps taken, in order: "+tool" listed, "-tool" no
	// longer listed.
	Moves []string
}

// DeriveSearchBase finds, by local search from cfg.SearchBase's tools
// (the file's smallest profile but full when ""), the base for the search
// arm with the least mean cost per session over cfg.Sessions, which must
// be learning sessions only. Each step ranks the moves (list a tool a
// session called, or stop listing one) by their cost, an estimate for a
// listing (only the sessions it can change are replayed), ties to the
// tool first by name, and takes the first in that order whose whole
// replay lowers the cost; the search stops when none does. The cost of
// each base taken is Run's own replay of the search arm over it. The base is derived
// under the start's rules, its profiles.toml entry's too (withSearchBase):
// a tool the start may not serve is never listed. Listing a tool costs
// its definition on every turn and saves the refusals and find_tools
// answers of the sessions that need it.
func DeriveSearchBase(ctx context.Context, cfg Config) (*SearchBase, error) {
	if cfg.Profiles == nil || cfg.Profiles.File == nil {
		return nil, errors.New("evaluate: search base: a profiles file is needed")
	}
	if len(cfg.Sessions) == 0 {
		return nil, errors.New("evaluate: search base: no learning sessions to derive it from")
	}
	file := cfg.Profiles.File
	if slices.ContainsFunc(file.Profiles, func(p profiles.Profile) bool { return p.Name == DerivedSearchProfile }) {
		return nil, fmt.Errorf("evaluate: search base: profile %q exists already; the derived search base is served under that name: rename the profile", DerivedSearchProfile)
	}
	start := cfg.SearchBase
	if start == "" {
		start = smallestProfile(file)
	}
	si := slices.IndexFunc(file.Profiles, func(p profiles.Profile) bool { return p.Name == start })
	if si < 0 || start == profiles.FullProfile {
		return nil, fmt.Errorf("evaluate: search base: start %q is not a profile of the file but full", start)
	}
	// Measured with no tools listed, so that every tool the profile may
	// hold is searchable and its price is the one Run lists it at.
	set, err := withSearchBase(cfg.Profiles, start, nil)
	if err != nil {
		return nil, err
	}
	run := cfg
	run.Profiles, run.SearchBase = set, DerivedSearchProfile
	m, err := prepare(ctx, run)
	if err != nil {
		return nil, err
	}
	empty, err := m.armOf(ArmSearch, searchArmProfile)
	if err != nil {
		return nil, err
	}
	empty.profile = DerivedSearchProfile
	armFor := func(tools map[string]bool) arm {
		a := empty
		a.listed = append(slices.Clone(empty.listed), slices.Sorted(maps.Keys(tools))...)
		a.searchable = func(t string) bool { return !tools[t] && empty.searchable(t) }
		return a
	}
	calls := make([]map[string]bool, len(cfg.Sessions))
	for i, s := range cfg.Sessions {
		calls[i] = map[string]bool{}
		for _, t := range s.Tools() {
			calls[i][t] = true
		}
	}
	n := float64(len(cfg.Sessions))
	// replayed is a base replayed over every session: the exact cost.
	type replayed struct {
		tools map[string]bool
		plays []*played
		mean  float64
	}
	replayAll := func(tools map[string]bool) (*replayed, error) {
		r := m.replay(armFor(tools))
		out := &replayed{tools: tools}
		var sum float64
		for _, s := range cfg.Sessions {
			p, err := r.play(s)
			if err != nil {
				return nil, fmt.Errorf("evaluate: session %q: %w", s.ID, err)
			}
			out.plays = append(out.plays, p)
			sum += r.cost(p)
		}
		out.mean = sum / n
		return out, nil
	}
	// addCost is the mean cost with t listed as well: a session that
	// neither calls t nor was returned it by a search plays as before and
	// is only priced with the longer listing; the others are replayed.
	// An estimate (see played.returned): the move taken is replayed whole.
	addCost := func(cur *replayed, t string) (float64, error) {
		tools := maps.Clone(cur.tools)
		tools[t] = true
		r := m.replay(armFor(tools))
		var sum float64
		for i, s := range cfg.Sessions {
			if !calls[i][t] && !cur.plays[i].returned[t] {
				sum += r.cost(cur.plays[i])
				continue
			}
			c, err := r.session(s)
			if err != nil {
				return 0, fmt.Errorf("evaluate: session %q: %w", s.ID, err)
			}
			sum += c
		}
		return sum / n, nil
	}
	// A tool no learning session called only costs its listing; one the
	// profile may not hold cannot be listed.
	var candidates []string
	for i := range cfg.Sessions {
		for t := range calls[i] {
			if empty.searchable(t) {
				candidates = append(candidates, t)
			}
		}
	}
	slices.Sort(candidates)
	candidates = slices.Compact(candidates)

	first := map[string]bool{}
	for _, t := range m.resolved.Profiles[start].Tools {
		if empty.searchable(t) {
			first[t] = true
		}
	}
	cur, err := replayAll(first)
	if err != nil {
		return nil, err
	}
	b := &SearchBase{Start: start, StartCost: cur.mean}
	lower := func(c, than float64) bool { return c < than-1e-9*max(1, than) } // by more than rounding
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		type move struct {
			tool string
			cost float64
		}
		var moves []move
		for _, t := range candidates {
			if cur.tools[t] {
				continue
			}
			c, err := addCost(cur, t)
			if err != nil {
				return nil, err
			}
			moves = append(moves, move{t, c})
		}
		for _, t := range slices.Sorted(maps.Keys(cur.tools)) {
			tools := maps.Clone(cur.tools)
			delete(tools, t)
			next, err := replayAll(tools)
			if err != nil {
				return nil, err
			}
			moves = append(moves, move{t, next.mean})
		}
		slices.SortStableFunc(moves, func(a, b move) int { return cmp.Or(cmp.Compare(a.cost, b.cost), cmp.Compare(a.tool, b.tool)) })
		var next *replayed
		for _, mv := range moves {
			if !lower(mv.cost, cur.mean) {
				break
			}
			tools := maps.Clone(cur.tools)
			listed := flip(tools, mv.tool)
			// Replayed whole before it is taken, so that the base's cost is
			// exactly the one Run reports for it.
			r, err := replayAll(tools)
			if err != nil {
				return nil, err
			}
			if lower(r.mean, cur.mean) {
				next = r
				b.Moves = append(b.Moves, map[bool]string{true: "+", false: "-"}[listed]+mv.tool)
				break
			}
		}
		if next == nil {
			break
		}
		cur = next
	}
	b.Cost = cur.mean
	tools := cur.tools
	b.Tools = slices.Sorted(maps.Keys(tools))
	if b.Tools == nil {
		b.Tools = []string{}
	}
	return b, nil
}

// Served returns set with the base added as profile DerivedSearchProfile,
// under its start's rules (withSearchBase), as ChooseDefault measures it.
func (b *SearchBase) Served(set *profiles.Set) (*profiles.Set, error) {
	return withSearchBase(set, b.Start, b.Tools)
}

// smallestProfile is the file's profile with the fewest tools but full,
// the first in file order on a tie; "" when it has none.
func smallestProfile(f *profiles.File) string {
	best := -1
	for i, p := range f.Profiles {
		if p.Name == profiles.FullProfile {
			continue
		}
		if best < 0 || len(p.Tools) < len(f.Profiles[best].Tools) {
			best = i
		}
	}
	if best < 0 {
		return ""
	}
	return f.Profiles[best].Name
}

// withSearchBase is set with profile DerivedSearchProfile added to its
// file: tools, search = true, start's restrictions (read_only,
// searchable), and start's measured demand (its [search] entry) copied
// under its name, so that find_tools ranks for its sessions as for
// start's. Start's profiles.toml entry, when it has one and
// DerivedSearchProfile none, is copied under DerivedSearchProfile into
// the returned set only (profiles.toml is the operator's; CheckServed
// refuses to serve the arm until they add it): the base is derived and
// measured under start's deny, read_only, searchable and pin, never
// wider.
func withSearchBase(set *profiles.Set, start string, tools []string) (*profiles.Set, error) {
	f := *set.File
	i := slices.IndexFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == start })
	if i < 0 {
		return nil, fmt.Errorf("evaluate: search base: start %q is not a profile of the file", start)
	}
	sp := f.Profiles[i]
	p := profiles.Profile{Name: DerivedSearchProfile, Search: true, Tools: append([]string{}, tools...),
		ReadOnly: sp.ReadOnly, Searchable: slices.Clone(sp.Searchable)}
	f.Profiles = append(slices.Clone(f.Profiles), p)
	if f.Search != nil {
		s := *f.Search
		s.Profiles = slices.Clone(s.Profiles)
		if j := slices.IndexFunc(s.Profiles, func(d profiles.SearchProfile) bool { return d.Name == start }); j >= 0 {
			d := s.Profiles[j]
			d.Name, d.Tools = DerivedSearchProfile, slices.Clone(d.Tools)
			s.Profiles = append(s.Profiles, d)
		}
		f.Search = &s
	}
	out := *set
	out.File = &f
	if pol := set.Policy; pol != nil {
		entry := func(n string) int {
			return slices.IndexFunc(pol.Profiles, func(p profiles.PolicyProfile) bool { return p.Name == n })
		}
		if j := entry(start); j >= 0 && entry(DerivedSearchProfile) < 0 {
			pp := pol.Profiles[j]
			pp.Name, pp.Search = DerivedSearchProfile, nil
			pp.Pin, pp.Deny, pp.Searchable = slices.Clone(pp.Pin), slices.Clone(pp.Deny), slices.Clone(pp.Searchable)
			p := *pol
			p.Profiles = append(slices.Clone(pol.Profiles), pp)
			out.Policy = &p
		}
	}
	return &out, nil
}

// flip lists t in set when it is not, else stops listing it, and reports
// whether it is listed now.
func flip(set map[string]bool, t string) bool {
	if set[t] {
		delete(set, t)
		return false
	}
	set[t] = true
	return true
}
