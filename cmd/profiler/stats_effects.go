package main

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// effectStat is one row of stats' per-effect-kind breakdown (with --catalog).
type effectStat struct {
	Kind     string `json:"kind"`
	Tools    int    `json:"tools"`    // catalog tools of this kind
	External int    `json:"external"` // of those, with an external side effect
	Calls    int    `json:"calls"`
	Sessions int    `json:"sessions"`
}

// notInCatalog is the kind row of calls to tools no catalog given holds.
const notInCatalog = "(not in catalog)"

// statsEffects classifies the tools of the catalogs (the first catalog
// holding a name wins) as the server would serve them: by annotations,
// corrected by profilesPath's profiles.toml when given.
func statsEffects(catalogs []string, profilesPath string) (*profiles.Resolved, error) {
	var tools []*mcp.Tool
	seen := map[string]bool{}
	for _, path := range catalogs {
		c, err := catalog.Load(path)
		if err != nil {
			return nil, err
		}
		for _, t := range c.Tools {
			if t != nil && t.Name != "" && !seen[t.Name] {
				seen[t.Name] = true
				tools = append(tools, t)
			}
		}
	}
	if profilesPath == "" {
		return profiles.Full(tools), nil
	}
	set, err := profiles.Load(profilesPath)
	if err != nil {
		return nil, err
	}
	r, err := set.Resolve(tools)
	if err != nil {
		return nil, fmt.Errorf("profiles %s: %w", profilesPath, err)
	}
	return r, nil
}

// buildEffectStats counts catalog tools, calls and sessions per effect kind,
// in the order read, evaluate, mutate, destructive, then calls to tools in
// no catalog.
func buildEffectStats(r *profiles.Resolved, snap *telemetry.Snapshot) []effectStat {
	kinds := []string{string(profiles.KindRead), string(profiles.KindEvaluate), string(profiles.KindMutate), string(profiles.KindDestructive)}
	rows := map[string]*effectStat{}
	sessions := map[string]map[string]bool{}
	for _, k := range append(kinds, notInCatalog) {
		rows[k] = &effectStat{Kind: k}
		sessions[k] = map[string]bool{}
	}
	for _, name := range r.Tools {
		e := r.Effect(name)
		row := rows[string(e.Kind)]
		if row == nil {
			continue
		}
		row.Tools++
		if e.External {
			row.External++
		}
	}
	for _, c := range snap.Calls {
		k := notInCatalog
		if r.Offers(c.Tool) {
			k = string(r.Effect(c.Tool).Kind)
		}
		rows[k].Calls++
		sessions[k][c.Session] = true
	}
	out := make([]effectStat, 0, len(rows))
	for _, k := range kinds {
		rows[k].Sessions = len(sessions[k])
		out = append(out, *rows[k])
	}
	if row := rows[notInCatalog]; row.Calls > 0 {
		row.Sessions = len(sessions[notInCatalog])
		out = append(out, *row)
	}
	return out
}

// effectRows are the breakdown's header and cells, for table and markdown.
func effectRows(rows []effectStat) ([]string, [][]string) {
	header := []string{"effect", "tools", "external", "calls", "sessions"}
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		tools, external := fmt.Sprint(r.Tools), fmt.Sprint(r.External)
		if r.Kind == notInCatalog {
			tools, external = "-", "-"
		}
		cells = append(cells, []string{r.Kind, tools, external, fmt.Sprint(r.Calls), fmt.Sprint(r.Sessions)})
	}
	return header, cells
}

// writeEffectsMarkdown appends the breakdown as a markdown table.
func writeEffectsMarkdown(b *strings.Builder, rows []effectStat) {
	header, cells := effectRows(rows)
	fmt.Fprintf(b, "\n| %s |\n| --- |%s\n", strings.Join(header, " | "), strings.Repeat(" ---: |", len(header)-1))
	for _, c := range cells {
		for i := range c {
			c[i] = markdownCell(c[i])
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(c, " | "))
	}
}
