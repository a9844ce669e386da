package opcontext

import (
	"bytes"
	"errors"
	"fmt"
	"regexp"
	"strings"

	"github.com/BurntSushi/toml"
)

// FormatVersion is the sidecar file-format version this package reads.
const FormatVersion = 1

// DefaultArgument is the tool argument the registry validates when the file
// does not name another one.
const DefaultArgument = "project_id"

// AgentArgument is the tool argument that, when a tool's schema has it, names
// the agent whose [defaults] entry resolves "@auto".
const AgentArgument = "agent_id"

// Auto is the opt-in sentinel that resolves through [defaults].
const Auto = "@auto"

// Enforce is the registry's enforcement mode.
type Enforce string

// The enforcement modes. Warn is the default: a stale registry must not
// block writes.
const (
	EnforceOff    Enforce = "off"
	EnforceWarn   Enforce = "warn"
	EnforceReject Enforce = "reject"
)

// UnmarshalText rejects any value but the three modes, so that the decoder
// reports the line and key of a typo.
func (e *Enforce) UnmarshalText(b []byte) error {
	switch v := Enforce(b); v {
	case EnforceOff, EnforceWarn, EnforceReject:
		*e = v
		return nil
	default:
		return fmt.Errorf("enforce %q is not a mode; valid values: \"off\", \"warn\", \"reject\"", string(b))
	}
}

// File is the sidecar operating-context.toml. The filesystem is its only
// write path; nothing in toolprof writes it.
type File struct {
	Version         int               `toml:"version"`
	ContextRevision string            `toml:"context_revision"`
	Instructions    Instructions      `toml:"instructions"`
	Registry        Registry          `toml:"registry"`
	Defaults        map[string]string `toml:"defaults"` // agent id -> project id, for "@auto" only
	Doctrine        []Doctrine        `toml:"doctrine"`

	// hasRegistry records whether project_ids was written at all: an absent
	// list means no registry (nothing to validate), an empty one means only
	// "" is valid.
	hasRegistry bool
}

// Instructions is the [instructions] table.
type Instructions struct {
	// Summary is appended to every profile's instructions in initialize.
	Summary string `toml:"summary"`
}

// Registry is the [registry] table.
type Registry struct {
	ProjectIDs []string `toml:"project_ids"`
	Enforce    Enforce  `toml:"enforce"`
	// Argument is the tool argument validated against ProjectIDs.
	Argument string `toml:"argument"`
}

// Doctrine is one [[doctrine]] section, served on demand.
type Doctrine struct {
	Name string `toml:"name"`
	Body string `toml:"body"`
}

// typeErrPattern matches the decoder's type-mismatch message.
func typeErrPattern() *regexp.Regexp {
	return regexp.MustCompile(`^toml: line (\d+) \(last key "([^"]+)"\): (?:incompatible types: TOML value has type ([^;]+);|type mismatch for [^:]+: expected \S+ but found (.+))`)
}

// expected says what a key's value must be.
func expected(key string) string {
	switch {
	case key == "version":
		return fmt.Sprintf("the integer %d", FormatVersion)
	case key == "instructions" || key == "registry":
		return "a table ([" + key + "])"
	case key == "defaults":
		return "a table ([defaults]) of agent id = \"project id\""
	case strings.HasPrefix(key, "defaults."):
		return "a string (a project id)"
	case key == "doctrine":
		return "an array of tables ([[doctrine]] with name and body)"
	case key == "registry.project_ids":
		return "an array of strings"
	case key == "registry.enforce":
		return `one of "off", "warn", "reject"`
	}
	return "a string"
}

// validKeys names the keys a table accepts, for the unknown-key error.
func validKeys(table string) []string {
	switch table {
	case "":
		return []string{"version", "context_revision", "instructions", "registry", "defaults", "doctrine"}
	case "instructions":
		return []string{"summary"}
	case "registry":
		return []string{"project_ids", "enforce", "argument"}
	case "doctrine":
		return []string{"name", "body"}
	}
	return nil
}

// Parse decodes and validates a sidecar. path only labels errors, which name
// the file, the line, the key and what would be valid.
func Parse(path string, data []byte) (*File, error) {
	var f File
	md, err := toml.NewDecoder(bytes.NewReader(data)).Decode(&f)
	if err != nil {
		var pe toml.ParseError
		if errors.As(err, &pe) {
			if pe.LastKey != "" {
				return nil, fmt.Errorf("%s:%d: key %s: %s", path, pe.Position.Line, pe.LastKey, pe.Message)
			}
			return nil, fmt.Errorf("%s:%d: %s", path, pe.Position.Line, pe.Message)
		}
		// Type mismatches come as plain errors carrying
		// "line N (last key ...)": restate them with what would be valid.
		if m := typeErrPattern().FindStringSubmatch(err.Error()); m != nil {
			return nil, fmt.Errorf("%s:%s: key %s: wrong type (%s); valid: %s",
				path, m[1], m[2], m[3]+m[4], expected(m[2]))
		}
		return nil, fmt.Errorf("%s: %s", path, strings.TrimPrefix(err.Error(), "toml: "))
	}
	// The decoder accepts a non-table value for a map field silently.
	for _, table := range []string{"instructions", "registry", "defaults"} {
		if md.IsDefined(table) && md.Type(table) != "Hash" {
			return nil, fmt.Errorf("%s:%d: key %s: wrong type (%s); valid: %s",
				path, lineOf(data, toml.Key{table}, 0), table, md.Type(table), expected(table))
		}
	}
	if und := md.Undecoded(); len(und) > 0 {
		k := und[0]
		table := ""
		if len(k) > 1 {
			table = k[0]
		}
		where := "at the top level"
		if table != "" {
			where = "in [" + table + "]"
		}
		return nil, fmt.Errorf("%s:%d: unknown key %q %s; valid keys: %s",
			path, lineOf(data, k, 0), k.String(), where, strings.Join(validKeys(table), ", "))
	}
	f.hasRegistry = md.IsDefined("registry", "project_ids")
	if err := f.validate(path, data, md); err != nil {
		return nil, err
	}
	if f.Registry.Enforce == "" {
		f.Registry.Enforce = EnforceWarn
	}
	if f.Registry.Argument == "" {
		f.Registry.Argument = DefaultArgument
	}
	return &f, nil
}

// validate checks what the decoder cannot: required values, names and
// uniqueness.
func (f *File) validate(path string, data []byte, md toml.MetaData) error {
	if !md.IsDefined("version") {
		return fmt.Errorf("%s: key version is missing; valid value: %d", path, FormatVersion)
	}
	if f.Version != FormatVersion {
		return fmt.Errorf("%s:%d: key version: %d is not supported; valid value: %d",
			path, lineOf(data, toml.Key{"version"}, 0), f.Version, FormatVersion)
	}
	if md.IsDefined("registry", "argument") && strings.TrimSpace(f.Registry.Argument) == "" {
		return fmt.Errorf("%s:%d: key registry.argument is empty; valid: a tool argument name such as %q",
			path, lineOf(data, toml.Key{"registry", "argument"}, 0), DefaultArgument)
	}
	seenID := map[string]bool{}
	for _, id := range f.Registry.ProjectIDs {
		if id == Auto {
			return fmt.Errorf("%s:%d: key registry.project_ids: %q is the resolution sentinel, not a project id",
				path, lineOf(data, toml.Key{"registry", "project_ids"}, 0), Auto)
		}
		if seenID[id] {
			return fmt.Errorf("%s:%d: key registry.project_ids: %q is listed twice",
				path, lineOf(data, toml.Key{"registry", "project_ids"}, 0), id)
		}
		seenID[id] = true
	}
	for agent, id := range f.Defaults {
		if id == Auto {
			return fmt.Errorf("%s:%d: key defaults.%s: %q cannot resolve to itself; valid: a project id",
				path, lineOf(data, toml.Key{"defaults", agent}, 0), agent, Auto)
		}
	}
	seen := map[string]bool{}
	for i, d := range f.Doctrine {
		if strings.TrimSpace(d.Name) == "" {
			return fmt.Errorf("%s:%d: [[doctrine]] number %d has no name; valid: a non-empty name such as \"recall-discipline\"",
				path, lineOf(data, toml.Key{"doctrine"}, i), i+1)
		}
		if seen[d.Name] {
			return fmt.Errorf("%s:%d: key doctrine.name: %q is used by an earlier [[doctrine]]; names must be unique",
				path, nameLine(data, d.Name), d.Name)
		}
		seen[d.Name] = true
	}
	return nil
}

// SectionNames lists the doctrine section names in file order.
func (f *File) SectionNames() []string {
	names := make([]string, len(f.Doctrine))
	for i, d := range f.Doctrine {
		names[i] = d.Name
	}
	return names
}

// knownID reports whether id is in the registry. "" is always valid.
func (f *File) knownID(id string) bool {
	if id == "" {
		return true
	}
	for _, v := range f.Registry.ProjectIDs {
		if v == id {
			return true
		}
	}
	return false
}

// validIDs renders the registry for messages: "" (always valid, listed or
// not) first, then the file's ids in file order.
func (f *File) validIDs() string {
	quoted := []string{`""`}
	for _, id := range f.Registry.ProjectIDs {
		if id != "" {
			quoted = append(quoted, fmt.Sprintf("%q", id))
		}
	}
	return strings.Join(quoted, ", ")
}

// lineOf finds the line (1-based) where key is defined, skipping the first
// skip definitions (for arrays of tables, whose keys repeat). It is a line
// scan, not a parser: the decoder does not export key positions, and this is
// only used to point a message at a line. It returns 0 when not found.
func lineOf(data []byte, key toml.Key, skip int) int {
	var table []string
	inMulti := ""
	for i, line := range strings.Split(string(data), "\n") {
		t := strings.TrimSpace(line)
		if inMulti != "" {
			if strings.Count(t, inMulti)%2 == 1 {
				inMulti = ""
			}
			continue
		}
		switch {
		case t == "" || strings.HasPrefix(t, "#"):
			continue
		case strings.HasPrefix(t, "[[") || strings.HasPrefix(t, "["):
			header := strings.Trim(strings.SplitN(t, "#", 2)[0], " []")
			table = splitKey(header)
			if keyEqual(table, key) {
				if skip == 0 {
					return i + 1
				}
				skip--
			}
			continue
		}
		eq := strings.Index(t, "=")
		if eq < 0 {
			continue
		}
		full := append(append([]string{}, table...), splitKey(t[:eq])...)
		if keyEqual(full, key) {
			if skip == 0 {
				return i + 1
			}
			skip--
		}
		value := t[eq+1:]
		for _, q := range []string{`"""`, `'''`} {
			if strings.Count(value, q)%2 == 1 {
				inMulti = q
			}
		}
	}
	return 0
}

// nameLine finds the second `name = "X"` line, the duplicate.
func nameLine(data []byte, name string) int {
	count := 0
	for i := 0; ; i++ {
		n := lineOf(data, toml.Key{"doctrine", "name"}, i)
		if n == 0 {
			return 0
		}
		line := strings.Split(string(data), "\n")[n-1]
		if strings.Contains(line, fmt.Sprintf("%q", name)) || strings.Contains(line, "'"+name+"'") {
			count++
			if count == 2 {
				return n
			}
		}
	}
}

func splitKey(s string) []string {
	var parts []string
	var cur strings.Builder
	quote := byte(0)
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case quote != 0 && c == quote:
			quote = 0
		case quote != 0:
			cur.WriteByte(c)
		case c == '"' || c == '\'':
			quote = c
		case c == '.':
			parts = append(parts, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(c)
		}
	}
	return append(parts, strings.TrimSpace(cur.String()))
}

func keyEqual(a []string, b toml.Key) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
