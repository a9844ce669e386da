package profiles

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/toolprof/toolprof/toolsearch"
)

// SearchPriors are the ranking priors find_tools adds to text relevance
// (see package toolsearch), learned by profiler derive --search from its
// training sessions: each tool's share of sessions that used it, and the
// most co-used pairs with their Jaccard index.
type SearchPriors struct {
	Sessions int          `toml:"sessions"`
	Tools    []SearchTool `toml:"tool,omitempty"`
	Pairs    []SearchPair `toml:"pair,omitempty"`
	// Profiles is each profile's measured demand: the share of the
	// training sessions served that profile that used each tool.
	Profiles []SearchProfile `toml:"profile,omitempty"`
}

// SearchProfile is one profile's measured demand.
type SearchProfile struct {
	Name     string       `toml:"name"`
	Sessions int          `toml:"sessions"`
	Tools    []SearchTool `toml:"tool,omitempty"`
}

// SearchTool is one tool's share of sessions.
type SearchTool struct {
	Name   string  `toml:"name"`
	Weight float64 `toml:"weight"`
}

// SearchPair is two co-used tools and their Jaccard index.
type SearchPair struct {
	Tools  []string `toml:"tools"`
	Weight float64  `toml:"weight"`
}

// SearchPriorsOf converts what toolsearch.Learn measured.
func SearchPriorsOf(l toolsearch.Learned) *SearchPriors {
	p := &SearchPriors{Sessions: l.Sessions}
	for _, t := range l.Tools {
		p.Tools = append(p.Tools, SearchTool{Name: t.Name, Weight: t.Weight})
	}
	for _, pr := range l.Pairs {
		p.Pairs = append(p.Pairs, SearchPair{Tools: []string{pr.A, pr.B}, Weight: pr.Weight})
	}
	for _, d := range l.Profiles {
		sp := SearchProfile{Name: d.Name, Sessions: d.Sessions}
		for _, t := range d.Tools {
			sp.Tools = append(sp.Tools, SearchTool{Name: t.Name, Weight: t.Weight})
		}
		p.Profiles = append(p.Profiles, sp)
	}
	return p
}

// Priors is the form a toolsearch.Index reads; nil priors give empty
// ones.
func (p *SearchPriors) Priors() *toolsearch.Priors {
	l := toolsearch.Learned{}
	if p != nil {
		l.Sessions = p.Sessions
		for _, t := range p.Tools {
			l.Tools = append(l.Tools, toolsearch.ToolWeight{Name: t.Name, Weight: t.Weight})
		}
		for _, pr := range p.Pairs {
			if len(pr.Tools) == 2 {
				l.Pairs = append(l.Pairs, toolsearch.Pair{A: pr.Tools[0], B: pr.Tools[1], Weight: pr.Weight})
			}
		}
		for _, sp := range p.Profiles {
			d := toolsearch.ProfileDemand{Name: sp.Name, Sessions: sp.Sessions}
			for _, t := range sp.Tools {
				d.Tools = append(d.Tools, toolsearch.ToolWeight{Name: t.Name, Weight: t.Weight})
			}
			l.Profiles = append(l.Profiles, d)
		}
	}
	return l.Priors()
}

// Searchable reports whether find_tools may return tool to a session of
// profile, and call_tool run it: the profile serves search, some upstream
// offers the tool, the profile does not list it, its deny list and its
// destructive and read-only rules allow it, and it matches one of the
// profile's searchable patterns when there are any. The operator's ceiling
// and --read-only are the gateway's to add.
func (r *Resolved) Searchable(profile, tool string) bool {
	p, ok := r.Profiles[profile]
	if !ok || !p.Search || !r.Offers(tool) || p.Has(tool) || p.denied[tool] || !p.mayHold(r.effects[tool]) {
		return false
	}
	if len(p.SearchPatterns) == 0 {
		return true
	}
	return slices.ContainsFunc(p.SearchPatterns, func(pat string) bool { return matchName(pat, tool) })
}

func validateSearch(s *SearchPriors, name string, loc *keyLines) []*Error {
	var problems []*Error
	weight := func(key string, v float64) {
		if !(v >= 0 && v <= 1) {
			problems = append(problems, &Error{File: name, Line: loc.line(key), Key: key,
				Msg: fmt.Sprintf("%v is not a weight; want a number from 0 to 1", v)})
		}
	}
	count := func(key string, v int) {
		if v < 0 {
			problems = append(problems, &Error{File: name, Line: loc.line(key), Key: key, Msg: fmt.Sprintf("%d is negative; want a count >= 0", v)})
		}
	}
	// named checks the name of the entry at key, of a kind ("tool"):
	// empty, or given before in seen, which dup (formatted with the name
	// and args) says; it marks the name seen.
	named := func(key, kind, entry string, seen map[string]bool, dup string, args ...any) {
		switch {
		case strings.TrimSpace(entry) == "":
			problems = append(problems, &Error{File: name, Line: loc.line(key), Key: key + ".name", Msg: "empty " + kind + " name"})
		case seen[entry]:
			problems = append(problems, &Error{File: name, Line: loc.line(key + ".name"), Key: key + ".name", Msg: fmt.Sprintf(dup, append([]any{entry}, args...)...)})
		}
		seen[entry] = true
	}
	count("search.sessions", s.Sessions)
	seen := map[string]bool{}
	for i, t := range s.Tools {
		key := fmt.Sprintf("search.tool[%d]", i)
		named(key, "tool", t.Name, seen, "tool %q has a weight already; give each tool one [[search.tool]]")
		weight(key+".weight", t.Weight)
	}
	for i, p := range s.Pairs {
		key := fmt.Sprintf("search.pair[%d]", i)
		if len(p.Tools) != 2 || p.Tools[0] == p.Tools[1] || p.Tools[0] == "" || p.Tools[1] == "" {
			problems = append(problems, &Error{File: name, Line: loc.line(key + ".tools"), Key: key + ".tools",
				Msg: fmt.Sprintf("%q is not a pair; want two different tool names", p.Tools)})
		}
		weight(key+".weight", p.Weight)
	}
	seenProfile := map[string]bool{}
	for i, sp := range s.Profiles {
		key := fmt.Sprintf("search.profile[%d]", i)
		named(key, "profile", sp.Name, seenProfile, "profile %q has a demand already; give each profile one [[search.profile]]")
		count(key+".sessions", sp.Sessions)
		seenTool := map[string]bool{}
		for j, t := range sp.Tools {
			tk := fmt.Sprintf("%s.tool[%d]", key, j)
			named(tk, "tool", t.Name, seenTool, "tool %q has a weight already in profile %q", sp.Name)
			weight(tk+".weight", t.Weight)
		}
	}
	return problems
}

// search writes the priors, tools by name and pairs by their names, so
// that the same priors give the same bytes.
func (e *encoder) search(s *SearchPriors) {
	if s == nil {
		return
	}
	e.line("")
	e.line("[search]")
	e.line("sessions = %d", s.Sessions)
	e.searchTools("search.tool", s.Tools)
	pairs := slices.Clone(s.Pairs)
	slices.SortFunc(pairs, func(a, b SearchPair) int {
		return cmp.Compare(strings.Join(a.Tools, "\x00"), strings.Join(b.Tools, "\x00"))
	})
	for _, p := range pairs {
		e.line("")
		e.line("[[search.pair]]")
		e.list("tools", p.Tools, false)
		e.line("weight = %s", e.float(p.Weight))
	}
	profs := slices.Clone(s.Profiles)
	slices.SortFunc(profs, func(a, b SearchProfile) int { return strings.Compare(a.Name, b.Name) })
	for _, sp := range profs {
		e.line("")
		e.line("[[search.profile]]")
		e.str("name", sp.Name)
		e.line("sessions = %d", sp.Sessions)
		e.searchTools("search.profile.tool", sp.Tools)
	}
}

// searchTools writes tools' weights as tables named table, by name.
func (e *encoder) searchTools(table string, tools []SearchTool) {
	tools = slices.Clone(tools)
	slices.SortFunc(tools, func(a, b SearchTool) int { return strings.Compare(a.Name, b.Name) })
	for _, t := range tools {
		e.line("")
		e.line("[[%s]]", table)
		e.str("name", t.Name)
		e.line("weight = %s", e.float(t.Weight))
	}
}
