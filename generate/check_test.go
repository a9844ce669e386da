package generate

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/profiles"
)

func TestConfigCheck(t *testing.T) {
	valid := func() Config {
		return Config{Traces: []string{"t.jsonl"}, Catalog: "c.json", Out: "p.toml", Holdout: derive.DefaultHoldout,
			DefaultTarget: derive.DefaultTarget, MaxUnknownShare: DefaultMaxUnknownShare, MinSessions: derive.DefaultMinSessions}
	}
	for _, c := range []struct {
		name   string
		change func(*Config)
		want   string // "" for valid
	}{
		{name: "valid", change: func(*Config) {}},
		{name: "telemetry instead of traces", change: func(c *Config) { c.Traces, c.Telemetry = nil, []string{"dir"} }},
		{name: "boundary shares", change: func(c *Config) { c.Holdout, c.DefaultTarget, c.MaxUnknownShare = 0, 1, 1 }},
		{name: "no sessions", change: func(c *Config) { c.Traces = nil }, want: "derive: give sessions with --telemetry DIR or --trace FILE.jsonl"},
		{name: "both inputs", change: func(c *Config) { c.Telemetry = []string{"dir"} }, want: "derive: --telemetry and --trace are exclusive"},
		{name: "no catalog", change: func(c *Config) { c.Catalog = "" }, want: "derive: --catalog FILE is required"},
		{name: "no out", change: func(c *Config) { c.Out = "" }, want: "derive: --out must name a file"},
		{name: "holdout 1", change: func(c *Config) { c.Holdout = 1 }, want: "derive: --holdout 1: want a share from 0 up to (not including) 1"},
		{name: "holdout negative", change: func(c *Config) { c.Holdout = -0.1 }, want: "derive: --holdout -0.1:"},
		{name: "default target above 1", change: func(c *Config) { c.DefaultTarget = 1.5 }, want: "derive: --default-target 1.5: want a share from 0 to 1"},
		{name: "unknown share above 1", change: func(c *Config) { c.MaxUnknownShare = 2 }, want: "derive: --max-unknown-share 2:"},
		{name: "negative min sessions", change: func(c *Config) { c.MinSessions = -1 }, want: "derive: --min-sessions -1: want a count >= 0"},
		{name: "negative max tools", change: func(c *Config) { c.MaxTools = -1 }, want: "derive: --max-tools -1:"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := valid()
			c.change(&cfg)
			err := cfg.Check()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want an error starting %q", err, c.want)
			}
		})
	}
}

func TestParseSpecs(t *testing.T) {
	for _, c := range []struct {
		name    string
		flags   SpecFlags
		want    []derive.Spec
		wantErr string
	}{
		{name: "default", want: derive.DefaultSpecs()},
		{name: "target", flags: SpecFlags{Target: 0.7, TargetSet: true}, want: []derive.Spec{{Name: "core", Target: 0.7}}},
		{name: "target zero given", flags: SpecFlags{TargetSet: true}, want: []derive.Spec{{Name: "core"}}},
		{name: "profiles in order", flags: SpecFlags{Profiles: []string{"small=0.5", "big=0.9"}}, want: []derive.Spec{{Name: "small", Target: 0.5}, {Name: "big", Target: 0.9}}},
		{name: "budget on the smallest", flags: SpecFlags{Budget: 40}, want: []derive.Spec{{Name: "core", Target: 0.8, Budget: 40}, {Name: "standard", Target: 0.95}}},
		{name: "negative budget", flags: SpecFlags{Budget: -5}, wantErr: "derive: --budget-tokens -5: want a positive token count"},
		{name: "target and profile", flags: SpecFlags{Target: 0.5, TargetSet: true, Profiles: []string{"a=0.5"}}, wantErr: "derive: --target and --profile are exclusive"},
		{name: "target above 1", flags: SpecFlags{Target: 1.2, TargetSet: true}, wantErr: "derive: --target 1.2: want a share from 0 to 1"},
		{name: "profile without share", flags: SpecFlags{Profiles: []string{"core"}}, wantErr: `derive: --profile "core": want NAME=SHARE`},
		{name: "profile share above 1", flags: SpecFlags{Profiles: []string{"core=2"}}, wantErr: `derive: --profile "core=2": want NAME=SHARE`},
		{name: "profile without name", flags: SpecFlags{Profiles: []string{"=0.5"}}, wantErr: `derive: --profile "=0.5": want NAME=SHARE`},
		{name: "full", flags: SpecFlags{Profiles: []string{"full=0.9"}}, wantErr: "derive: --profile full: full is always derived"},
		{name: "invalid name", flags: SpecFlags{Profiles: []string{"bad name=0.9"}}, wantErr: `derive: --profile "bad name": `},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, err := ParseSpecs(c.flags)
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("ParseSpecs = %v, %v; want an error starting %q", got, err, c.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, c.want) {
				t.Fatalf("ParseSpecs = %+v, %v; want %+v", got, err, c.want)
			}
		})
	}
}

// TestCheckOutKeepsWhatAPersonWrote: --out never names a file derive
// would replace something a person wrote with: the hand-written
// profiles.toml (by name, as --policy, or through a link), or any other
// file that is no profiles file derive wrote. A generated file, one
// broken by a merge conflict under its header, or a new file may be
// written.
func TestCheckOutKeepsWhatAPersonWrote(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	policy := write("profiles.toml", "version = 1\n\n[[profile]]\nname = \"core\"\ndeny = [\"delete_repo\"]\n")
	custom := write("decisions.toml", "version = 1\ndefault = \"core\"\n")
	notes := write("notes.md", "# what we decided\n")
	generated := write("profiles.generated.toml", profiles.Header+"\nversion = 1\ndefault = \"full\"\n")
	conflicted := write("conflicted.toml", profiles.Header+"\n<<<<<<< ours\nversion = 1\n=======\n")
	link := filepath.Join(dir, "linked.generated.toml")
	if err := os.Symlink(policy, link); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, out, policy string
		want              string // "" for valid
	}{
		{"the hand-written file", policy, "", "derive: --out " + policy + " is the hand-written profiles.toml"},
		{"the --policy file", custom, custom, "derive: --out " + custom + " is the hand-written profiles.toml"},
		{"a link to the hand-written file", link, "", "derive: --out " + link + " is the hand-written profiles.toml"},
		{"another file of a person's", notes, "", "derive: --out " + notes + " exists and is no profiles file derive wrote"},
		{"a generated file", generated, "", ""},
		{"a generated file with a merge conflict", conflicted, "", ""},
		{"a new file", filepath.Join(dir, "new.toml"), "", ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := Config{Traces: []string{"t.jsonl"}, Catalog: "c.json", Out: c.out, Policy: c.policy, Holdout: derive.DefaultHoldout,
				DefaultTarget: derive.DefaultTarget, MaxUnknownShare: DefaultMaxUnknownShare, MinSessions: derive.DefaultMinSessions}
			err := cfg.Check()
			if c.want == "" {
				if err != nil {
					t.Fatalf("Check() = %v, want nil", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), c.want) {
				t.Fatalf("Check() = %v, want an error starting %q", err, c.want)
			}
		})
	}
}
