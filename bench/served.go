package bench

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// ServedCosts prices every tool of cat, by name, as a gateway serving cat
// as "full" lists it (exchange.ServedToolCosts): each tools/list entry with
// the effect _meta the gateway adds. profiler derive and the shared-data
// evaluations price tools here, so a profile's bytes and tokens are what
// profiler bench measures for the same tools. Of the policy (which may be nil)
// only the effect rules bear on the entries; its profiles refine generated
// ones that do not exist yet, so they are left out.
func ServedCosts(ctx context.Context, cat *catalog.Catalog, policy *profiles.Policy, counter *price.Counter) (map[string]exchange.ToolCost, error) {
	return servedCosts(ctx, cat, policy, func(srv *mcp.Server) ([]exchange.ToolCost, error) {
		return exchange.ServedToolCosts(ctx, srv, counter)
	})
}

// servedCosts prices cat's tools with list over the gateway's full
// listing, as ServedCosts describes.
func servedCosts(ctx context.Context, cat *catalog.Catalog, policy *profiles.Policy, list func(*mcp.Server) ([]exchange.ToolCost, error)) (map[string]exchange.ToolCost, error) {
	set := &profiles.Set{File: &profiles.File{Version: profiles.Version, Default: profiles.FullProfile}}
	if policy != nil {
		set.Policy = &profiles.Policy{Version: policy.Version, Destructive: policy.Destructive, Effects: policy.Effects}
	}
	resolved, err := set.Resolve(cat.Tools)
	if err != nil {
		return nil, fmt.Errorf("price tools as served: %w", err)
	}
	g, err := gateway.New(ctx, gateway.Options{Upstream: gateway.NewCatalogUpstream(cat), Tools: cat.Tools, Profiles: resolved,
		ServerName: version.Name, ServerVersion: version.Version})
	if err != nil {
		return nil, fmt.Errorf("price tools as served: %w", err)
	}
	defer g.Close()
	srv, err := g.Server(profiles.FullProfile)
	if err != nil {
		return nil, fmt.Errorf("price tools as served: %w", err)
	}
	listed, err := list(srv)
	if err != nil {
		return nil, fmt.Errorf("price tools as served: %w", err)
	}
	costs := make(map[string]exchange.ToolCost, len(listed))
	for _, c := range listed {
		costs[c.Name] = c
	}
	for _, t := range cat.Tools {
		if _, ok := costs[t.Name]; !ok {
			return nil, fmt.Errorf("price tools as served: the gateway did not list catalog tool %q", t.Name)
		}
	}
	return costs, nil
}

// DeriveTools is cat's tools as the derivation takes them: priced as
// served (o200k_base tokens) and marked destructive, and as changing state,
// under policy.
func DeriveTools(ctx context.Context, cat *catalog.Catalog, policy *profiles.Policy) ([]derive.Tool, error) {
	// The model measure counts o200k_base tokens alone.
	counter, err := price.NewCounterOf(price.O200kBase)
	if err != nil {
		return nil, err
	}
	// Only the default family's model measure is minimised: the other
	// figures ServedCosts gives are not tokenized.
	costs, err := servedCosts(ctx, cat, policy, func(srv *mcp.Server) ([]exchange.ToolCost, error) {
		return exchange.ServedModelCosts(ctx, srv, counter, price.DefaultFamily)
	})
	if err != nil {
		return nil, err
	}
	tools := make([]derive.Tool, len(cat.Tools))
	for i, t := range cat.Tools {
		c := costs[t.Name]
		kind := profiles.EffectOf(t, policy).Kind
		tools[i] = derive.Tool{Name: t.Name, Bytes: c.Bytes, Tokens: c.Model[price.DefaultFamily],
			Destructive: kind == profiles.KindDestructive, Mutates: !kind.ReadOnly()}
	}
	return tools, nil
}
