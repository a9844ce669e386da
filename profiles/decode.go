package profiles

import (
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"reflect"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/BurntSushi/toml"
)

// FullProfile is the reserved profile that always holds every offered tool.
const FullProfile = "full"

// profileName is what a profile or group name may look like: it appears in
// URL paths (/mcp/NAME) and on command lines.
var profileName = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

const validNameHint = "letters, digits, '_', '-' and '.', starting with a letter or digit"

// LoadFile reads and strictly decodes a generated profiles file. A missing
// file yields an error wrapping fs.ErrNotExist.
func LoadFile(path string) (*File, error) {
	f, _, err := loadFile(path)
	return f, err
}

// LoadPolicy reads and strictly decodes a hand-written profiles.toml. A
// missing file yields an error wrapping fs.ErrNotExist.
func LoadPolicy(path string) (*Policy, error) {
	p, _, err := loadPolicy(path)
	return p, err
}

// DecodeFile strictly decodes a generated profiles file read from r; name
// is used in error messages.
func DecodeFile(r io.Reader, name string) (*File, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read profiles %s: %w", name, err)
	}
	f, _, err := decodeFile(string(src), name)
	return f, err
}

// DecodePolicy strictly decodes a hand-written policy read from r; name is
// used in error messages.
func DecodePolicy(r io.Reader, name string) (*Policy, error) {
	src, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read policy %s: %w", name, err)
	}
	p, _, err := decodePolicy(string(src), name)
	return p, err
}

func loadFile(path string) (*File, *keyLines, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open profiles: %w", err)
	}
	return decodeFile(string(src), path)
}

func loadPolicy(path string) (*Policy, *keyLines, error) {
	src, err := os.ReadFile(path)
	if err != nil {
		return nil, nil, fmt.Errorf("open policy: %w", err)
	}
	return decodePolicy(string(src), path)
}

func decodeFile(src, name string) (*File, *keyLines, error) {
	var f File
	loc, err := strictDecode(src, name, &f)
	if err != nil {
		return nil, loc, err
	}
	if err := collect(validateFile(&f, name, loc)); err != nil {
		return nil, loc, err
	}
	return &f, loc, nil
}

func decodePolicy(src, name string) (*Policy, *keyLines, error) {
	var p Policy
	loc, err := strictDecode(src, name, &p)
	if err != nil {
		return nil, loc, err
	}
	if err := collect(validatePolicy(&p, name, loc)); err != nil {
		return nil, loc, err
	}
	return &p, loc, nil
}

// strictDecode parses src, checks every key and value type against the Go
// type of v (so unknown keys and wrong types are reported with the exact
// line and indexed key), then decodes into v.
func strictDecode(src, name string, v any) (*keyLines, error) {
	var generic map[string]any
	if _, err := toml.Decode(src, &generic); err != nil {
		return nil, syntaxError(name, err)
	}
	loc := locate(src)
	var problems []*Error
	checkTable(generic, reflect.TypeOf(v).Elem(), "", name, loc, &problems)
	if err := collect(problems); err != nil {
		return loc, err
	}
	md, err := toml.Decode(src, v)
	if err != nil {
		// checkTable accepts only what the decoder accepts; this is a bug
		// guard, still reported against the file.
		return loc, syntaxError(name, err)
	}
	for _, k := range md.Undecoded() {
		problems = append(problems, &Error{File: name, Line: loc.line(k.String()), Key: k.String(), Msg: "unknown key"})
	}
	return loc, collect(problems)
}

func syntaxError(name string, err error) error {
	var pe toml.ParseError
	if errors.As(err, &pe) {
		msg := pe.Message
		if pe.Usage != "" {
			msg += " (" + strings.TrimSpace(strings.SplitN(pe.Usage, "\n", 2)[0]) + ")"
		}
		return &Error{File: name, Line: pe.Position.Line, Key: pe.LastKey, Msg: "invalid TOML: " + msg}
	}
	return &Error{File: name, Msg: "invalid TOML: " + err.Error()}
}

// tomlKeys lists the TOML keys of a struct type in field order.
func tomlKeys(t reflect.Type) ([]string, map[string]reflect.StructField) {
	var keys []string
	fields := map[string]reflect.StructField{}
	for i := range t.NumField() {
		f := t.Field(i)
		tag, _, _ := strings.Cut(f.Tag.Get("toml"), ",")
		if tag == "" || tag == "-" {
			continue
		}
		keys = append(keys, tag)
		fields[tag] = f
	}
	return keys, fields
}

func tableName(path string) string {
	if path == "" {
		return "at the top level"
	}
	return "in " + path
}

func checkTable(m map[string]any, t reflect.Type, path, name string, loc *keyLines, problems *[]*Error) {
	keys, fields := tomlKeys(t)
	for _, k := range slices.Sorted(maps.Keys(m)) {
		key := join(path, k)
		f, ok := fields[k]
		if !ok {
			*problems = append(*problems, &Error{File: name, Line: loc.line(key), Key: key,
				Msg: fmt.Sprintf("unknown key %q %s; valid keys: %s", k, tableName(path), strings.Join(keys, ", "))})
			continue
		}
		checkValue(m[k], f.Type, key, name, loc, problems)
	}
}

func checkValue(v any, t reflect.Type, key, name string, loc *keyLines, problems *[]*Error) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == upstreamInstructionsType {
		checkUpstreamInstructions(v, key, name, loc, problems)
		return
	}
	bad := func() {
		*problems = append(*problems, &Error{File: name, Line: loc.line(key), Key: key,
			Msg: fmt.Sprintf("wrong type: want %s, got %s", wantType(t), tomlType(v))})
	}
	switch t.Kind() {
	case reflect.String:
		if _, ok := v.(string); !ok {
			bad()
		}
	case reflect.Int:
		if _, ok := v.(int64); !ok {
			bad()
		}
	case reflect.Float64:
		switch v.(type) {
		case float64, int64:
		default:
			bad()
		}
	case reflect.Bool:
		if _, ok := v.(bool); !ok {
			bad()
		}
	case reflect.Struct:
		m, ok := v.(map[string]any)
		if !ok {
			bad()
			return
		}
		checkTable(m, t, key, name, loc, problems)
	case reflect.Slice:
		var elems []any
		switch a := v.(type) {
		case []any:
			elems = a
		case []map[string]any:
			for _, m := range a {
				elems = append(elems, m)
			}
		default:
			bad()
			return
		}
		for i, e := range elems {
			checkValue(e, t.Elem(), key+"["+strconv.Itoa(i)+"]", name, loc, problems)
		}
	default:
		panic("profiles: schema field of unsupported kind " + t.Kind().String())
	}
}

func wantType(t reflect.Type) string {
	switch t.Kind() {
	case reflect.String:
		return "a string"
	case reflect.Int:
		return "an integer"
	case reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.Struct:
		return "a table"
	case reflect.Slice:
		e := t.Elem()
		for e.Kind() == reflect.Pointer {
			e = e.Elem()
		}
		switch e.Kind() {
		case reflect.String:
			return "an array of strings"
		case reflect.Float64:
			return "an array of numbers"
		case reflect.Struct:
			return "an array of tables"
		}
	}
	return t.String()
}

func tomlType(v any) string {
	switch v.(type) {
	case string:
		return "a string"
	case int64:
		return "an integer"
	case float64:
		return "a float"
	case bool:
		return "a boolean"
	case time.Time:
		return "a datetime"
	case []any, []map[string]any:
		return "an array"
	case map[string]any:
		return "a table"
	}
	return fmt.Sprintf("%T", v)
}

// checkVersion reports a missing or unreadable schema version.
func checkVersion(version int, defined bool, name string, loc *keyLines) *Error {
	switch {
	case !defined:
		return &Error{File: name, Key: "version", Msg: fmt.Sprintf("missing; add version = %d at the top (readable versions: %s)", Version, readableVersions())}
	case version < 1 || version > Version:
		return &Error{File: name, Line: loc.line("version"), Key: "version",
			Msg: fmt.Sprintf("version %d is not readable by this build; readable versions: %s", version, readableVersions())}
	}
	return nil
}

func readableVersions() string {
	vs := make([]string, 0, Version)
	for v := 1; v <= Version; v++ {
		vs = append(vs, strconv.Itoa(v))
	}
	return strings.Join(vs, ", ")
}

// checkNames reports empty, malformed and repeated strings of one array.
// what says what the strings are ("tool", "group").
func checkNames(list []string, key, what, name string, loc *keyLines, pattern *regexp.Regexp) []*Error {
	var problems []*Error
	seen := map[string]int{}
	for i, s := range list {
		ekey := key + "[" + strconv.Itoa(i) + "]"
		switch {
		case strings.TrimSpace(s) == "":
			problems = append(problems, &Error{File: name, Line: loc.line(key), Key: ekey, Msg: fmt.Sprintf("empty %s name", what)})
			continue
		case strings.TrimSpace(s) != s:
			problems = append(problems, &Error{File: name, Line: loc.elementLine(key, s, 0), Key: ekey, Msg: fmt.Sprintf("%s name %q has leading or trailing blanks", what, s)})
			continue
		case pattern != nil && !pattern.MatchString(s):
			problems = append(problems, &Error{File: name, Line: loc.elementLine(key, s, 0), Key: ekey, Msg: fmt.Sprintf("%s name %q is not valid; use %s", what, s, validNameHint)})
			continue
		}
		n, dup := seen[s]
		seen[s] = n + 1
		if dup {
			first := loc.elementLine(key, s, 0)
			problems = append(problems, &Error{File: name, Line: loc.elementLine(key, s, n), Key: ekey,
				Msg: fmt.Sprintf("%s %q listed twice (first at line %d); list each %s once", what, s, first, what)})
		}
	}
	return problems
}

// emptySearchable refuses searchable = [] in the profile at key: no
// patterns means no narrowing, so a list written to mean "none" (over a
// generated list, say) would let call_tool run every tool the profile's
// rules allow.
func emptySearchable(list []string, key, name string, loc *keyLines) *Error {
	if list == nil || len(list) > 0 {
		return nil
	}
	return &Error{File: name, Line: loc.line(key + ".searchable"), Key: key + ".searchable",
		Msg: `an empty list would let search return every tool; write ["*"] for every tool, or search = false for none`}
}

func validateFile(f *File, name string, loc *keyLines) []*Error {
	var problems []*Error
	add := func(e *Error) {
		if e != nil {
			problems = append(problems, e)
		}
	}
	add(checkVersion(f.Version, loc == nil || loc.exact("version") > 0, name, loc))
	groups := map[string]bool{}
	for i, g := range f.Groups {
		key := fmt.Sprintf("group[%d]", i)
		switch {
		case !profileName.MatchString(g.Name):
			add(&Error{File: name, Line: loc.line(key + ".name"), Key: key + ".name", Msg: fmt.Sprintf("group name %q is not valid; use %s", g.Name, validNameHint)})
		case groups[g.Name]:
			add(&Error{File: name, Line: loc.line(key + ".name"), Key: key + ".name", Msg: fmt.Sprintf("group %q defined twice; each [[group]] needs its own name", g.Name)})
		}
		groups[g.Name] = true
		problems = append(problems, checkNames(g.Tools, key+".tools", "tool", name, loc, nil)...)
	}
	seen := map[string]int{}
	for i, p := range f.Profiles {
		key := fmt.Sprintf("profile[%d]", i)
		if !profileName.MatchString(p.Name) {
			add(&Error{File: name, Line: loc.line(key + ".name"), Key: key + ".name", Msg: fmt.Sprintf("profile name %q is not valid; use %s", p.Name, validNameHint)})
		} else if j, dup := seen[p.Name]; dup {
			add(&Error{File: name, Line: loc.line(key + ".name"), Key: key + ".name",
				Msg: fmt.Sprintf("duplicate profile %q (first at line %d); each [[profile]] needs its own name", p.Name, loc.line(fmt.Sprintf("profile[%d].name", j)))})
		} else {
			seen[p.Name] = i
		}
		problems = append(problems, checkNames(p.Tools, key+".tools", "tool", name, loc, nil)...)
		problems = append(problems, checkNames(p.Groups, key+".groups", "group", name, loc, nil)...)
		problems = append(problems, checkNames(p.Searchable, key+".searchable", "tool or pattern", name, loc, nil)...)
		add(emptySearchable(p.Searchable, key, name, loc))
		for j, g := range p.Groups {
			if !groups[g] {
				gkey := fmt.Sprintf("%s.groups[%d]", key, j)
				add(&Error{File: name, Line: loc.elementLine(key+".groups", g, 0), Key: gkey,
					Msg: fmt.Sprintf("profile %q offers group %q, which no [[group]] defines; defined groups: %s", p.Name, g, listOrNone(slices.Sorted(maps.Keys(groups))))})
			}
		}
		if p.Name == FullProfile && p.ReadOnly {
			add(&Error{File: name, Line: loc.line(key + ".read_only"), Key: key + ".read_only",
				Msg: `profile "full" always holds every tool and cannot be read_only; make a separate read_only profile`})
		}
		if m := p.Measured; m != nil {
			problems = append(problems, validateMeasured(m, key+".measured", name, loc)...)
		}
	}
	if f.Search != nil {
		problems = append(problems, validateSearch(f.Search, name, loc)...)
	}
	names := fileProfileNames(f)
	if f.Default == "" {
		add(&Error{File: name, Key: "default", Msg: fmt.Sprintf("missing; set default to one of: %s", strings.Join(names, ", "))})
	} else if !slices.Contains(names, f.Default) {
		add(&Error{File: name, Line: loc.line("default"), Key: "default",
			Msg: fmt.Sprintf("profile %q does not exist; valid profiles: %s", f.Default, strings.Join(names, ", "))})
	}
	return problems
}

func validateMeasured(m *Measured, key, name string, loc *keyLines) []*Error {
	var problems []*Error
	share := func(k string, v *float64) {
		if v != nil && !(*v >= 0 && *v <= 1) {
			problems = append(problems, &Error{File: name, Line: loc.line(key + "." + k), Key: key + "." + k,
				Msg: fmt.Sprintf("%v is not a share; want a number from 0 to 1", *v)})
		}
	}
	share("coverage", m.Coverage)
	share("holdout_coverage", m.HoldoutCoverage)
	if ci := m.HoldoutCI; ci != nil && (len(ci) != 2 || !(0 <= ci[0] && ci[0] <= ci[1] && ci[1] <= 1)) {
		problems = append(problems, &Error{File: name, Line: loc.line(key + ".holdout_ci"), Key: key + ".holdout_ci",
			Msg: fmt.Sprintf("%v is not an interval; want two numbers [low, high] with 0 <= low <= high <= 1", ci)})
	}
	// A slice, not a map: problems on one line stay in this order.
	for _, c := range []struct {
		k string
		v int
	}{{"sessions", m.Sessions}, {"holdout_sessions", m.HoldoutSessions}, {"tools", m.Tools}, {"bytes", m.Bytes}, {"tokens_o200k", m.TokensO200k}} {
		if k, v := c.k, c.v; v < 0 {
			problems = append(problems, &Error{File: name, Line: loc.line(key + "." + k), Key: key + "." + k, Msg: fmt.Sprintf("%d is negative; want a count >= 0", v)})
		}
	}
	return problems
}

// fileProfileNames returns the sorted profile names of f, "full" included.
func fileProfileNames(f *File) []string {
	names := []string{FullProfile}
	for _, p := range f.Profiles {
		if !slices.Contains(names, p.Name) {
			names = append(names, p.Name)
		}
	}
	slices.Sort(names)
	return names
}

func validatePolicy(p *Policy, name string, loc *keyLines) []*Error {
	var problems []*Error
	add := func(e *Error) {
		if e != nil {
			problems = append(problems, e)
		}
	}
	add(checkVersion(p.Version, loc == nil || loc.exact("version") > 0, name, loc))
	if p.Default != "" && !profileName.MatchString(p.Default) {
		add(&Error{File: name, Line: loc.line("default"), Key: "default", Msg: fmt.Sprintf("profile name %q is not valid; use %s", p.Default, validNameHint)})
	}
	problems = append(problems, checkNames(p.Destructive, "destructive", "tool or pattern", name, loc, nil)...)
	exactRule := map[string]int{}
	for i, r := range p.Effects {
		key := fmt.Sprintf("effect[%d]", i)
		switch {
		case strings.TrimSpace(r.Tool) == "":
			add(&Error{File: name, Line: loc.line(key), Key: key + ".tool", Msg: "missing tool; set tool to a tool name or a pattern with '*'"})
		case r.Kind != "" && !Kind(r.Kind).Valid():
			add(&Error{File: name, Line: loc.line(key + ".kind"), Key: key + ".kind",
				Msg: fmt.Sprintf("unknown effect kind %q; valid kinds: %s", r.Kind, kindList())})
		case r.Kind == "" && r.External == nil:
			add(&Error{File: name, Line: loc.line(key), Key: key,
				Msg: fmt.Sprintf("rule for %q sets neither kind (%s) nor external (true or false)", r.Tool, kindList())})
		}
		if j, dup := exactRule[r.Tool]; dup && r.Tool != "" {
			add(&Error{File: name, Line: loc.line(key + ".tool"), Key: key + ".tool",
				Msg: fmt.Sprintf("a rule for %q already exists at line %d; put kind and external in one [[effect]]", r.Tool, loc.line(fmt.Sprintf("effect[%d].tool", j)))})
		}
		exactRule[r.Tool] = i
		if !isPattern(r.Tool) && r.Kind != "" && Kind(r.Kind) != KindDestructive && slices.Contains(p.Destructive, r.Tool) {
			add(&Error{File: name, Line: loc.line(key + ".kind"), Key: key + ".kind",
				Msg: fmt.Sprintf("tool %q is listed in destructive but this rule makes it %q; remove one of the two", r.Tool, r.Kind)})
		}
	}
	seen := map[string]int{}
	for i, pp := range p.Profiles {
		key := fmt.Sprintf("profile[%d]", i)
		if !profileName.MatchString(pp.Name) {
			add(&Error{File: name, Line: loc.line(key + ".name"), Key: key + ".name", Msg: fmt.Sprintf("profile name %q is not valid; use %s", pp.Name, validNameHint)})
		} else if j, dup := seen[pp.Name]; dup {
			add(&Error{File: name, Line: loc.line(key + ".name"), Key: key + ".name",
				Msg: fmt.Sprintf("duplicate profile %q (first at line %d); put everything about one profile in one [[profile]]", pp.Name, loc.line(fmt.Sprintf("profile[%d].name", j)))})
		} else {
			seen[pp.Name] = i
		}
		problems = append(problems, checkNames(pp.Pin, key+".pin", "tool", name, loc, nil)...)
		problems = append(problems, checkNames(pp.Deny, key+".deny", "tool", name, loc, nil)...)
		problems = append(problems, checkNames(pp.Searchable, key+".searchable", "tool or pattern", name, loc, nil)...)
		add(emptySearchable(pp.Searchable, key, name, loc))
		for _, k := range []struct {
			key  string
			list []string
		}{{"pin", pp.Pin}, {"deny", pp.Deny}} {
			for j, t := range k.list {
				if isPattern(t) {
					add(&Error{File: name, Line: loc.elementLine(key+"."+k.key, t, 0), Key: fmt.Sprintf("%s.%s[%d]", key, k.key, j),
						Msg: fmt.Sprintf("%q: %s takes exact tool names; patterns ('*') are accepted only in destructive and [[effect]]", t, k.key)})
				}
			}
		}
		if pp.Icons != "" || loc.exact(key+".icons") > 0 {
			if pp.Icons != IconsKeep && pp.Icons != IconsDrop {
				add(&Error{File: name, Line: loc.line(key + ".icons"), Key: key + ".icons",
					Msg: fmt.Sprintf("%q is not a valid value; want %q (serve the tools' icons as the upstream lists them) or %q (serve the tools without their icons member)", pp.Icons, IconsKeep, IconsDrop)})
			}
		}
		for j, t := range pp.Deny {
			if slices.Contains(pp.Pin, t) {
				add(&Error{File: name, Line: loc.elementLine(key+".deny", t, 0), Key: fmt.Sprintf("%s.deny[%d]", key, j),
					Msg: fmt.Sprintf("tool %q is both pinned and denied in profile %q; keep it in pin or in deny", t, pp.Name)})
			}
		}
		if pp.Name == FullProfile {
			// Each key but those valid for full would be ignored there,
			// silently: allow_destructive = false would not keep a
			// destructive tool out of full.
			set := map[string]bool{"pin": len(pp.Pin) > 0, "deny": len(pp.Deny) > 0, "allow_destructive": pp.AllowDestructive,
				"search": pp.Search != nil, "searchable": pp.Searchable != nil, "always_load": pp.AlwaysLoad != ""}
			for _, k := range []string{"pin", "deny", "allow_destructive", "search", "searchable", "always_load"} {
				if l := loc.exact(key + "." + k); l > 0 || set[k] {
					add(&Error{File: name, Line: l, Key: key + "." + k,
						Msg: fmt.Sprintf(`profile "full" always holds every offered tool; %s is not allowed there (valid for full: instructions, upstream_instructions, icons)`, k)})
				}
			}
			if pp.ReadOnly != nil && *pp.ReadOnly {
				add(&Error{File: name, Line: loc.line(key + ".read_only"), Key: key + ".read_only",
					Msg: `profile "full" always holds every tool and cannot be read_only; make a separate read_only profile`})
			}
		}
	}
	return problems
}

func listOrNone(names []string) string {
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}
