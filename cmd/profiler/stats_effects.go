package main

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

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

// effectKinds are the effect kinds in the order stats prints them.
func effectKinds() []string {
	return []string{string(profiles.KindRead), string(profiles.KindEvaluate), string(profiles.KindMutate), string(profiles.KindDestructive)}
}

// catalogEffects lists each tool r offers with its effect.
func catalogEffects(r *profiles.Resolved) []telemetry.ToolEffect {
	out := make([]telemetry.ToolEffect, 0, len(r.Tools))
	for _, name := range r.Tools {
		e := r.Effect(name)
		out = append(out, telemetry.ToolEffect{Name: name, Kind: string(e.Kind), External: e.External})
	}
	return out
}

// effectRows are the breakdown's header and cells, for table and markdown.
func effectRows(rows []telemetry.EffectStat) ([]string, [][]string) {
	header := []string{"effect", "tools", "external", "calls", "sessions"}
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		tools, external := fmt.Sprint(r.Tools), fmt.Sprint(r.External)
		if r.Kind == telemetry.NotInCatalog {
			tools, external = "-", "-"
		}
		cells = append(cells, []string{r.Kind, tools, external, fmt.Sprint(r.Calls), fmt.Sprint(r.Sessions)})
	}
	return header, cells
}

// writeEffectsMarkdown appends the breakdown as a markdown table.
func writeEffectsMarkdown(b *strings.Builder, rows []telemetry.EffectStat) {
	header, cells := effectRows(rows)
	fmt.Fprintf(b, "\n| %s |\n| --- |%s\n", strings.Join(header, " | "), strings.Repeat(" ---: |", len(header)-1))
	for _, c := range cells {
		for i := range c {
			c[i] = markdownCell(c[i])
		}
		fmt.Fprintf(b, "| %s |\n", strings.Join(c, " | "))
	}
}
