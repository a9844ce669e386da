package toolsearch

import (
	"cmp"
	"maps"
	"math"
	"slices"
	"strings"
)

// DefaultPairsPerTool bounds the co-used tools Learn keeps per tool: the
// priors go into the profiles file, which people read.
const DefaultPairsPerTool = 8

// Pair is two co-used tools (A < B) and their Jaccard index.
type Pair struct {
	A, B   string
	Weight float64
}

// Learned is what Learn measured, in a stable order: tools by name, pairs
// by (A, B).
type Learned struct {
	Sessions int
	Tools    []ToolWeight
	Pairs    []Pair
	// Profiles is each profile's measured demand (LearnDemand), by name.
	Profiles []ProfileDemand
}

// ProfileDemand is what the sessions served one profile used: each tool's
// share of them.
type ProfileDemand struct {
	Name     string
	Sessions int
	Tools    []ToolWeight
}

// LearnDemand measures each profile's demand from the sessions served it,
// by profile name (each session the set of tools it used): each tool's
// share of that profile's sessions with a call, tools by name, profiles by
// name, weights rounded as Learn's.
func LearnDemand(byProfile map[string][][]string) []ProfileDemand {
	var out []ProfileDemand
	for _, name := range slices.Sorted(maps.Keys(byProfile)) {
		l := Learn(byProfile[name], 0)
		if l.Sessions > 0 {
			out = append(out, ProfileDemand{Name: name, Sessions: l.Sessions, Tools: l.Tools})
		}
	}
	return out
}

// ToolWeight is a tool and the share of sessions that used it.
type ToolWeight struct {
	Name   string
	Weight float64
}

// Learn measures priors from sessions, each the set of tools it used
// (repeats and order ignored): each tool's share of sessions, and for each
// tool its pairsPerTool most co-used tools (by Jaccard index, ties by
// name; 0 or less: DefaultPairsPerTool). A pair is kept when either of its
// tools keeps it. Weights are rounded to four decimals so that the same
// sessions always give the same bytes.
func Learn(sessions [][]string, pairsPerTool int) Learned {
	if pairsPerTool <= 0 {
		pairsPerTool = DefaultPairsPerTool
	}
	count := map[string]int{}
	both := map[[2]string]int{}
	n := 0
	for _, s := range sessions {
		tools := uniq(slices.Clone(s))
		if len(tools) == 0 {
			continue
		}
		n++
		for i, a := range tools {
			count[a]++
			for _, b := range tools[i+1:] {
				both[[2]string{a, b}]++
			}
		}
	}
	out := Learned{Sessions: n}
	if n == 0 {
		return out
	}
	for _, t := range sortedKeys(count) {
		out.Tools = append(out.Tools, ToolWeight{Name: t, Weight: round4(float64(count[t]) / float64(n))})
	}
	jaccard := func(k [2]string) float64 {
		c := both[k]
		return round4(float64(c) / float64(count[k[0]]+count[k[1]]-c))
	}
	per := map[string][]Pair{}
	for k := range both {
		p := Pair{A: k[0], B: k[1], Weight: jaccard(k)}
		per[k[0]] = append(per[k[0]], p)
		per[k[1]] = append(per[k[1]], p)
	}
	keep := map[[2]string]bool{}
	for _, ps := range per {
		slices.SortFunc(ps, byWeight)
		for _, p := range ps[:min(pairsPerTool, len(ps))] {
			keep[[2]string{p.A, p.B}] = true
		}
	}
	for k := range keep {
		out.Pairs = append(out.Pairs, Pair{A: k[0], B: k[1], Weight: jaccard(k)})
	}
	slices.SortFunc(out.Pairs, func(a, b Pair) int {
		return cmp.Or(strings.Compare(a.A, b.A), strings.Compare(a.B, b.B))
	})
	return out
}

// Priors turns what Learn measured into the form an Index reads.
func (l Learned) Priors() *Priors {
	p := &Priors{Tools: map[string]float64{}, Pairs: map[string]map[string]float64{}, Demand: map[string]map[string]float64{}}
	for _, t := range l.Tools {
		p.Tools[t.Name] = t.Weight
	}
	for _, d := range l.Profiles {
		m := make(map[string]float64, len(d.Tools))
		for _, t := range d.Tools {
			m[t.Name] = t.Weight
		}
		p.Demand[d.Name] = m
	}
	for _, pr := range l.Pairs {
		for _, d := range [][2]string{{pr.A, pr.B}, {pr.B, pr.A}} {
			if p.Pairs[d[0]] == nil {
				p.Pairs[d[0]] = map[string]float64{}
			}
			p.Pairs[d[0]][d[1]] = pr.Weight
		}
	}
	return p
}

func byWeight(a, b Pair) int {
	return cmp.Or(cmp.Compare(b.Weight, a.Weight), strings.Compare(a.A, b.A), strings.Compare(a.B, b.B))
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

func sortedKeys(m map[string]int) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
