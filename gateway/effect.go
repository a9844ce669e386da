package gateway

// Effect kinds in the gateway (issue 8): every listed tool carries its
// effect in _meta, and read-only serving lists and runs only read and
// evaluate tools.

import (
	"bytes"
	"fmt"
	"maps"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
)

// The _meta keys of a listed tool. The "toolprof/" prefix keeps them apart
// from the upstream's own keys, which are passed through untouched.
const (
	// MetaEffect is the tool's effect kind: "read", "evaluate", "mutate" or
	// "destructive" (profiles.Kind), from its annotations unless
	// profiles.toml overrides it.
	MetaEffect = "toolprof/effect"
	// MetaExternal is true when the tool reaches outside the upstream's own
	// state (openWorldHint, or an [[effect]] external override).
	MetaExternal = "toolprof/external_side_effect"
)

// withEffect returns a copy of t whose _meta carries e. t is not modified:
// the upstream's tools are shared.
func withEffect(t *mcp.Tool, e profiles.Effect) *mcp.Tool {
	cp := *t
	cp.Meta = maps.Clone(t.Meta)
	if cp.Meta == nil {
		cp.Meta = mcp.Meta{}
	}
	cp.Meta[MetaEffect] = string(e.Kind)
	cp.Meta[MetaExternal] = e.External
	return &cp
}

// servedTools returns the tools as the gateway lists them, by name.
func servedTools(list []*mcp.Tool, r *profiles.Resolved) map[string]*mcp.Tool {
	served := make(map[string]*mcp.Tool, len(list))
	for _, t := range list {
		e := r.Effect(t.Name)
		if e.Kind == "" {
			// Not in the resolved set (profiles resolved against another
			// listing): classify from the tool itself.
			e = profiles.EffectOf(t, nil)
		}
		served[t.Name] = withEffect(t, e)
	}
	return served
}

// readOnly reports whether profile is served read-only.
func (g *Gateway) readOnly(profile string) bool {
	if g.opts.ReadOnly {
		return true
	}
	p, ok := g.cat().resolved.Profiles[profile]
	return ok && p.ReadOnly
}

// effect is the effect of an offered tool as served.
func (g *Gateway) effect(tool string) profiles.Effect {
	if e := g.cat().resolved.Effect(tool); e.Kind != "" {
		return e
	}
	if t, ok := g.cat().tools[tool]; ok {
		return profiles.EffectOf(t, nil)
	}
	return profiles.Effect{}
}

// listedTools returns, per profile, the tools it lists and lets be called:
// its tools, less those that are not read or evaluate when it is served
// read-only.
func (g *Gateway) listedTools() map[string][]string {
	listed := make(map[string][]string, len(g.cat().resolved.Profiles))
	for name, p := range g.cat().resolved.Profiles {
		if !g.readOnly(name) {
			listed[name] = p.Tools
			continue
		}
		names := []string{}
		for _, t := range p.Tools {
			if g.effect(t).Kind.ReadOnly() {
				names = append(names, t)
			}
		}
		listed[name] = names
	}
	return listed
}

// refusedReadOnly is the envelope for a call to a tool that is not read or
// evaluate in a session served read-only.
func (g *Gateway) refusedReadOnly(profile, tool string) Envelope {
	why := "the gateway runs with --read-only"
	if !g.opts.ReadOnly {
		why = fmt.Sprintf("profile %q is read_only", profile)
	}
	return Envelope{
		Code:      CodeReadOnly,
		Message:   fmt.Sprintf("tool %q is %s and %s: only read and evaluate tools may be called", tool, g.effect(tool).Kind, why),
		Retryable: false,
		Category:  CategoryPolicy,
		SuggestedActions: []string{
			"use a read or evaluate tool instead",
			"ask the operator for a session that is not read-only",
			"if the tool only reads, ask the operator to mark it kind = \"read\" in profiles.toml [[effect]]",
		},
	}
}

// checkArguments refuses arguments that are not a JSON object (absent and
// null are no arguments, which is allowed).
func checkArguments(tool string, args []byte) (Envelope, bool) {
	t := bytes.TrimSpace(args)
	if len(t) == 0 || bytes.Equal(t, []byte("null")) || t[0] == '{' {
		return Envelope{}, true
	}
	return Envelope{
		Code:             CodeInvalidArguments,
		Message:          fmt.Sprintf("tool %q: arguments must be a JSON object, got %s", tool, jsonKind(t[0])),
		Retryable:        false,
		Category:         CategoryValidation,
		SuggestedActions: []string{"send arguments as a JSON object, e.g. {\"name\": value}, matching the tool's inputSchema"},
	}, false
}

// jsonKind names the JSON type that starts with b.
func jsonKind(b byte) string {
	switch b {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	default:
		return "a number"
	}
}
