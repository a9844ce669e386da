package gateway

import (
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/policy"
)

// policySnapshot is what package policy reads of cat, the catalog one
// request is answered from.
func (g *Gateway) policySnapshot(cat *catalogState) *policy.Snapshot {
	return &policy.Snapshot{Resolved: cat.resolved, Tools: cat.tools, Ceiling: g.opts.MaxProfile, ReadOnly: g.opts.ReadOnly, Search: cat.search != nil}
}

// requestSnapshot is policySnapshot for req: the ceiling of its bearer
// token bounds it too. It is looked up per request, not per session, so
// that a tokens file reload holds for open sessions.
func (g *Gateway) requestSnapshot(cat *catalogState, req mcp.Request) *policy.Snapshot {
	snap := g.policySnapshot(cat)
	if cred, ok := g.requestCredential(req); ok {
		snap.CredentialCeiling = cred.Ceiling
	}
	return snap
}

// ceilingText names snap's ceilings in a refusal's message.
func ceilingText(snap *policy.Snapshot) string {
	switch {
	case snap.CredentialCeiling == "":
		return fmt.Sprintf("the ceiling profile %q (--max-profile)", snap.Ceiling)
	case snap.Ceiling == "":
		return fmt.Sprintf("the ceiling profile %q of this token (tokens file)", snap.CredentialCeiling)
	}
	return fmt.Sprintf("the ceiling profiles %q (--max-profile) and %q of this token (tokens file)", snap.Ceiling, snap.CredentialCeiling)
}

// raiseCeilingAction is the suggested action for tools beyond snap's
// ceilings.
func raiseCeilingAction(snap *policy.Snapshot, tools []string) string {
	if snap.CredentialCeiling == "" {
		return "ask the operator to raise the ceiling (server --max-profile) to a profile holding " + strings.Join(tools, ", ")
	}
	return "ask the operator for a token whose ceiling (and the server's --max-profile) holds " + strings.Join(tools, ", ")
}
