package groups

import (
	"encoding/binary"
	"maps"
	"slices"
	"time"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

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

// selectSessions keeps the sessions whose demand is observable, in time
// order (derive.TimeOrder, as derive orders them), with their demand as
// catalog tool indices.
//
// Demand is observable in a session that saw every tool (served full, with
// no profile recorded, or by exploration) and in one served a profile of
// prior whose base and offered groups together reach every catalog tool:
// such a session could switch on whatever it needed. A group it switched on
// counts as demand for every tool of that group (as prior defines it), the
// calls it made as demand for the tools called (derive.CatalogDemand: calls
// to the gateway's own tools, enable_tools among them, are none).
//
// Of a session it reads the tools called, the groups switched on
// (Session.Switches), the start and what it was served (profile,
// exploration, read-only).
//
// grouped[i] says whether used[i] was served a grouped profile (derive does
// not learn from those; derive.Split needs to know).
func selectSessions(sessions []telemetry.Usage, index map[string]int, prior *profiles.File, paths map[string]price.Session) (used []derive.Demand, grouped []bool, c Counts) {
	c = Counts{Input: len(sessions)}
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
	used = make([]derive.Demand, 0, len(sessions))
	grouped = make([]bool, 0, len(sessions))
	for _, s := range sessions {
		switch {
		case derive.SawEveryTool(s.Session.Profile, s.Session.Exploration, s.Session.ReadOnly):
			grouped = append(grouped, false)
		case reachAll[s.Session.Profile] && !s.Session.ReadOnly:
			c.Grouped++
			grouped = append(grouped, true)
		default:
			c.Restricted++
			continue
		}
		if len(s.Tools) == 0 && len(s.Session.Switches) == 0 {
			c.ZeroCalls++
		}
		idx, miss := derive.CatalogDemand(make([]int, 0, len(s.Tools)), s.Tools, index, unknownTools)
		for _, sw := range s.Session.Switches {
			ts, ok := groupTools[sw.Group]
			if !ok {
				unknownGroups[sw.Group] = true
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
		path, ok := paths[s.Session.ID]
		used = append(used, derive.Demand{Tools: idx, Start: s.Session.Start, Path: pathOf(path, ok, idx, index)})
	}
	c.Used = len(used)
	c.UnknownTools = slices.Sorted(maps.Keys(unknownTools))
	c.UnknownGroups = slices.Sorted(maps.Keys(unknownGroups))
	starts := make([]time.Time, len(used))
	for i, u := range used {
		starts[i] = u.Start
	}
	if order := derive.TimeOrderIndex(starts); order != nil {
		sortedUsed, sortedGrouped := make([]derive.Demand, len(used)), make([]bool, len(used))
		for i, o := range order {
			sortedUsed[i], sortedGrouped[i] = used[o], grouped[o]
		}
		used, grouped = sortedUsed, sortedGrouped
	}
	return used, grouped, c
}

// reduce groups sessions by their demand set, sorted by tool list.
func reduce(sessions []derive.Demand) []weighted {
	var out []weighted
	byKey := map[string]int{}
	var key []byte
	for _, s := range sessions {
		key = key[:0]
		for _, t := range s.Tools {
			key = binary.AppendUvarint(key, uint64(t))
		}
		if i, ok := byKey[string(key)]; ok {
			out[i].weight++
			continue
		}
		byKey[string(key)] = len(out)
		out = append(out, weighted{tools: s.Tools, weight: 1})
	}
	slices.SortFunc(out, func(a, b weighted) int { return slices.Compare(a.tools, b.tools) })
	return out
}
