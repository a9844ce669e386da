package groups

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// DefaultDescribeTools is how many tool names a group's description lists
// (most used first) before "… (N tools)": enough for a model to recognise
// the group, few enough that the enable_tools description stays small.
const DefaultDescribeTools = 8

// catchAllKey names the group of tools no derive session used.
const catchAllKey = "other"

// groupDraft is a group before naming: its tools (catalog indices, sorted)
// and whether it is an upstream's catch-all of unused tools.
type groupDraft struct {
	tools    []int
	catchAll bool
}

// namer names and describes groups deterministically from their tools,
// their upstreams and how often the derive part used each tool.
type namer struct {
	names    []string // tool index -> name
	upstream []string // tool index -> upstream ("" when none)
	uses     []int    // tool index -> derive sessions using it
	describe int      // tool names listed per description
	isTool   map[string]bool
}

func newNamer(names, upstream []string, uses []int, describe int) *namer {
	nm := &namer{names: names, upstream: upstream, uses: uses, describe: describe, isTool: make(map[string]bool, len(names))}
	for _, n := range names {
		nm.isTool[n] = true
	}
	return nm
}

// byUse orders tool indices most used first, then by name.
func (nm *namer) byUse(tools []int) []int {
	out := slices.Clone(tools)
	slices.SortStableFunc(out, func(a, b int) int {
		if c := cmp.Compare(nm.uses[b], nm.uses[a]); c != 0 {
			return c
		}
		return strings.Compare(nm.names[a], nm.names[b])
	})
	return out
}

// key is the readable part of a group's name: the common word prefix of
// its tools' short names ("update_reservation" for update_reservation_*)
// when there is one, else the most used tool's short name.
func (nm *namer) key(g groupDraft) string {
	if g.catchAll {
		return catchAllKey
	}
	ordered := nm.byUse(g.tools)
	if len(ordered) > 1 {
		var common []string
		for i, t := range ordered {
			words := strings.FieldsFunc(shortName(nm.names[t]), func(r rune) bool { return r == '_' || r == '-' })
			if i == 0 {
				common = words
				continue
			}
			n := 0
			for n < len(common) && n < len(words) && common[n] == words[n] {
				n++
			}
			common = common[:n]
		}
		if p := strings.Join(common, "_"); len(p) >= 3 {
			return p
		}
	}
	return shortName(nm.names[ordered[0]])
}

// sanitise keeps the characters a profiles file accepts in a name.
func sanitise(s string) string {
	b := []byte(s)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '.'
		if !ok {
			b[i] = '_'
		}
	}
	s = strings.TrimLeft(string(b), "_-.")
	if s == "" {
		s = "group"
	}
	return s
}

// name returns the groups' names, in the drafts' order. A group holding all
// of its upstream's grouped tools is named after the upstream; otherwise
// the upstream and the group's key joined by "-" (or the key alone for
// tools without an upstream). A name equal to a tool name gets "-group";
// one equal to an earlier group's name "-2", "-3", ... in draft order.
func (nm *namer) name(drafts []groupDraft) []string {
	perUpstream := map[string]int{}
	for _, g := range drafts {
		perUpstream[nm.upstream[g.tools[0]]]++
	}
	taken := map[string]bool{}
	out := make([]string, len(drafts))
	for i, g := range drafts {
		up := nm.upstream[g.tools[0]]
		var base string
		switch {
		case up != "" && perUpstream[up] == 1 && !g.catchAll:
			base = up
		case up != "":
			base = up + "-" + nm.key(g)
		default:
			base = nm.key(g)
		}
		base = sanitise(base)
		if nm.isTool[base] {
			base += "-group"
		}
		name := base
		for n := 2; taken[name] || nm.isTool[name]; n++ {
			name = fmt.Sprintf("%s-%d", base, n)
		}
		taken[name] = true
		out[i] = name
	}
	return out
}

// description is a one-line description built from the tools: the
// upstream (or "tools"), up to describe short names most used first, and
// the count: "gorilla_file_system: cd, ls, mkdir, … (18 tools)". A
// catch-all says its tools were not used in the measured sessions.
func (nm *namer) description(g groupDraft) string {
	up := nm.upstream[g.tools[0]]
	label := up
	if label == "" {
		label = "tools"
	}
	if g.catchAll {
		label = "not used in measured sessions, " + label
	}
	ordered := nm.byUse(g.tools)
	if g.catchAll {
		ordered = slices.Clone(g.tools) // no usage to rank by: catalog order
		slices.SortFunc(ordered, func(a, b int) int { return strings.Compare(nm.names[a], nm.names[b]) })
	}
	shown := ordered[:min(len(ordered), nm.describe)]
	parts := make([]string, len(shown))
	for i, t := range shown {
		parts[i] = shortName(nm.names[t])
	}
	list := strings.Join(parts, ", ")
	if len(shown) < len(ordered) {
		list += ", …"
	}
	noun := "tools"
	if len(g.tools) == 1 {
		noun = "tool"
	}
	return fmt.Sprintf("%s: %s (%d %s)", label, list, len(g.tools), noun)
}
