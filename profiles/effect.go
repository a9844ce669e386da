package profiles

import (
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Kind is what calling a tool does to the world.
type Kind string

// The effect kinds, from harmless to irreversible.
const (
	KindRead        Kind = "read"        // observes only
	KindEvaluate    Kind = "evaluate"    // computes without changing state; set only by the operator
	KindMutate      Kind = "mutate"      // changes state
	KindDestructive Kind = "destructive" // changes state in a way that may not be undone
)

// Kinds lists the valid kinds in order.
var kinds = [...]Kind{KindRead, KindEvaluate, KindMutate, KindDestructive}

// Valid reports whether k is one of the four kinds.
func (k Kind) Valid() bool {
	for _, v := range kinds {
		if k == v {
			return true
		}
	}
	return false
}

// ReadOnly reports whether a read-only profile may hold a tool of kind k.
func (k Kind) ReadOnly() bool { return k == KindRead || k == KindEvaluate }

func kindList() string {
	s := make([]string, len(kinds))
	for i, k := range kinds {
		s[i] = string(k)
	}
	return strings.Join(s, ", ")
}

// Effect is a tool's effect kind and whether it reaches outside the
// upstream's own state (an external side effect).
type Effect struct {
	Kind     Kind
	External bool
}

// EffectOf classifies t. p may be nil.
//
// From annotations: readOnlyHint true is read (whatever destructiveHint
// says, since MCP gives destructiveHint meaning only for non-read-only
// tools); otherwise an explicit destructiveHint true is destructive;
// otherwise mutate. openWorldHint true is external. MCP defines absent
// destructiveHint and openWorldHint as true, but the product treats only an
// explicit true as destructive or external: most upstreams omit the hints,
// and reading every unannotated tool as destructive would strip it from every
// profile but full. The operator corrects individual tools in profiles.toml.
//
// From the policy, which wins over annotations:
//   - a tool named, or matched by a '*' pattern, in destructive is
//     destructive, whatever any [[effect]] rule says (a safety list only
//     adds protection; an exact-name [[effect]] contradicting an exact
//     destructive entry is refused at load);
//   - otherwise [[effect]] rules set kind and external, each independently:
//     for each of the two fields, a rule naming the tool exactly beats any
//     pattern, and among matching patterns the one written last wins (write
//     general patterns first, like .gitignore). "evaluate" comes only from
//     such a rule.
func EffectOf(t *mcp.Tool, p *Policy) Effect {
	var e Effect
	if a := t.Annotations; a != nil {
		switch {
		case a.ReadOnlyHint:
			e.Kind = KindRead
		case a.DestructiveHint != nil && *a.DestructiveHint:
			e.Kind = KindDestructive
		default:
			e.Kind = KindMutate
		}
		e.External = a.OpenWorldHint != nil && *a.OpenWorldHint
	} else {
		e.Kind = KindMutate
	}
	if p == nil {
		return e
	}
	if r, ok := ruleFor(p.Effects, t.Name, func(r EffectRule) bool { return r.Kind != "" }); ok {
		e.Kind = Kind(r.Kind)
	}
	if r, ok := ruleFor(p.Effects, t.Name, func(r EffectRule) bool { return r.External != nil }); ok {
		e.External = *r.External
	}
	for _, d := range p.Destructive {
		if matchName(d, t.Name) {
			e.Kind = KindDestructive
			break
		}
	}
	return e
}

// ruleFor returns the rule that decides one field (sets says whether a rule
// speaks to it) for the tool called name.
func ruleFor(rules []EffectRule, name string, sets func(EffectRule) bool) (EffectRule, bool) {
	var pattern *EffectRule
	for i := range rules {
		r := &rules[i]
		if !sets(*r) {
			continue
		}
		if r.Tool == name && !isPattern(r.Tool) {
			return *r, true
		}
		if isPattern(r.Tool) && matchName(r.Tool, name) {
			pattern = r
		}
	}
	if pattern != nil {
		return *pattern, true
	}
	return EffectRule{}, false
}

func isPattern(s string) bool { return strings.Contains(s, "*") }

// matchName matches name against pattern, where '*' stands for any run of
// characters (none included) and every other character for itself. It is
// not path.Match: tool names may contain '[', '?' and '\'.
func matchName(pattern, name string) bool {
	if !isPattern(pattern) {
		return pattern == name
	}
	parts := strings.Split(pattern, "*")
	if !strings.HasPrefix(name, parts[0]) {
		return false
	}
	name = name[len(parts[0]):]
	last := parts[len(parts)-1]
	for _, part := range parts[1 : len(parts)-1] {
		i := strings.Index(name, part)
		if i < 0 {
			return false
		}
		name = name[i+len(part):]
	}
	return strings.HasSuffix(name, last)
}
