package profiles

import (
	"fmt"
	"maps"
	"reflect"
	"regexp"
	"slices"
)

// DropInstructions is the upstream_instructions value that drops an
// upstream's instructions.
const DropInstructions = "drop"

// UpstreamInstructions says which of the upstreams' own instructions (from
// their initialize results) a profile serves after its own. The zero value
// serves every upstream's as it sent them. In profiles.toml, at the top
// level (every profile) or in a [[profile]] (that profile; its per-server
// entries win):
//
//	upstream_instructions = "drop"    # drop every upstream's
//
//	[profile.upstream_instructions]   # or per server of the launch document
//	github = "drop"                   # drop the github server's
//	everything = "Call test_* tools." # serve this text in place of everything's
type UpstreamInstructions struct {
	// All is DropInstructions to drop every upstream's instructions that
	// Servers does not name, or "" to keep them.
	All string
	// Servers maps a server name to DropInstructions or to the text served
	// in place of its instructions.
	Servers map[string]string
}

// For returns what to serve of server's instructions, sent: sent itself,
// a replacement text, or "" when they are dropped.
func (u UpstreamInstructions) For(server, sent string) string {
	if v, ok := u.Servers[server]; ok {
		if v == DropInstructions {
			return ""
		}
		return v
	}
	if u.All == DropInstructions {
		return ""
	}
	return sent
}

// over returns u with o laid over it: o's All, when set, and o's servers
// win.
func (u UpstreamInstructions) over(o *UpstreamInstructions) UpstreamInstructions {
	if o == nil {
		return u
	}
	out := UpstreamInstructions{All: u.All, Servers: maps.Clone(u.Servers)}
	if o.All != "" {
		// Dropping all at the profile level drops what the top level
		// replaced too.
		out.All, out.Servers = o.All, nil
	}
	for k, v := range o.Servers {
		if out.Servers == nil {
			out.Servers = map[string]string{}
		}
		out.Servers[k] = v
	}
	return out
}

// upstreamInstructions is what pol (top level, then pp) says of a
// profile's upstream instructions.
func upstreamInstructions(pol *Policy, pp *PolicyProfile) UpstreamInstructions {
	var u UpstreamInstructions
	if pol != nil {
		u = u.over(pol.UpstreamInstructions)
	}
	if pp != nil {
		u = u.over(pp.UpstreamInstructions)
	}
	return u
}

// UnmarshalTOML decodes "drop" or a table of server = "drop" or text;
// checkUpstreamInstructions has already checked the shape.
func (u *UpstreamInstructions) UnmarshalTOML(v any) error {
	switch v := v.(type) {
	case string:
		u.All = v
	case map[string]any:
		u.Servers = make(map[string]string, len(v))
		for k, s := range v {
			text, ok := s.(string)
			if !ok {
				return fmt.Errorf("upstream_instructions.%s: want a string, got %s", k, tomlType(s))
			}
			u.Servers[k] = text
		}
	default:
		return fmt.Errorf("upstream_instructions: want %q or a table, got %s", DropInstructions, tomlType(v))
	}
	return nil
}

var upstreamInstructionsType = reflect.TypeFor[UpstreamInstructions]()

// serverName is what a launch document accepts as a server name.
var serverName = regexp.MustCompile(`^[A-Za-z0-9_.-]+$`)

const upstreamInstructionsHint = `want "drop" (every upstream's), or a table of SERVER = "drop" or the text to serve in place of that server's instructions`

// checkUpstreamInstructions checks an upstream_instructions value at key.
func checkUpstreamInstructions(v any, key, name string, loc *keyLines, problems *[]*Error) {
	switch v := v.(type) {
	case string:
		if v != DropInstructions {
			*problems = append(*problems, &Error{File: name, Line: loc.line(key), Key: key,
				Msg: fmt.Sprintf("%q is not a valid value; %s", v, upstreamInstructionsHint)})
		}
	case map[string]any:
		for _, server := range slices.Sorted(maps.Keys(v)) {
			k := join(key, server)
			text, ok := v[server].(string)
			switch {
			case !serverName.MatchString(server):
				*problems = append(*problems, &Error{File: name, Line: loc.line(k), Key: k,
					Msg: fmt.Sprintf("%q is not a server name of a launch document (letters, digits, '_', '-' and '.')", server)})
			case !ok:
				*problems = append(*problems, &Error{File: name, Line: loc.line(k), Key: k,
					Msg: fmt.Sprintf("wrong type: want a string (%q or a replacement text), got %s", DropInstructions, tomlType(v[server]))})
			case text == "":
				*problems = append(*problems, &Error{File: name, Line: loc.line(k), Key: k,
					Msg: fmt.Sprintf("empty text; to drop %s's instructions write %q", server, DropInstructions)})
			}
		}
	default:
		*problems = append(*problems, &Error{File: name, Line: loc.line(key), Key: key,
			Msg: fmt.Sprintf("wrong type: got %s; %s", tomlType(v), upstreamInstructionsHint)})
	}
}
