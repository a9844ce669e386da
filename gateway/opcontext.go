package gateway

// The operating context (package opcontext) in the gateway: the summary
// appended to each new session's instructions, get_operating_context added
// to every profile while the context is active, and the registry check and
// "@auto" resolution on every forwarded call. Each helper takes the Source
// and is a no-op for a nil or inactive one: a gateway without a sidecar
// serves nothing of it.

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/opcontext"
	"github.com/toolprof/toolprof/profiles"
)

// CodeOperatingContextRejected: the operating context's registry refused a
// write (enforce = "reject"). The call never reaches the upstream. Category
// "policy", not retryable as is.
const CodeOperatingContextRejected = "operating_context_rejected"

// contextInstructions composes a new session's instructions: the profile's,
// then the context summary as the sidecar reads now.
func contextInstructions(oc *opcontext.Source, profileInstructions string) string {
	if oc == nil {
		return profileInstructions
	}
	return oc.Instructions(profileInstructions)
}

// ownsContextTool reports whether the gateway serves get_operating_context
// now: the context is active and the upstream has no tool of that name (the
// upstream's own tool is never shadowed).
func (g *Gateway) ownsContextTool(oc *opcontext.Source) bool {
	if oc == nil {
		return false
	}
	if _, clash := g.cat().tools[opcontext.ToolName]; clash {
		return false
	}
	return oc.Active()
}

// withContextTool adds get_operating_context to a tools/list result: to the
// only page, or to the last one when paging, so a paging client sees it
// once.
func (g *Gateway) withContextTool(oc *opcontext.Source, res *mcp.ListToolsResult) {
	if res == nil || res.NextCursor != "" || !g.ownsContextTool(oc) {
		return
	}
	// It only reads (the file is its only write path).
	res.Tools = append(res.Tools, withEffect(oc.Tool(), profiles.Effect{Kind: profiles.KindRead}))
}

// contextTool answers a call to get_operating_context; ok is false for
// any other tool, or when the gateway does not serve it now.
func (g *Gateway) contextTool(oc *opcontext.Source, params *mcp.CallToolParamsRaw) (res *mcp.CallToolResult, ok bool, err error) {
	if params == nil || params.Name != opcontext.ToolName || !g.ownsContextTool(oc) {
		return nil, false, nil
	}
	res, err = oc.CallTool(params.Arguments)
	return res, true, err
}

// contextCheck runs the registry check and "@auto" resolution on a call the
// profile allows. It returns the params to forward (a copy with the
// resolved arguments, or params itself when nothing changed), or a refusal
// to return instead of forwarding. The caller applies d.Annotate to the
// upstream's result. client is the session's client name.
func (g *Gateway) contextCheck(ctx context.Context, oc *opcontext.Source, client string, params *mcp.CallToolParamsRaw) (forward *mcp.CallToolParamsRaw, refused *mcp.CallToolResult, d opcontext.Decision, err error) {
	if oc == nil {
		return params, nil, opcontext.Decision{Arguments: params.Arguments}, nil
	}
	tool, ok := g.cat().tools[params.Name]
	if !ok {
		return params, nil, opcontext.Decision{Arguments: params.Arguments}, nil
	}
	d, err = oc.Check(ctx, opcontext.CallInfo{
		Tool: params.Name,
		// Unknown effect (Kind "") counts as a write: the stricter reading.
		Writes:      !g.cat().resolved.Effect(params.Name).Kind.ReadOnly(),
		InputSchema: tool.InputSchema,
		Arguments:   params.Arguments,
		Client:      client,
	})
	if err != nil {
		if ctx.Err() != nil {
			return nil, nil, d, ctx.Err()
		}
		return nil, nil, d, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: err.Error()}
	}
	if d.Rejected() {
		res := Envelope{
			Code:      CodeOperatingContextRejected,
			Message:   d.Reject,
			Retryable: false,
			Category:  CategoryPolicy,
			SuggestedActions: []string{
				"pass a project id from the registry, \"\" for the global pool, or \"@auto\" to resolve your default",
				"call " + opcontext.ToolName + " to read the registry",
			},
		}.result()
		res.Meta = mcp.Meta{opcontext.MetaRevision: d.Revision}
		if d.Resolved {
			res.Meta[opcontext.MetaResolved] = d.ResolvedProjectID
		}
		return nil, res, d, nil
	}
	if string(d.Arguments) == string(params.Arguments) {
		return params, nil, d, nil
	}
	cp := *params
	cp.Arguments = d.Arguments
	return &cp, nil, d, nil
}

// ContextHealth is the operating context's part of the health output.
type ContextHealth struct {
	State    opcontext.State     `json:"state"`
	Path     string              `json:"path,omitempty"`
	Revision string              `json:"revision,omitempty"`
	Findings []opcontext.Finding `json:"findings"`
}

// contextHealth describes the sidecar for Health; nil when the gateway runs
// without an operating context.
func contextHealth(oc *opcontext.Source) *ContextHealth {
	if oc == nil {
		return nil
	}
	st := oc.Status()
	h := &ContextHealth{State: st.State, Path: st.Path, Revision: st.Revision, Findings: oc.Findings()}
	if h.Findings == nil {
		h.Findings = []opcontext.Finding{}
	}
	return h
}

// String is a one-line form of h for logs and `server --health`.
func (h *ContextHealth) String() string {
	if h == nil {
		return "none"
	}
	s := string(h.State)
	if h.Revision != "" {
		s += " rev " + h.Revision
	}
	for _, f := range h.Findings {
		s += fmt.Sprintf("; %s %s: %s", f.Severity, f.Check, f.Message)
	}
	return s
}
