package gateway

import "github.com/toolprof/toolprof/policy"

// policySnapshot is what package policy reads of cat, the catalog one
// request is answered from.
func (g *Gateway) policySnapshot(cat *catalogState) *policy.Snapshot {
	return &policy.Snapshot{Resolved: cat.resolved, Tools: cat.tools, Ceiling: g.opts.MaxProfile, ReadOnly: g.opts.ReadOnly, Search: cat.search != nil}
}
