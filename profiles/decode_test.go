package profiles

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// decodeCase is a file body and the first problem it must produce.
type decodeCase struct {
	name     string
	src      string
	wantLine int
	wantKey  string
	wantMsg  string // substring
}

func runDecodeCases(t *testing.T, tests []decodeCase, decode func(src, name string) error) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := decode(tt.src, "dir/f.toml")
			if tt.wantMsg == "" {
				if err != nil {
					t.Fatalf("unexpected error: %v", err)
				}
				return
			}
			var e *Error
			if !errors.As(err, &e) {
				t.Fatalf("err = %v (%T), want *Error", err, err)
			}
			if e.File != "dir/f.toml" || e.Line != tt.wantLine || e.Key != tt.wantKey || !strings.Contains(e.Msg, tt.wantMsg) {
				t.Errorf("got  %s\n(file %q line %d key %q)\nwant line %d key %q msg containing %q", e, e.File, e.Line, e.Key, tt.wantLine, tt.wantKey, tt.wantMsg)
			}
			if !strings.HasPrefix(err.Error(), "dir/f.toml") {
				t.Errorf("message %q does not start with the file name", err)
			}
		})
	}
}

func TestDecodeFileErrors(t *testing.T) {
	tests := []decodeCase{
		{name: "valid", src: `version = 1
default = "core"
[[profile]]
name = "core"
tools = ["a", "b"]
groups = ["g"]
[profile.measured]
sessions = 3
coverage = 1
holdout_ci = [0.1, 0.9]
[[group]]
name = "g"
description = "d"
tools = ["c"]
`},
		{name: "syntax", src: "version = 1\ndefault = \"core\n", wantLine: 2, wantKey: "default", wantMsg: "invalid TOML"},
		{name: "unknown top-level key", src: "version = 1\ndefault = \"full\"\ncolour = \"red\"\n", wantLine: 3, wantKey: "colour", wantMsg: `unknown key "colour" at the top level; valid keys: version, default, provenance, profile, group`},
		{name: "unknown key in second profile", src: `version = 1
default = "a"
[[profile]]
name = "a"
tools = []
[[profile]]
name = "b"
tools = []
tool = ["x"]
`, wantLine: 9, wantKey: "profile[1].tool", wantMsg: "valid keys: name, tools, instructions, groups, read_only, search, searchable, measured"},
		{name: "unknown key in measured", src: `version = 1
default = "a"
[[profile]]
name = "a"
tools = []
[profile.measured]
sessions = 1
sesions = 2
`, wantLine: 8, wantKey: "profile[0].measured.sesions", wantMsg: "valid keys: sessions, coverage"},
		{name: "unknown key in provenance", src: "version = 1\ndefault = \"full\"\n[provenance]\ngenerator = \"x\"\nwhen = 3\n", wantLine: 5, wantKey: "provenance.when", wantMsg: "unknown key"},
		{name: "wrong type tools", src: `version = 1
default = "a"
[[profile]]
name = "a"
tools = ["x"]
[[profile]]
name = "b"
tools = "x"
`, wantLine: 8, wantKey: "profile[1].tools", wantMsg: "wrong type: want an array of strings, got a string"},
		{name: "wrong type element", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = [\"x\", 3]\n", wantLine: 5, wantKey: "profile[0].tools[1]", wantMsg: "want a string, got an integer"},
		{name: "wrong type version", src: "version = \"1\"\ndefault = \"full\"\n", wantLine: 1, wantKey: "version", wantMsg: "want an integer, got a string"},
		{name: "wrong type read_only", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\nread_only = \"yes\"\n", wantLine: 6, wantKey: "profile[0].read_only", wantMsg: "want true or false"},
		{name: "profile as table", src: "version = 1\ndefault = \"full\"\n[profile]\nname = \"a\"\n", wantLine: 3, wantKey: "profile", wantMsg: "want an array of tables, got a table"},
		{name: "wrong type float", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\n[profile.measured]\ncoverage = \"high\"\n", wantLine: 7, wantKey: "profile[0].measured.coverage", wantMsg: "want a number, got a string"},
		{name: "wrong type table", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\nmeasured = 3\n", wantLine: 6, wantKey: "profile[0].measured", wantMsg: "want a table, got an integer"},
		{name: "wrong type datetime", src: "version = 1\ndefault = \"full\"\n[provenance]\ndata_from = 2025-08-01T00:00:00Z\n", wantLine: 4, wantKey: "provenance.data_from", wantMsg: "want a string, got a datetime"},
		{name: "bad group name", src: "version = 1\ndefault = \"full\"\n[[group]]\nname = \"\"\ndescription = \"\"\ntools = []\n", wantLine: 4, wantKey: "group[0].name", wantMsg: "group name \"\" is not valid"},
		{name: "group tool twice", src: "version = 1\ndefault = \"full\"\n[[group]]\nname = \"g\"\ndescription = \"\"\ntools = [\"a\",\n\"a\"]\n", wantLine: 7, wantKey: "group[0].tools[1]", wantMsg: `tool "a" listed twice (first at line 6)`},
		{name: "missing version", src: "default = \"full\"\n", wantLine: 0, wantKey: "version", wantMsg: "missing; add version = 1"},
		{name: "future version", src: "version = 2\ndefault = \"full\"\n", wantLine: 1, wantKey: "version", wantMsg: "version 2 is not readable by this build; readable versions: 1"},
		{name: "zero version", src: "\nversion = 0\ndefault = \"full\"\n", wantLine: 2, wantKey: "version", wantMsg: "version 0 is not readable"},
		{name: "duplicate profile", src: `version = 1
default = "a"
[[profile]]
name = "a"
tools = []

[[profile]]
name = "a"
tools = []
`, wantLine: 8, wantKey: "profile[1].name", wantMsg: `duplicate profile "a" (first at line 4)`},
		{name: "tool twice same line", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = [\"x\", \"y\", \"x\"]\n", wantLine: 5, wantKey: "profile[0].tools[2]", wantMsg: `tool "x" listed twice (first at line 5)`},
		{name: "tool twice multiline", src: `version = 1
default = "a"
[[profile]]
name = "a"
tools = [
  "x",
  "y",
  "x", # again
]
`, wantLine: 8, wantKey: "profile[0].tools[2]", wantMsg: `tool "x" listed twice (first at line 6)`},
		{name: "empty tool", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = [\"\"]\n", wantLine: 5, wantKey: "profile[0].tools[0]", wantMsg: "empty tool name"},
		{name: "bad profile name", src: "version = 1\ndefault = \"full\"\n[[profile]]\nname = \"a b\"\ntools = []\n", wantLine: 4, wantKey: "profile[0].name", wantMsg: "is not valid; use letters"},
		{name: "missing default", src: "version = 1\n[[profile]]\nname = \"a\"\ntools = []\n", wantKey: "default", wantMsg: "missing; set default to one of: a, full"},
		{name: "default names nothing", src: "version = 1\ndefault = \"cor\"\n[[profile]]\nname = \"core\"\ntools = []\n", wantLine: 2, wantKey: "default", wantMsg: `profile "cor" does not exist; valid profiles: core, full`},
		{name: "undefined group", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\ngroups = [\"g\"]\n", wantLine: 6, wantKey: "profile[0].groups[0]", wantMsg: `group "g", which no [[group]] defines; defined groups: none`},
		{name: "duplicate group", src: "version = 1\ndefault = \"full\"\n[[group]]\nname = \"g\"\ndescription = \"\"\ntools = []\n[[group]]\nname = \"g\"\ndescription = \"\"\ntools = []\n", wantLine: 8, wantKey: "group[1].name", wantMsg: `group "g" defined twice`},
		{name: "full read_only", src: "version = 1\ndefault = \"full\"\n[[profile]]\nname = \"full\"\ntools = []\nread_only = true\n", wantLine: 6, wantKey: "profile[0].read_only", wantMsg: "cannot be read_only"},
		{name: "coverage out of range", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\n[profile.measured]\ncoverage = 1.5\n", wantLine: 7, wantKey: "profile[0].measured.coverage", wantMsg: "want a number from 0 to 1"},
		{name: "ci not an interval", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\n[profile.measured]\nholdout_ci = [0.9, 0.1]\n", wantLine: 7, wantKey: "profile[0].measured.holdout_ci", wantMsg: "want two numbers [low, high]"},
		{name: "negative count", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\n[profile.measured]\ntokens_o200k = -1\n", wantLine: 7, wantKey: "profile[0].measured.tokens_o200k", wantMsg: "negative"},
		{name: "multiline instructions do not confuse lines", src: `version = 1
default = "a"
[[profile]]
name = "a"
tools = []
instructions = """
[[profile]]
name = "a"
"""
[[profile]]
name = "a"
tools = []
`, wantLine: 11, wantKey: "profile[1].name", wantMsg: "duplicate profile"},
	}
	runDecodeCases(t, tests, func(src, name string) error {
		_, err := DecodeFile(strings.NewReader(src), name)
		return err
	})
}

func TestDecodePolicyErrors(t *testing.T) {
	tests := []decodeCase{
		{name: "valid", src: `version = 1
default = "core"
destructive = ["drop_*", "wipe"]
[[effect]]
tool = "run_query"
kind = "evaluate"
[[effect]]
tool = "fetch_*"
external = true
[[profile]]
name = "core"
pin = ["a"]
deny = ["b"]
instructions = "hi"
allow_destructive = true
read_only = false
`},
		{name: "missing version", src: "default = \"core\"\n", wantKey: "version", wantMsg: "missing; add version = 1"},
		{name: "future version", src: "version = 3\n", wantLine: 1, wantKey: "version", wantMsg: "version 3 is not readable by this build; readable versions: 1"},
		{name: "unknown key", src: "version = 1\n[[profile]]\nname = \"a\"\npinned = [\"x\"]\n", wantLine: 4, wantKey: "profile[0].pinned", wantMsg: "valid keys: name, pin, deny, instructions, allow_destructive, read_only"},
		{name: "wrong type allow_destructive", src: "version = 1\n[[profile]]\nname = \"a\"\nallow_destructive = 1\n", wantLine: 4, wantKey: "profile[0].allow_destructive", wantMsg: "want true or false, got an integer"},
		{name: "wrong type destructive", src: "version = 1\ndestructive = \"x\"\n", wantLine: 2, wantKey: "destructive", wantMsg: "want an array of strings"},
		{name: "bad effect kind", src: "version = 1\n[[effect]]\ntool = \"a\"\nkind = \"write\"\n", wantLine: 4, wantKey: "effect[0].kind", wantMsg: `unknown effect kind "write"; valid kinds: read, evaluate, mutate, destructive`},
		{name: "effect says nothing", src: "version = 1\n[[effect]]\ntool = \"a\"\n", wantLine: 2, wantKey: "effect[0]", wantMsg: "sets neither kind"},
		{name: "effect without tool", src: "version = 1\n[[effect]]\nkind = \"read\"\n", wantLine: 2, wantKey: "effect[0].tool", wantMsg: "missing tool"},
		{name: "effect rule twice", src: "version = 1\n[[effect]]\ntool = \"a\"\nkind = \"read\"\n[[effect]]\ntool = \"a\"\nexternal = true\n", wantLine: 6, wantKey: "effect[1].tool", wantMsg: `a rule for "a" already exists at line 3`},
		{name: "effect contradicts destructive", src: "version = 1\ndestructive = [\"a\"]\n[[effect]]\ntool = \"a\"\nkind = \"read\"\n", wantLine: 5, wantKey: "effect[0].kind", wantMsg: "listed in destructive"},
		{name: "duplicate policy profile", src: "version = 1\n[[profile]]\nname = \"a\"\n[[profile]]\nname = \"a\"\n", wantLine: 5, wantKey: "profile[1].name", wantMsg: `duplicate profile "a" (first at line 3)`},
		{name: "pin twice", src: "version = 1\n[[profile]]\nname = \"a\"\npin = [\"x\", \"x\"]\n", wantLine: 4, wantKey: "profile[0].pin[1]", wantMsg: `tool "x" listed twice`},
		{name: "pinned and denied", src: "version = 1\n[[profile]]\nname = \"a\"\npin = [\"x\"]\ndeny = [\"x\"]\n", wantLine: 5, wantKey: "profile[0].deny[0]", wantMsg: "both pinned and denied"},
		{name: "destructive twice", src: "version = 1\ndestructive = [\"x\",\n \"x\"]\n", wantLine: 3, wantKey: "destructive[1]", wantMsg: "listed twice"},
		{name: "pin on full", src: "version = 1\n[[profile]]\nname = \"full\"\npin = [\"x\"]\n", wantLine: 4, wantKey: "profile[0].pin", wantMsg: "pin is not allowed there"},
		{name: "deny on full", src: "version = 1\n[[profile]]\nname = \"full\"\ndeny = [\"x\"]\n", wantLine: 4, wantKey: "profile[0].deny", wantMsg: "deny is not allowed there"},
		{name: "read_only on full", src: "version = 1\n[[profile]]\nname = \"full\"\nread_only = true\n", wantLine: 4, wantKey: "profile[0].read_only", wantMsg: "cannot be read_only"},
		// Keys full ignores: each would silently do nothing (full serves
		// every tool, destructive ones included, and no search).
		{name: "allow_destructive on full", src: "version = 1\n[[profile]]\nname = \"full\"\nallow_destructive = false\n", wantLine: 4, wantKey: "profile[0].allow_destructive", wantMsg: "allow_destructive is not allowed there"},
		{name: "search on full", src: "version = 1\n[[profile]]\nname = \"full\"\nsearch = true\n", wantLine: 4, wantKey: "profile[0].search", wantMsg: "search is not allowed there"},
		{name: "searchable on full", src: "version = 1\n[[profile]]\nname = \"full\"\nsearchable = [\"x\"]\n", wantLine: 4, wantKey: "profile[0].searchable", wantMsg: "searchable is not allowed there"},
		{name: "always_load on full", src: "version = 1\n[[profile]]\nname = \"full\"\nalways_load = \"core\"\n", wantLine: 4, wantKey: "profile[0].always_load", wantMsg: "always_load is not allowed there"},
		{name: "instructions on full are fine", src: "version = 1\n[[profile]]\nname = \"full\"\ninstructions = \"everything\"\n"},
		{name: "pattern in pin", src: "version = 1\n[[profile]]\nname = \"a\"\npin = [\"read_*\"]\n", wantLine: 4, wantKey: "profile[0].pin[0]", wantMsg: "pin takes exact tool names; patterns ('*') are accepted only in destructive and [[effect]]"},
		{name: "pattern in deny", src: "version = 1\n[[profile]]\nname = \"a\"\ndeny = [\n  \"x\",\n  \"delete_*\",\n]\n", wantLine: 6, wantKey: "profile[0].deny[1]", wantMsg: "deny takes exact tool names"},
		{name: "upstream instructions", src: "version = 1\nupstream_instructions = \"drop\"\n[[profile]]\nname = \"full\"\n[profile.upstream_instructions]\ngithub = \"drop\"\n\"every-thing.2\" = \"Call test_* tools.\"\n"},
		{name: "icons", src: "version = 1\n[[profile]]\nname = \"full\"\nicons = \"drop\"\n[[profile]]\nname = \"core\"\nicons = \"keep\"\n"},
		{name: "icons not keep or drop", src: "version = 1\n[[profile]]\nname = \"core\"\nicons = \"strip\"\n", wantLine: 4, wantKey: "profile[0].icons", wantMsg: `"strip" is not a valid value; want "keep" (serve the tools' icons as the upstream lists them) or "drop"`},
		{name: "icons empty", src: "version = 1\n[[profile]]\nname = \"core\"\nicons = \"\"\n", wantLine: 4, wantKey: "profile[0].icons", wantMsg: `"" is not a valid value`},
		{name: "icons wrong type", src: "version = 1\n[[profile]]\nname = \"core\"\nicons = false\n", wantLine: 4, wantKey: "profile[0].icons", wantMsg: "want a string, got a boolean"},
		{name: "upstream instructions not drop", src: "version = 1\nupstream_instructions = \"keep\"\n", wantLine: 2, wantKey: "upstream_instructions", wantMsg: `"keep" is not a valid value; want "drop"`},
		{name: "upstream instructions wrong type", src: "version = 1\n[[profile]]\nname = \"a\"\nupstream_instructions = 1\n", wantLine: 4, wantKey: "profile[0].upstream_instructions", wantMsg: "wrong type: got an integer"},
		{name: "upstream instructions server not text", src: "version = 1\n[upstream_instructions]\ngithub = true\n", wantLine: 3, wantKey: "upstream_instructions.github", wantMsg: "want a string"},
		{name: "upstream instructions empty text", src: "version = 1\n[upstream_instructions]\ngithub = \"\"\n", wantLine: 3, wantKey: "upstream_instructions.github", wantMsg: `to drop github's instructions write "drop"`},
		{name: "upstream instructions bad server name", src: "version = 1\n[upstream_instructions]\n\"a b\" = \"drop\"\n", wantLine: 3, wantKey: "upstream_instructions.a b", wantMsg: "not a server name"},
		{name: "bad default name", src: "version = 1\ndefault = \"a/b\"\n", wantLine: 2, wantKey: "default", wantMsg: "is not valid"},
	}
	runDecodeCases(t, tests, func(src, name string) error {
		_, err := DecodePolicy(strings.NewReader(src), name)
		return err
	})
}

func TestDecodeReportsEveryProblem(t *testing.T) {
	src := "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = [\"x\", \"x\"]\nfoo = 1\n[[profile]]\nname = \"a\"\ntools = []\n"
	_, err := DecodeFile(strings.NewReader(src), "f.toml")
	// foo is a schema problem, so decoding stops there; the duplicates are
	// found once the schema is right.
	var e *Error
	if !errors.As(err, &e) || e.Key != "profile[0].foo" || strings.Contains(err.Error(), "twice") {
		t.Fatalf("err = %v, want only the unknown key", err)
	}
	var es Errors
	src = strings.Replace(src, "foo = 1\n", "", 1)
	_, err = DecodeFile(strings.NewReader(src), "f.toml")
	if !errors.As(err, &es) || len(es) != 2 {
		t.Fatalf("err = %v, want two problems", err)
	}
	if es[0].Line != 5 || es[1].Line != 7 {
		t.Errorf("problems not in line order: %v", es)
	}
}

func TestLoadMissingFile(t *testing.T) {
	dir := t.TempDir()
	for _, load := range []func(string) error{
		func(p string) error { _, err := LoadFile(p); return err },
		func(p string) error { _, err := LoadPolicy(p); return err },
		func(p string) error { _, err := Load(p); return err },
	} {
		err := load(filepath.Join(dir, "profiles.generated.toml"))
		if !errors.Is(err, fs.ErrNotExist) {
			t.Errorf("err = %v, want fs.ErrNotExist", err)
		}
	}
}

func TestLoadFileNamesPath(t *testing.T) {
	path := filepath.Join(t.TempDir(), "profiles.generated.toml")
	if err := os.WriteFile(path, []byte("version = 1\ndefault = \"full\"\nx = 1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, err := LoadFile(path)
	var e *Error
	if !errors.As(err, &e) || e.File != path || e.Line != 3 || e.Key != "x" {
		t.Fatalf("err = %v, want %s:3: x", err, path)
	}
}

func TestErrorString(t *testing.T) {
	tests := []struct {
		err  error
		want string
	}{
		{&Error{File: "p.toml", Line: 3, Key: "colour", Msg: "unknown key"}, "p.toml:3: colour: unknown key"},
		{&Error{File: "p.toml", Key: "version", Msg: "missing"}, "p.toml: version: missing"},
		{&Error{File: "p.toml", Line: 2, Msg: "invalid TOML"}, "p.toml:2: invalid TOML"},
		{Errors{{File: "a", Line: 1, Key: "k", Msg: "m"}, {File: "a", Line: 2, Key: "j", Msg: "n"}}, "a:1: k: m\na:2: j: n"},
	}
	for _, tt := range tests {
		if got := tt.err.Error(); got != tt.want {
			t.Errorf("Error() = %q, want %q", got, tt.want)
		}
	}
}

// TestMeasuredErrorsDeterministic: problems on one line keep the order they
// are found in, so negative counts must be checked in a fixed order, not in
// map iteration order (which made the error text differ between runs).
func TestMeasuredErrorsDeterministic(t *testing.T) {
	src := "version = 1\ndefault = \"core\"\n[[profile]]\nname = \"core\"\ntools = [\"a\"]\n" +
		"measured = {sessions = -1, holdout_sessions = -2, tools = -3, bytes = -4, tokens_o200k = -5}\n"
	want := strings.Join([]string{
		"g.toml:6: profile[0].measured.sessions: -1 is negative; want a count >= 0",
		"g.toml:6: profile[0].measured.holdout_sessions: -2 is negative; want a count >= 0",
		"g.toml:6: profile[0].measured.tools: -3 is negative; want a count >= 0",
		"g.toml:6: profile[0].measured.bytes: -4 is negative; want a count >= 0",
		"g.toml:6: profile[0].measured.tokens_o200k: -5 is negative; want a count >= 0",
	}, "\n")
	for i := range 50 {
		_, err := DecodeFile(strings.NewReader(src), "g.toml")
		if err == nil || err.Error() != want {
			t.Fatalf("decode %d: got\n%v\nwant\n%s", i, err, want)
		}
	}
}
