package gateway

// Effect kinds in the gateway: every listed tool carries its
// effect in _meta, and read-only serving lists and runs only read and
// evaluate tools.

import (
	"bytes"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/profiles"
)

// MetaEffect is the _meta key of a listed tool's effect (the "toolprof/"
// prefix keeps it apart from the upstream's own keys, which are passed
// through untouched). Its value is one string, EffectMeta: the kind
// ("read", "evaluate", "mutate" or "destructive", profiles.Kind), from the
// annotations unless profiles.toml overrides it, followed by "+external"
// when the tool reaches outside the upstream's own state (openWorldHint, or
// an [[effect]] external override). One key, the flag only when set:
// every listed tool pays for it in the client's context (12 o200k tokens
// a tool, against 20 for a kind plus an always-present boolean).
const MetaEffect = "toolprof/effect"

// externalSuffix marks an external side effect in MetaEffect's value.
const externalSuffix = "+external"

// EffectMeta is the MetaEffect value of e: "mutate", "read+external".
func EffectMeta(e profiles.Effect) string {
	if e.External {
		return string(e.Kind) + externalSuffix
	}
	return string(e.Kind)
}

// ParseEffectMeta reads the effect from a listed tool's _meta, as a client
// would; ok is false when MetaEffect is absent or not a valid value.
func ParseEffectMeta(m mcp.Meta) (e profiles.Effect, ok bool) {
	v, _ := m[MetaEffect].(string)
	kind, external := strings.CutSuffix(v, externalSuffix)
	e = profiles.Effect{Kind: profiles.Kind(kind), External: external}
	return e, e.Kind.Valid()
}

// withEffect returns a copy of t whose _meta carries e. t is not modified:
// the upstream's tools are shared.
func withEffect(t *mcp.Tool, e profiles.Effect) *mcp.Tool {
	cp := *t
	cp.Meta = maps.Clone(t.Meta)
	if cp.Meta == nil {
		cp.Meta = mcp.Meta{}
	}
	cp.Meta[MetaEffect] = EffectMeta(e)
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
	return g.policySnapshot(g.cat()).ServedReadOnly(profile)
}

// effect is the effect of an offered tool as served.
func (g *Gateway) effect(tool string) profiles.Effect {
	return g.policySnapshot(g.cat()).Effect(tool)
}

// listedTools returns, per profile, the tools it lists and lets be called:
// its tools, less those that are not read or evaluate when it is served
// read-only, and less those beyond the ceiling (a reload may put one into
// a profile whose sessions are open).
func (g *Gateway) listedTools() map[string][]string {
	listed := make(map[string][]string, len(g.cat().resolved.Profiles))
	for name, p := range g.cat().resolved.Profiles {
		ro := g.readOnly(name)
		if !ro && p.AlwaysLoad == "" && g.withinCeiling(name) {
			listed[name] = p.Tools
			continue
		}
		names := []string{}
		for _, t := range p.Tools {
			if (!ro || g.effect(t).Kind.ReadOnly()) && g.inCeiling(t) {
				names = append(names, t)
			}
		}
		listed[name] = names
	}
	return listed
}

// inCeiling reports whether tool may be served at all: there is no
// ceiling, or the ceiling profile holds it.
func (g *Gateway) inCeiling(tool string) bool {
	return g.policySnapshot(g.cat()).InCeiling(tool)
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
