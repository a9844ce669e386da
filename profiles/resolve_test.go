package profiles

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// offered is the upstream catalog the merge tests resolve against.
func offered() []*mcp.Tool {
	tr := ptr(true)
	return []*mcp.Tool{
		{Name: "read_file", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "list_dir", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "write_file"},
		{Name: "delete_file", Annotations: &mcp.ToolAnnotations{DestructiveHint: tr}},
		{Name: "drop_db"},
		{Name: "run_sql"},
		{Name: "web_fetch", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: tr}},
	}
}

func baseFile() *File {
	return &File{Version: 1, Default: "core", Profiles: []Profile{
		{Name: "core", Tools: []string{"read_file", "write_file"}, Instructions: "generated core"},
		{Name: "standard", Tools: []string{"read_file", "write_file", "list_dir", "delete_file"}},
	}}
}

func TestResolveMerge(t *testing.T) {
	tests := []struct {
		name         string
		file         *File
		policy       *Policy
		wantDefault  string
		wantTools    map[string][]string // profile -> tools
		wantInstr    map[string]string
		wantReadOnly map[string]bool
		wantWarn     []string // substrings, each must appear in some warning
		wantNoWarn   bool
		wantRemoved  map[string][]Removal // profile -> removed; nil: not checked
	}{
		{
			name:        "generated only",
			file:        baseFile(),
			wantDefault: "core",
			wantTools: map[string][]string{
				"core":     {"read_file", "write_file"},
				"standard": {"list_dir", "read_file", "write_file"},
				"full":     {"delete_file", "drop_db", "list_dir", "read_file", "run_sql", "web_fetch", "write_file"},
			},
			wantInstr:   map[string]string{"core": "generated core"},
			wantWarn:    []string{`profile "standard" serves 3 of the 4 offered tools it names: the destructive rule removed delete_file (set allow_destructive = true under [[profile]] name = "standard" in profiles.toml to serve them)`},
			wantRemoved: map[string][]Removal{"core": nil, "standard": {{"delete_file", RuleDestructive}}, "full": nil},
		},
		{
			name:      "pin adds",
			file:      baseFile(),
			policy:    &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"list_dir"}}}},
			wantTools: map[string][]string{"core": {"list_dir", "read_file", "write_file"}},
		},
		{
			name:      "deny removes a generated tool",
			file:      baseFile(),
			policy:    &Policy{Profiles: []PolicyProfile{{Name: "core", Deny: []string{"write_file"}}}},
			wantTools: map[string][]string{"core": {"read_file"}, "standard": {"list_dir", "read_file", "write_file"}},
		},
		{
			name:      "new profile from pins",
			file:      baseFile(),
			policy:    &Policy{Profiles: []PolicyProfile{{Name: "sql", Pin: []string{"run_sql", "read_file"}, Instructions: ptr("sql only")}}},
			wantTools: map[string][]string{"sql": {"read_file", "run_sql"}},
			wantInstr: map[string]string{"sql": "sql only"},
		},
		{
			name:      "policy-only profile serving nothing is a warning",
			file:      baseFile(),
			policy:    &Policy{Profiles: []PolicyProfile{{Name: "cor", Instructions: ptr("typo")}}},
			wantTools: map[string][]string{"cor": nil},
			wantWarn:  []string{`profile "cor" is defined only in profiles.toml and serves no tools (pin some, or check the name against the generated profiles: core, full, standard)`},
		},
		{
			name:      "instruction override",
			file:      baseFile(),
			policy:    &Policy{Profiles: []PolicyProfile{{Name: "core", Instructions: ptr("hand written")}, {Name: "full", Instructions: ptr("all of it")}}},
			wantInstr: map[string]string{"core": "hand written", "standard": "", "full": "all of it"},
		},
		{
			name:        "default override",
			file:        baseFile(),
			policy:      &Policy{Default: "standard"},
			wantDefault: "standard",
		},
		{
			name:      "destructive allowed",
			file:      baseFile(),
			policy:    &Policy{Profiles: []PolicyProfile{{Name: "standard", AllowDestructive: true}}},
			wantTools: map[string][]string{"standard": {"delete_file", "list_dir", "read_file", "write_file"}},
		},
		{
			name:      "destructive by policy list removed, even when pinned",
			file:      baseFile(),
			policy:    &Policy{Destructive: []string{"drop_*"}, Profiles: []PolicyProfile{{Name: "core", Pin: []string{"drop_db"}}}},
			wantTools: map[string][]string{"core": {"read_file", "write_file"}, "full": {"delete_file", "drop_db", "list_dir", "read_file", "run_sql", "web_fetch", "write_file"}},
			wantWarn:  []string{`profile "core" serves 2 of the 3 offered tools it names: the destructive rule removed drop_db (set allow_destructive = true`},
		},
		{
			name:      "destructive by effect override removed",
			file:      baseFile(),
			policy:    &Policy{Effects: []EffectRule{{Tool: "write_file", Kind: "destructive"}}},
			wantTools: map[string][]string{"core": {"read_file"}},
			wantWarn:  []string{`profile "core" serves 1 of the 2 offered tools it names: the destructive rule removed write_file (`},
		},
		{
			name:      "effect override makes an annotated destructive tool servable",
			file:      baseFile(),
			policy:    &Policy{Effects: []EffectRule{{Tool: "delete_file", Kind: "mutate"}}},
			wantTools: map[string][]string{"standard": {"delete_file", "list_dir", "read_file", "write_file"}},
		},
		{
			name:         "read_only from policy keeps read and evaluate",
			file:         baseFile(),
			policy:       &Policy{Effects: []EffectRule{{Tool: "run_sql", Kind: "evaluate"}}, Profiles: []PolicyProfile{{Name: "core", ReadOnly: ptr(true), Pin: []string{"run_sql", "web_fetch"}}}},
			wantTools:    map[string][]string{"core": {"read_file", "run_sql", "web_fetch"}},
			wantReadOnly: map[string]bool{"core": true, "standard": false},
		},
		{
			name:      "read_only warns about a pinned mutating tool",
			file:      baseFile(),
			policy:    &Policy{Profiles: []PolicyProfile{{Name: "core", ReadOnly: ptr(true), Pin: []string{"drop_db"}}}},
			wantTools: map[string][]string{"core": {"read_file"}},
			wantWarn:  []string{`profile "core" serves 1 of the 3 offered tools it names: the read_only rule removed drop_db, write_file (set read_only = false under [[profile]] name = "core" in profiles.toml to serve them)`},
		},
		{
			name:        "destructive and read_only removals in one line",
			file:        baseFile(),
			policy:      &Policy{Profiles: []PolicyProfile{{Name: "standard", ReadOnly: ptr(true)}}},
			wantTools:   map[string][]string{"standard": {"list_dir", "read_file"}},
			wantWarn:    []string{`profile "standard" serves 2 of the 4 offered tools it names: the destructive rule removed delete_file (set allow_destructive = true under [[profile]] name = "standard" in profiles.toml to serve them); the read_only rule removed write_file (set read_only = false`},
			wantRemoved: map[string][]Removal{"standard": {{"delete_file", RuleDestructive}, {"write_file", RuleReadOnly}}},
		},
		{
			name:         "generated read_only, policy turns it off",
			file:         &File{Version: 1, Default: "ro", Profiles: []Profile{{Name: "ro", Tools: []string{"read_file", "write_file"}, ReadOnly: true}}},
			policy:       &Policy{Profiles: []PolicyProfile{{Name: "ro", ReadOnly: ptr(false)}}},
			wantTools:    map[string][]string{"ro": {"read_file", "write_file"}},
			wantReadOnly: map[string]bool{"ro": false},
		},
		{
			name:         "generated read_only",
			file:         &File{Version: 1, Default: "ro", Profiles: []Profile{{Name: "ro", Tools: []string{"read_file", "write_file"}, ReadOnly: true}}},
			wantTools:    map[string][]string{"ro": {"read_file"}},
			wantReadOnly: map[string]bool{"ro": true},
			wantWarn:     []string{`profile "ro" serves 1 of the 2 offered tools it names: the read_only rule removed write_file`},
			wantRemoved:  map[string][]Removal{"ro": {{"write_file", RuleReadOnly}}},
		},
		{
			name: "unknown tools are warnings",
			file: &File{Version: 1, Default: "core", Profiles: []Profile{{Name: "core", Tools: []string{"read_file", "gone"}}},
				Groups: []Group{{Name: "g", Tools: []string{"list_dir", "vanished"}}}},
			policy: &Policy{Destructive: []string{"nuke"}, Effects: []EffectRule{{Tool: "ghost", Kind: "read"}},
				Profiles: []PolicyProfile{{Name: "core", Pin: []string{"typo_tool"}, Deny: []string{"wrte_file"}}}},
			wantTools: map[string][]string{"core": {"read_file"}},
			wantWarn: []string{
				`profile "core" names tool "gone" that no upstream offers`,
				`profile "core" names tool "typo_tool" that no upstream offers (pinned in profiles.toml)`,
				`profile "core" denies tool "wrte_file" that no upstream offers`,
				`group "g" names tool "vanished" that no upstream offers`,
				`destructive names tool "nuke" that no upstream offers`,
				`[[effect]] names tool "ghost" that no upstream offers`,
			},
		},
		{
			name:      "generated full carries instructions, tools ignored",
			file:      &File{Version: 1, Default: "full", Profiles: []Profile{{Name: "full", Tools: []string{"read_file"}, Instructions: "everything", Measured: &Measured{Sessions: 9}}}},
			wantTools: map[string][]string{"full": {"delete_file", "drop_db", "list_dir", "read_file", "run_sql", "web_fetch", "write_file"}},
			wantInstr: map[string]string{"full": "everything"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Set{File: tt.file, Policy: tt.policy, Path: "profiles.generated.toml"}
			r, err := s.Resolve(offered())
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantDefault != "" && r.Default != tt.wantDefault {
				t.Errorf("Default = %q, want %q", r.Default, tt.wantDefault)
			}
			for name, want := range tt.wantTools {
				p, ok := r.Profiles[name]
				if !ok {
					t.Errorf("no profile %q; have %v", name, r.Names())
					continue
				}
				if !slices.Equal(p.Tools, want) {
					t.Errorf("profile %q tools = %v, want %v", name, p.Tools, want)
				}
			}
			for name, want := range tt.wantInstr {
				if got := r.Profiles[name].Instructions; got != want {
					t.Errorf("profile %q instructions = %q, want %q", name, got, want)
				}
			}
			for name, want := range tt.wantReadOnly {
				if got := r.Profiles[name].ReadOnly; got != want {
					t.Errorf("profile %q read_only = %v, want %v", name, got, want)
				}
			}
			for _, w := range tt.wantWarn {
				if !slices.ContainsFunc(r.Warnings, func(s string) bool { return strings.Contains(s, w) }) {
					t.Errorf("no warning containing %q in %q", w, r.Warnings)
				}
			}
			if tt.wantNoWarn && len(r.Warnings) > 0 {
				t.Errorf("warnings = %q, want none", r.Warnings)
			}
			for name, want := range tt.wantRemoved {
				if got := r.Profiles[name].Removed; !slices.Equal(got, want) {
					t.Errorf("profile %q removed = %v, want %v", name, got, want)
				}
			}
			if n := len(r.Warnings); n != len(slices.Compact(slices.Sorted(slices.Values(r.Warnings)))) {
				t.Errorf("a warning repeated in %q", r.Warnings)
			}
		})
	}
}

func TestResolvedQueries(t *testing.T) {
	s := &Set{File: baseFile(), Policy: &Policy{Effects: []EffectRule{{Tool: "run_sql", Kind: "evaluate", External: ptr(true)}}}}
	r, err := s.Resolve(offered())
	if err != nil {
		t.Fatal(err)
	}
	if got, want := r.Names(), []string{"core", "full", "standard"}; !slices.Equal(got, want) {
		t.Errorf("Names = %v, want %v", got, want)
	}
	if got, want := r.Order, []string{"core", "standard", "full"}; !slices.Equal(got, want) {
		t.Errorf("Order = %v, want %v", got, want)
	}
	allowed := []struct {
		profile, tool string
		want          bool
	}{
		{"core", "read_file", true}, {"core", "list_dir", false}, {"full", "delete_file", true},
		{"standard", "delete_file", false}, {"nope", "read_file", false}, {"full", "absent", false},
	}
	for _, a := range allowed {
		if got := r.Allowed(a.profile, a.tool); got != a.want {
			t.Errorf("Allowed(%q, %q) = %v, want %v", a.profile, a.tool, got, a.want)
		}
	}
	with := map[string][]string{
		"read_file":   {"core", "full", "standard"},
		"list_dir":    {"full", "standard"},
		"delete_file": {"full"},
		"absent":      nil,
	}
	for tool, want := range with {
		if got := r.ProfilesWith(tool); !slices.Equal(got, want) {
			t.Errorf("ProfilesWith(%q) = %v, want %v", tool, got, want)
		}
	}
	effects := map[string]Effect{
		"read_file":   {KindRead, false},
		"delete_file": {KindDestructive, false},
		"run_sql":     {KindEvaluate, true},
		"web_fetch":   {KindRead, true},
		"absent":      {},
	}
	for tool, want := range effects {
		if got := r.Effect(tool); got != want {
			t.Errorf("Effect(%q) = %+v, want %+v", tool, got, want)
		}
	}
}

func TestResolveRejectsBadTools(t *testing.T) {
	s := &Set{File: baseFile()}
	for name, tools := range map[string][]*mcp.Tool{
		"duplicate": {{Name: "a"}, {Name: "a"}},
		"nameless":  {{Name: ""}},
		"nil":       {nil},
	} {
		if _, err := s.Resolve(tools); err == nil {
			t.Errorf("%s: Resolve accepted %v", name, tools)
		}
	}
	bad := &Set{File: baseFile(), Policy: &Policy{Default: "missing"}}
	if _, err := bad.Resolve(offered()); err == nil || !strings.Contains(err.Error(), `default profile "missing" does not exist; valid profiles: core, full, standard`) {
		t.Errorf("err = %v, want default error", err)
	}
}

func TestFull(t *testing.T) {
	r := Full(offered())
	if r.Default != "full" || !slices.Equal(r.Names(), []string{"full"}) {
		t.Fatalf("Default %q, Names %v; want only full", r.Default, r.Names())
	}
	want := []string{"delete_file", "drop_db", "list_dir", "read_file", "run_sql", "web_fetch", "write_file"}
	if got := r.Profiles["full"].Tools; !slices.Equal(got, want) {
		t.Errorf("full = %v, want %v", got, want)
	}
	if !r.Allowed("full", "delete_file") || r.Effect("delete_file").Kind != KindDestructive {
		t.Errorf("full must hold destructive tools with their effect")
	}
	if len(r.Warnings) != 0 {
		t.Errorf("warnings = %v", r.Warnings)
	}
}

func writeFiles(t *testing.T, gen, policy string) string {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(path, []byte(gen), 0o644); err != nil {
		t.Fatal(err)
	}
	if policy != "" {
		if err := os.WriteFile(PolicyPathFor(path), []byte(policy), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return path
}

func TestLoad(t *testing.T) {
	gen := "version = 1\ndefault = \"core\"\n[[profile]]\nname = \"core\"\ntools = [\"read_file\"]\n"
	t.Run("without policy", func(t *testing.T) {
		path := writeFiles(t, gen, "")
		s, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if s.Policy != nil || s.PolicyPath != "" || s.Path != path {
			t.Errorf("set = %+v", s)
		}
	})
	t.Run("with policy", func(t *testing.T) {
		path := writeFiles(t, gen, "version = 1\ndefault = \"mine\"\n[[profile]]\nname = \"mine\"\npin = [\"list_dir\"]\n")
		s, err := Load(path)
		if err != nil {
			t.Fatal(err)
		}
		if s.PolicyPath != filepath.Join(filepath.Dir(path), "profiles.toml") || s.Default() != "mine" {
			t.Errorf("PolicyPath %q, Default %q", s.PolicyPath, s.Default())
		}
		r, err := s.Resolve(offered())
		if err != nil {
			t.Fatal(err)
		}
		if r.Default != "mine" || !slices.Equal(r.Profiles["mine"].Tools, []string{"list_dir"}) {
			t.Errorf("Default %q, mine = %v", r.Default, r.Profiles["mine"].Tools)
		}
	})
	t.Run("policy default names no profile", func(t *testing.T) {
		path := writeFiles(t, gen, "version = 1\n\ndefault = \"cor\"\n")
		_, err := Load(path)
		var e *Error
		if !errors.As(err, &e) || e.File != PolicyPathFor(path) || e.Line != 3 || e.Key != "default" ||
			!strings.Contains(e.Msg, `profile "cor" does not exist; valid profiles: core, full`) {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad policy", func(t *testing.T) {
		path := writeFiles(t, gen, "version = 1\n[[effect]]\ntool = \"x\"\nkind = \"rread\"\n")
		_, err := Load(path)
		var e *Error
		if !errors.As(err, &e) || e.File != PolicyPathFor(path) || e.Line != 4 || e.Key != "effect[0].kind" {
			t.Fatalf("err = %v", err)
		}
	})
	t.Run("bad generated", func(t *testing.T) {
		path := writeFiles(t, "version = 1\n", "")
		_, err := Load(path)
		var e *Error
		if !errors.As(err, &e) || e.File != path || e.Key != "default" {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestPolicyPathFor(t *testing.T) {
	for in, want := range map[string]string{
		"profiles.generated.toml":         "profiles.toml",
		"/etc/tp/profiles.generated.toml": "/etc/tp/profiles.toml",
		"conf/x.toml":                     "conf/profiles.toml",
	} {
		if got := PolicyPathFor(in); got != want {
			t.Errorf("PolicyPathFor(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestGroupTools(t *testing.T) {
	file := &File{Version: 1, Default: "core",
		Profiles: []Profile{
			{Name: "core", Tools: []string{"read_file"}, Groups: []string{"fs"}},
			{Name: "ro", Tools: []string{"read_file"}, Groups: []string{"fs"}, ReadOnly: true},
			{Name: "admin", Tools: []string{}, Groups: []string{"fs"}},
			{Name: "plain", Tools: []string{"read_file"}},
		},
		Groups: []Group{{Name: "fs", Description: "files", Tools: []string{"read_file", "list_dir", "write_file", "delete_file"}}},
	}
	s := &Set{File: file, Policy: &Policy{Profiles: []PolicyProfile{{Name: "admin", AllowDestructive: true}, {Name: "nowrite", Deny: []string{"write_file"}}}}}
	// A tool profiles.toml denies in a profile is never in it, not even by
	// switching a group on: the deny used to bound only the listed tools.
	file.Profiles = append(file.Profiles, Profile{Name: "nowrite", Tools: []string{"read_file"}, Groups: []string{"fs"}})
	r, err := s.Resolve(offered())
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		profile, group string
		want           []string
		wantErr        string
	}{
		{profile: "core", group: "fs", want: []string{"list_dir", "write_file"}}, // destructive delete_file bounded, read_file already held
		{profile: "ro", group: "fs", want: []string{"list_dir"}},                 // read-only keeps read tools only
		{profile: "admin", group: "fs", want: []string{"delete_file", "list_dir", "read_file", "write_file"}},
		{profile: "nowrite", group: "fs", want: []string{"list_dir"}}, // denied write_file stays out
		{profile: "plain", group: "fs", wantErr: `profile "plain" does not offer group "fs"; it offers: none`},
		{profile: "nope", group: "fs", wantErr: `no profile "nope"; valid profiles: admin, core, full, nowrite, plain, ro`},
	}
	for _, tt := range tests {
		got, err := r.GroupTools(tt.profile, tt.group)
		if tt.wantErr != "" {
			if err == nil || err.Error() != tt.wantErr {
				t.Errorf("GroupTools(%q, %q) err = %v, want %q", tt.profile, tt.group, err, tt.wantErr)
			}
			continue
		}
		if err != nil || !slices.Equal(got, tt.want) {
			t.Errorf("GroupTools(%q, %q) = %v, %v; want %v", tt.profile, tt.group, got, err, tt.want)
		}
	}
	for _, w := range []string{
		`profile "core": group "fs" cannot switch on tool "delete_file" (destructive) in this profile`,
		`profile "ro": group "fs" cannot switch on tool "write_file" (mutate) in this profile`,
		`profile "nowrite": group "fs" cannot switch on tool "write_file" (denied in profiles.toml) in this profile`,
	} {
		if !slices.Contains(r.Warnings, w) {
			t.Errorf("no warning %q in %q", w, r.Warnings)
		}
	}
	for _, w := range r.Warnings {
		if strings.Contains(w, `"admin"`) {
			t.Errorf("unexpected warning for admin: %q", w)
		}
	}
}

// TestNewUpstreamToolNeedsOneEdit: a tool added upstream is served under
// full with no edit, and one pin puts it in another profile.
func TestNewUpstreamToolNeedsOneEdit(t *testing.T) {
	tools := append(offered(), &mcp.Tool{Name: "new_tool", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}})
	r, err := (&Set{File: baseFile()}).Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Allowed("full", "new_tool") || r.Allowed("core", "new_tool") {
		t.Fatalf("new tool: full %v core %v; want only full", r.Allowed("full", "new_tool"), r.Allowed("core", "new_tool"))
	}
	r, err = (&Set{File: baseFile(), Policy: &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"new_tool"}}}}}).Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	if !r.Allowed("core", "new_tool") {
		t.Error("one pin did not add the new tool to core")
	}
}

func TestUnknownToolWarnedOnce(t *testing.T) {
	file := &File{Version: 1, Default: "core", Profiles: []Profile{{Name: "core", Tools: []string{"gone"}}}}
	r, err := (&Set{File: file, Policy: &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"gone"}}}}}).Resolve(offered())
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`profile "core" names tool "gone" that no upstream offers`}; !slices.Equal(r.Warnings, want) {
		t.Errorf("warnings = %q, want %q", r.Warnings, want)
	}
}

func TestHasWithoutIndex(t *testing.T) {
	p := &ResolvedProfile{Name: "hand", Tools: []string{"a", "c"}}
	if !p.Has("a") || !p.Has("c") || p.Has("b") {
		t.Errorf("Has on a hand-built profile: a %v c %v b %v", p.Has("a"), p.Has("c"), p.Has("b"))
	}
}

// TestExample loads the documented example pair under testdata/example and
// checks what each of its profiles serves.
func TestExample(t *testing.T) {
	s, err := Load(filepath.Join("testdata", "example", "profiles.generated.toml"))
	if err != nil {
		t.Fatal(err)
	}
	tr := ptr(true)
	tools := []*mcp.Tool{
		{Name: "get_file_contents", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: tr}},
		{Name: "list_commits", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "create_issue"},
		{Name: "delete_branch"},
		{Name: "force_push", Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(false)}},
		{Name: "run_query"},
		{Name: "fetch_url", Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
	}
	r, err := s.Resolve(tools)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]string{
		"core":       {"get_file_contents", "list_commits"},
		"standard":   {"create_issue", "fetch_url", "list_commits"},
		"review":     {"get_file_contents", "list_commits", "run_query"},
		"maintainer": {"delete_branch", "get_file_contents"},
		"full":       {"create_issue", "delete_branch", "fetch_url", "force_push", "get_file_contents", "list_commits", "run_query"},
	}
	if got := r.Names(); !slices.Equal(got, []string{"core", "full", "maintainer", "review", "standard"}) {
		t.Errorf("Names = %v", got)
	}
	for name, tools := range want {
		if got := r.Profiles[name].Tools; !slices.Equal(got, tools) {
			t.Errorf("%s = %v, want %v", name, got, tools)
		}
	}
	if r.Default != "core" || r.Profiles["core"].Instructions != "Read code and history. Ask before changing anything.\n" {
		t.Errorf("Default %q, core instructions %q", r.Default, r.Profiles["core"].Instructions)
	}
	effects := map[string]Effect{
		"get_file_contents": {KindRead, false}, // the "*" rule clears the annotation's external
		"fetch_url":         {KindRead, true},  // the exact rule beats "*"
		"run_query":         {KindEvaluate, false},
		"force_push":        {KindDestructive, false},
		"delete_branch":     {KindDestructive, false},
	}
	for tool, e := range effects {
		if got := r.Effect(tool); got != e {
			t.Errorf("Effect(%s) = %+v, want %+v", tool, got, e)
		}
	}
	if want := []string{`profile "standard" serves 3 of the 4 offered tools it names: the destructive rule removed delete_branch (set allow_destructive = true under [[profile]] name = "standard" in ` + s.PolicyPath + ` to serve them)`}; !slices.Equal(r.Warnings, want) {
		t.Errorf("warnings = %q, want %q", r.Warnings, want)
	}
}

// nestedFile is a derived family: core within standard within full, with
// the provenance derive writes.
func nestedFile(params ...string) *File {
	return &File{Version: 1, Default: "core",
		Provenance: &Provenance{Generator: "test", Parameters: params},
		Profiles: []Profile{
			{Name: "core", Tools: []string{"read_file"}},
			{Name: "standard", Tools: []string{"read_file", "write_file"}},
			{Name: "wide", Tools: []string{"list_dir", "read_file", "write_file"}},
			{Name: "full", Tools: []string{"list_dir", "read_file", "write_file"}},
		}}
}

func TestResolveNesting(t *testing.T) {
	family := []string{"holdout=0.2", "profile.core.target=0.8", "profile.standard.target=0.95", "profile.wide.budget_tokens=900"}
	tests := []struct {
		name   string
		file   *File
		policy *Policy
		want   []string // nesting warnings, exactly
	}{
		{name: "untouched family nests", file: nestedFile(family...)},
		{
			name:   "pin only in the smaller",
			file:   nestedFile(family...),
			policy: &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"run_sql"}}}},
			want:   []string{`profile "core" holds "run_sql" that "standard" does not: profiles derived as a nested family are no longer nested (pin it in "standard" too, or deny it in "core")`},
		},
		{
			name:   "deny only in the larger",
			file:   nestedFile(family...),
			policy: &Policy{Profiles: []PolicyProfile{{Name: "standard", Deny: []string{"read_file"}}}},
			want:   []string{`profile "core" holds "read_file" that "standard" does not: profiles derived as a nested family are no longer nested (pin it in "standard" too, or deny it in "core")`},
		},
		{
			name:   "two tools pinned only in the smaller",
			file:   nestedFile(family...),
			policy: &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"run_sql", "list_dir"}}}},
			want:   []string{`profile "core" holds "list_dir", "run_sql" that "standard" does not: profiles derived as a nested family are no longer nested (pin them in "standard" too, or deny them in "core")`},
		},
		{
			name:   "break between standard and a budget profile",
			file:   nestedFile(family...),
			policy: &Policy{Profiles: []PolicyProfile{{Name: "wide", Deny: []string{"write_file"}}}},
			want:   []string{`profile "standard" holds "write_file" that "wide" does not: profiles derived as a nested family are no longer nested (pin it in "wide" too, or deny it in "standard")`},
		},
		{
			name:   "pin and deny kept nested",
			file:   nestedFile(family...),
			policy: &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"run_sql"}, Deny: []string{"read_file"}}, {Name: "standard", Pin: []string{"run_sql"}}, {Name: "wide", Pin: []string{"run_sql"}}}},
		},
		{
			name:   "no provenance declares no family",
			file:   &File{Version: 1, Default: "core", Profiles: nestedFile().Profiles},
			policy: &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"run_sql"}}}},
		},
		{
			name:   "profiles the parameters do not name are not a family",
			file:   nestedFile("holdout=0.2", "profile.core.target=0.8"),
			policy: &Policy{Profiles: []PolicyProfile{{Name: "core", Pin: []string{"run_sql"}}}},
		},
		{
			name: "a policy-only profile belongs to no family",
			file: nestedFile(family...),
			policy: &Policy{Profiles: []PolicyProfile{
				{Name: "sql", Pin: []string{"run_sql"}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := &Set{File: tt.file, Policy: tt.policy, Path: "profiles.generated.toml"}
			r, err := s.Resolve(offered())
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, w := range r.Warnings {
				if strings.Contains(w, "nested") {
					got = append(got, w)
				}
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("nesting warnings\n got %q\nwant %q", got, tt.want)
			}
		})
	}
}
