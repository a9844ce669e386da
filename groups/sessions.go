package groups

import (
	"encoding/binary"
	"math"
	"slices"
	"time"

	"github.com/toolprof/toolprof/profiles"
)

// Session is what the derivation of groups needs of one recorded or
// imported session.
type Session struct {
	Tools       []string  // distinct tools called, denied calls included
	Switches    []string  // groups switched on with enable_tools (telemetry Session.Switches)
	Start       time.Time // zero when unknown
	Profile     string    // profile served; "" when not recorded (saw every tool)
	Exploration bool      // served full by --explore
}

// Counts says which sessions were learned from and why others were not.
type Counts struct {
	Input      int `json:"input"`
	Used       int `json:"used"`
	Restricted int `json:"restricted"` // served a profile that could not reach every tool: skipped
	// Grouped counts used sessions served a profile whose base and groups
	// reach every tool: their switches are observed demand.
	Grouped       int      `json:"grouped"`
	ZeroCalls     int      `json:"zero_calls"`
	UnknownCalls  int      `json:"unknown_calls"` // sessions calling a tool the catalog lacks
	UnknownTools  []string `json:"unknown_tools,omitempty"`
	UnknownGroups []string `json:"unknown_groups,omitempty"` // switched groups the prior file does not define
	Derive        int      `json:"derive"`
	Holdout       int      `json:"holdout"`
}

// demandSession is a learning session reduced to catalog tool indices.
type demandSession struct {
	tools []int
	start time.Time
}

// selectSessions keeps the sessions whose demand is observable, in time
// order (stable: a session without a start keeps its place after the one
// recorded before it), with their demand as catalog tool indices.
//
// Demand is observable in a session that saw every tool (served full, with
// no profile recorded, or by exploration) and in one served a profile of
// prior whose base and offered groups together reach every catalog tool:
// such a session could switch on whatever it needed. A group it switched on
// counts as demand for every tool of that group (as prior defines it), the
// calls it made as demand for the tools called.
func selectSessions(sessions []Session, index map[string]int, prior *profiles.File) ([]demandSession, Counts) {
	c := Counts{Input: len(sessions)}
	groupTools := map[string][]string{}
	reachAll := map[string]bool{}
	if prior != nil {
		for _, g := range prior.Groups {
			groupTools[g.Name] = g.Tools
		}
		for _, p := range prior.Profiles {
			reach := map[string]bool{}
			for _, t := range p.Tools {
				reach[t] = true
			}
			for _, g := range p.Groups {
				for _, t := range groupTools[g] {
					reach[t] = true
				}
			}
			all := true
			for name := range index {
				if !reach[name] {
					all = false
					break
				}
			}
			reachAll[p.Name] = all
		}
	}
	unknownTools, unknownGroups := map[string]bool{}, map[string]bool{}
	used := make([]demandSession, 0, len(sessions))
	keys := make([]time.Time, 0, len(sessions))
	var last time.Time
	for _, s := range sessions {
		switch {
		case s.Exploration, s.Profile == "", s.Profile == profiles.FullProfile:
		case reachAll[s.Profile]:
			c.Grouped++
		default:
			c.Restricted++
			continue
		}
		if len(s.Tools) == 0 && len(s.Switches) == 0 {
			c.ZeroCalls++
		}
		idx := make([]int, 0, len(s.Tools))
		miss := false
		add := func(t string) {
			if i, ok := index[t]; ok {
				idx = append(idx, i)
			} else {
				miss = true
				unknownTools[t] = true
			}
		}
		for _, t := range s.Tools {
			add(t)
		}
		for _, g := range s.Switches {
			ts, ok := groupTools[g]
			if !ok {
				unknownGroups[g] = true
				continue
			}
			for _, t := range ts {
				if i, ok := index[t]; ok {
					idx = append(idx, i) // a tool the catalog dropped since is no demand
				}
			}
		}
		if miss {
			c.UnknownCalls++
		}
		slices.Sort(idx)
		idx = slices.Compact(idx)
		if !s.Start.IsZero() {
			last = s.Start
		}
		keys = append(keys, last)
		used = append(used, demandSession{tools: idx, start: s.Start})
	}
	order := make([]int, len(used))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return keys[a].Compare(keys[b]) })
	sorted := make([]demandSession, len(used))
	for i, o := range order {
		sorted[i] = used[o]
	}
	c.Used = len(sorted)
	c.UnknownTools = sortedKeys(unknownTools)
	c.UnknownGroups = sortedKeys(unknownGroups)
	return sorted, c
}

// split keeps the newest holdout share for testing, as derive does.
func split(used []demandSession, holdout float64) (train, test []demandSession) {
	n := int(math.Round(holdout * float64(len(used))))
	return used[:len(used)-n], used[len(used)-n:]
}

// reduce groups sessions by their demand set, sorted by tool list.
func reduce(sessions []demandSession) []weighted {
	var out []weighted
	byKey := map[string]int{}
	var key []byte
	for _, s := range sessions {
		key = key[:0]
		for _, t := range s.tools {
			key = binary.AppendUvarint(key, uint64(t))
		}
		if i, ok := byKey[string(key)]; ok {
			out[i].weight++
			continue
		}
		byKey[string(key)] = len(out)
		out = append(out, weighted{tools: s.tools, weight: 1})
	}
	slices.SortFunc(out, func(a, b weighted) int { return slices.Compare(a.tools, b.tools) })
	return out
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
