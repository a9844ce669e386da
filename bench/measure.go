package bench

import (
	"context"
	"fmt"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// ServeFunc returns the MCP server that serves one profile (for the
// gateway, (*gateway.Gateway).Server), so that any server can be measured
// against the same profiles.
type ServeFunc func(profile string) (*mcp.Server, error)

// MeasureOptions configures MeasureProfiles.
type MeasureOptions struct {
	// Paginate makes the measuring client follow nextCursor.
	Paginate bool
	// FirstCursor starts the paging (see ExchangeOptions).
	FirstCursor string
	// Missing lists, per profile, tools it names that no upstream offers
	// (see MissingTools); they are reported, not measured.
	Missing map[string][]string
	// Sessions, when set, are priced per profile with prompt caching
	// under Cache (Report.AddSessionCost).
	Sessions []price.Session
	Cache    price.CacheModel
}

// MeasureProfiles captures the exchange of every profile in r, in r.Order,
// and builds the report. Shares are against the "full" profile, which a
// Resolved always holds.
func MeasureProfiles(ctx context.Context, r *profiles.Resolved, serve ServeFunc, c *price.Counter, opts MeasureOptions) (*Report, error) {
	order := r.Order
	if len(order) == 0 {
		order = r.Names()
	}
	var (
		inputs []ProfileInput
		full   *exchange.Exchange
	)
	for _, name := range order {
		rp := r.Profiles[name]
		if rp == nil {
			return nil, fmt.Errorf("measure profile %q: not in the resolved set", name)
		}
		srv, err := serve(name)
		if err != nil {
			return nil, fmt.Errorf("measure profile %q: serve: %w", name, err)
		}
		ex, err := exchange.Measure(ctx, srv, exchange.Options{Counter: c, Paginate: opts.Paginate, FirstCursor: opts.FirstCursor})
		if err != nil {
			return nil, fmt.Errorf("measure profile %q: %w", name, err)
		}
		in := ProfileInput{Name: name, Exchange: ex, Missing: opts.Missing[name], Effects: effectCounts(r, rp.Tools)}
		for _, g := range rp.Groups {
			tools, err := r.GroupTools(name, g)
			if err != nil {
				return nil, fmt.Errorf("measure profile %q: %w", name, err)
			}
			if in.Groups == nil {
				in.Groups = map[string][]string{}
			}
			in.Groups[g] = tools
		}
		if m := rp.Measured; m != nil {
			in.Coverage, in.HoldoutCoverage = m.Coverage, m.HoldoutCoverage
		}
		inputs = append(inputs, in)
		if name == profiles.FullProfile {
			full = ex
		}
	}
	if full == nil {
		return nil, fmt.Errorf("measure profiles: no %q profile to compare against", profiles.FullProfile)
	}
	rep, err := BuildReport(inputs, full, full.Tools, c)
	if err != nil {
		return nil, err
	}
	if opts.Sessions != nil {
		if err := rep.AddSessionCost(opts.Sessions, opts.Cache); err != nil {
			return nil, err
		}
	}
	return rep, nil
}

// effectCounts counts tools per effect kind, and those with an external side
// effect under "external".
func effectCounts(r *profiles.Resolved, tools []string) map[string]int {
	counts := map[string]int{}
	for _, t := range tools {
		e := r.Effect(t)
		if e.Kind == "" {
			continue
		}
		counts[string(e.Kind)]++
		if e.External {
			counts["external"]++
		}
	}
	return counts
}

// MissingTools returns, per profile of set, the tools it names (in the
// generated file, or pinned in profiles.toml) that offered lacks, sorted.
func MissingTools(set *profiles.Set, offered []*mcp.Tool) map[string][]string {
	have := make(map[string]bool, len(offered))
	for _, t := range offered {
		have[t.Name] = true
	}
	missing := map[string][]string{}
	note := func(profile string, names []string) {
		for _, n := range names {
			if !have[n] && !slices.Contains(missing[profile], n) {
				missing[profile] = append(missing[profile], n)
			}
		}
	}
	if set.File != nil {
		for _, p := range set.File.Profiles {
			note(p.Name, p.Tools)
		}
	}
	if set.Policy != nil {
		for _, p := range set.Policy.Profiles {
			note(p.Name, p.Pin)
		}
	}
	for _, names := range missing {
		slices.Sort(names)
	}
	return missing
}
