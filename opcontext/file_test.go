package opcontext

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseValid(t *testing.T) {
	f, err := Parse("oc.toml", []byte(fmt.Sprintf(sidecar, "reject")))
	if err != nil {
		t.Fatal(err)
	}
	if f.ContextRevision != "2026-07-16.1" || f.Registry.Enforce != EnforceReject ||
		f.Registry.Argument != DefaultArgument || !f.hasRegistry ||
		f.Defaults["claude-code"] != "acme-app" || len(f.Doctrine) != 2 ||
		f.Doctrine[1].Body != "'claude-code' for Claude Code.\n" {
		t.Fatalf("parsed %+v", f)
	}
}

func TestParseDefaults(t *testing.T) {
	tests := []struct {
		name, file   string
		enforce      Enforce
		argument     string
		withRegistry bool
	}{
		{"minimal file", "version = 1\n", EnforceWarn, DefaultArgument, false},
		{"registry without enforce", "version = 1\n[registry]\nproject_ids = []\n", EnforceWarn, DefaultArgument, true},
		{"configured argument", "version = 1\n[registry]\nargument = \"workspace\"\nenforce = \"off\"\n", EnforceOff, "workspace", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := Parse("oc.toml", []byte(tt.file))
			if err != nil {
				t.Fatal(err)
			}
			if f.Registry.Enforce != tt.enforce || f.Registry.Argument != tt.argument || f.hasRegistry != tt.withRegistry {
				t.Fatalf("enforce %q argument %q registry %v", f.Registry.Enforce, f.Registry.Argument, f.hasRegistry)
			}
		})
	}
}

// Every invalid file is refused with the file, the line, the key and what
// would be valid.
func TestParseErrors(t *testing.T) {
	tests := []struct {
		name string
		file string
		want []string
	}{
		{"syntax", "version = 1\nenforce = warn\n", []string{"oc.toml:2", "enforce"}},
		{"unknown top-level key", "version = 1\nrevision = \"x\"\n",
			[]string{"oc.toml:2", `unknown key "revision"`, "at the top level", "context_revision"}},
		{"unknown registry key", "version = 1\n[registry]\nproject_ids = []\nenfroce = \"warn\"\n",
			[]string{"oc.toml:4", `"registry.enfroce"`, "in [registry]", "project_ids, enforce, argument"}},
		{"unknown doctrine key", "version = 1\n[[doctrine]]\nname = \"a\"\n[[doctrine]]\nname = \"b\"\ntext = \"x\"\n",
			[]string{"oc.toml:6", `"doctrine.text"`, "name, body"}},
		{"unknown table", "version = 1\n[extras]\na = 1\n", []string{"oc.toml:2", `"extras"`}},
		{"bad enforce", "version = 1\n[registry]\nenforce = \"strict\"\n",
			[]string{"oc.toml:3", "registry.enforce", `"strict"`, `"off", "warn", "reject"`}},
		{"wrong type for project_ids", "version = 1\n[registry]\nproject_ids = \"acme\"\n",
			[]string{"oc.toml:3", "key registry.project_ids", "wrong type (string)", "valid: an array of strings"}},
		{"wrong element type for project_ids", "version = 1\n[registry]\nproject_ids = [1]\n",
			[]string{"oc.toml:3", "key registry.project_ids", "valid: an array of strings"}},
		{"wrong type for a default", "version = 1\n[defaults]\nclaude-code = 5\n",
			[]string{"oc.toml:3", "key defaults.claude-code", "wrong type (int64)", "valid: a string"}},
		{"wrong type for version", "version = \"1\"\n", []string{"oc.toml:1", "key version", "valid: the integer 1"}},
		{"wrong type for summary", "version = 1\n[instructions]\nsummary = [\"a\"]\n", []string{"oc.toml:3", "key instructions.summary", "valid: a string"}},
		{"doctrine not an array of tables", "version = 1\ndoctrine = \"x\"\n", []string{"oc.toml:2", "key doctrine", "[[doctrine]]"}},
		{"defaults not a table", "version = 1\ndefaults = 3\n", []string{"oc.toml:2", "key defaults", "valid: a table ([defaults])"}},
		{"instructions not a table", "version = 1\ninstructions = 3\n", []string{"oc.toml:2", "key instructions", "valid: a table ([instructions])"}},
		{"registry not a table", "version = 1\nregistry = [1]\n", []string{"oc.toml:2", "key registry", "valid: a table ([registry])"}},
		{"missing version", "context_revision = \"r\"\n", []string{"oc.toml", "version is missing", "valid value: 1"}},
		{"unsupported version", "\nversion = 2\n", []string{"oc.toml:2", "version", "2 is not supported", "valid value: 1"}},
		{"empty argument", "version = 1\n[registry]\nargument = \"\"\n", []string{"oc.toml:3", "registry.argument", "project_id"}},
		{"sentinel in registry", "version = 1\n[registry]\nproject_ids = [\"@auto\"]\n", []string{"oc.toml:3", "registry.project_ids", "@auto"}},
		{"duplicate id", "version = 1\n[registry]\nproject_ids = [\"a\", \"a\"]\n", []string{"oc.toml:3", `"a" is listed twice`}},
		{"default resolving to sentinel", "version = 1\n[defaults]\nx = \"@auto\"\n", []string{"oc.toml:3", "defaults.x"}},
		{"doctrine without name", "version = 1\n[[doctrine]]\nname = \"a\"\n[[doctrine]]\nbody = \"b\"\n",
			[]string{"oc.toml:4", "number 2 has no name"}},
		{"duplicate doctrine", "version = 1\n[[doctrine]]\nname = \"a\"\nbody = \"\"\"\nname = \"a\"\n\"\"\"\n[[doctrine]]\nname = \"a\"\n",
			[]string{"oc.toml:8", `"a" is used by an earlier`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Parse("oc.toml", []byte(tt.file))
			if err == nil {
				t.Fatal("parsed an invalid file")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
