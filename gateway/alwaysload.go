package gateway

import (
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// MetaAlwaysLoad marks, in a tool's _meta, a tool a client with its own
// tool search loads up front; it defers the others and finds them when
// needed. A profile with always_load = "P" (profiles.toml) lists every
// tool its rules allow within the ceiling, and marks P's tools so: the
// client's prompt holds P's definitions only, while every listed tool
// stays callable exactly as listed.
const MetaAlwaysLoad = "anthropic/alwaysLoad"

// withAlwaysLoad marks the tools of profile's always_load profile in
// tools, in place, with copies: the catalog's definitions are shared by
// every session and never modified.
func (g *Gateway) withAlwaysLoad(profile string, tools []*mcp.Tool) {
	r := g.cat().resolved
	p, ok := r.Profiles[profile]
	if !ok || p.AlwaysLoad == "" {
		return
	}
	load, ok := r.Profiles[p.AlwaysLoad]
	if !ok {
		return
	}
	for i, t := range tools {
		if !load.Has(t.Name) {
			continue
		}
		c := *t
		c.Meta = maps.Clone(t.Meta)
		if c.Meta == nil {
			c.Meta = mcp.Meta{}
		}
		c.Meta[MetaAlwaysLoad] = true
		tools[i] = &c
	}
}
