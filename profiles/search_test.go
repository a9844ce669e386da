package profiles

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/toolsearch"
)

const searchFileSrc = `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["read_file"]
search = true
searchable = ["*_file", "list_dir"]

[search]
sessions = 4

[[search.tool]]
name = "read_file"
weight = 0.75

[[search.pair]]
tools = ["list_dir", "read_file"]
weight = 0.5

[[search.profile]]
name = "core"
sessions = 2

[[search.profile.tool]]
name = "list_dir"
weight = 1.0
`

func TestDecodeSearchKeys(t *testing.T) {
	f, err := DecodeFile(strings.NewReader(searchFileSrc), "f.toml")
	if err != nil {
		t.Fatal(err)
	}
	p := f.Profiles[0]
	if !p.Search || !reflect.DeepEqual(p.Searchable, []string{"*_file", "list_dir"}) {
		t.Fatalf("profile = %+v", p)
	}
	want := &SearchPriors{Sessions: 4, Tools: []SearchTool{{"read_file", 0.75}}, Pairs: []SearchPair{{[]string{"list_dir", "read_file"}, 0.5}},
		Profiles: []SearchProfile{{Name: "core", Sessions: 2, Tools: []SearchTool{{"list_dir", 1}}}}}
	if !reflect.DeepEqual(f.Search, want) {
		t.Fatalf("search = %+v, want %+v", f.Search, want)
	}
	var buf bytes.Buffer
	if err := Encode(&buf, f); err != nil {
		t.Fatal(err)
	}
	back, err := DecodeFile(&buf, "round trip")
	if err != nil {
		t.Fatalf("%v\n%s", err, buf.String())
	}
	if !reflect.DeepEqual(back, f) {
		t.Fatalf("round trip:\n got %+v\nwant %+v", back, f)
	}
	pol, err := DecodePolicy(strings.NewReader("version = 1\n[[profile]]\nname = \"core\"\nsearch = false\nsearchable = [\"list_*\"]\n"), "p.toml")
	if err != nil {
		t.Fatal(err)
	}
	if pol.Profiles[0].Search == nil || *pol.Profiles[0].Search || pol.Profiles[0].Searchable[0] != "list_*" {
		t.Fatalf("policy profile = %+v", pol.Profiles[0])
	}
}

func TestDecodeSearchErrors(t *testing.T) {
	runDecodeCases(t, []decodeCase{
		{name: "search not a bool", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\nsearch = \"yes\"\n",
			wantLine: 6, wantKey: "profile[0].search", wantMsg: "wrong type: want true or false"},
		{name: "empty searchable pattern", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\nsearchable = [\"\"]\n",
			wantLine: 6, wantKey: "profile[0].searchable[0]", wantMsg: "empty tool or pattern name"},
		{name: "empty searchable list", src: "version = 1\ndefault = \"a\"\n[[profile]]\nname = \"a\"\ntools = []\nsearch = true\nsearchable = []\n",
			wantLine: 7, wantKey: "profile[0].searchable", wantMsg: `an empty list would let search return every tool`},
		{name: "weight above one", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.tool]]\nname = \"a\"\nweight = 2.0\n",
			wantLine: 7, wantKey: "search.tool[0].weight", wantMsg: "2 is not a weight; want a number from 0 to 1"},
		{name: "pair of one", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.pair]]\ntools = [\"a\", \"a\"]\nweight = 0.5\n",
			wantLine: 6, wantKey: "search.pair[0].tools", wantMsg: "is not a pair; want two different tool names"},
		{name: "tool weighted twice", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.tool]]\nname = \"a\"\nweight = 0.5\n[[search.tool]]\nname = \"a\"\nweight = 0.5\n",
			wantKey: "search.tool[1].name", wantLine: 9, wantMsg: `tool "a" has a weight already`},
		{name: "profile demand above one", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = 1\n[[search.profile.tool]]\nname = \"a\"\nweight = 1.5\n",
			wantLine: 10, wantKey: "search.profile[0].tool[0].weight", wantMsg: "1.5 is not a weight"},
		{name: "profile demand twice", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = 1\n",
			wantLine: 9, wantKey: "search.profile[1].name", wantMsg: `profile "p" has a demand already`},
		{name: "search sessions negative", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = -1\n",
			wantLine: 4, wantKey: "search.sessions", wantMsg: "-1 is negative; want a count >= 0"},
		{name: "tool without a name", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.tool]]\nname = \" \"\nweight = 0.5\n",
			wantLine: 5, wantKey: "search.tool[0].name", wantMsg: "empty tool name"},
		{name: "tool weighted twice, whole message", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.tool]]\nname = \"a\"\nweight = 0.5\n[[search.tool]]\nname = \"a\"\nweight = 0.5\n",
			wantKey: "search.tool[1].name", wantLine: 9, wantMsg: `tool "a" has a weight already; give each tool one [[search.tool]]`},
		{name: "profile without a name", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.profile]]\nname = \"\"\nsessions = 1\n",
			wantLine: 5, wantKey: "search.profile[0].name", wantMsg: "empty profile name"},
		{name: "profile demand twice, whole message", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = 1\n",
			wantLine: 9, wantKey: "search.profile[1].name", wantMsg: `profile "p" has a demand already; give each profile one [[search.profile]]`},
		{name: "profile sessions negative", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = -2\n",
			wantLine: 7, wantKey: "search.profile[0].sessions", wantMsg: "-2 is negative; want a count >= 0"},
		{name: "profile tool without a name", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = 1\n[[search.profile.tool]]\nname = \"\"\nweight = 0.5\n",
			wantLine: 8, wantKey: "search.profile[0].tool[0].name", wantMsg: "empty tool name"},
		{name: "profile tool weighted twice", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\n[[search.profile]]\nname = \"p\"\nsessions = 1\n[[search.profile.tool]]\nname = \"a\"\nweight = 0.5\n[[search.profile.tool]]\nname = \"a\"\nweight = 0.5\n",
			wantLine: 12, wantKey: "search.profile[0].tool[1].name", wantMsg: `tool "a" has a weight already in profile "p"`},
		{name: "unknown key in search", src: "version = 1\ndefault = \"full\"\n[search]\nsessions = 1\nbias = 1\n",
			wantLine: 5, wantKey: "search.bias", wantMsg: `unknown key "bias" in search; valid keys: sessions, tool, pair`},
	}, func(src, name string) error {
		_, err := DecodeFile(strings.NewReader(src), name)
		return err
	})
	runDecodeCases(t, []decodeCase{
		{name: "policy search not a bool", src: "version = 1\n[[profile]]\nname = \"a\"\nsearch = 1\n",
			wantLine: 4, wantKey: "profile[0].search", wantMsg: "wrong type: want true or false"},
		// Over a generated searchable = ["b"], an empty list written to
		// mean "none" would have let call_tool run every tool.
		{name: "policy empty searchable list", src: "version = 1\n[[profile]]\nname = \"core\"\nsearchable = []\n",
			wantLine: 4, wantKey: "profile[0].searchable", wantMsg: `an empty list would let search return every tool; write ["*"] for every tool, or search = false for none`},
	}, func(src, name string) error {
		_, err := DecodePolicy(strings.NewReader(src), name)
		return err
	})
}

func TestSearchable(t *testing.T) {
	file := &File{Version: 1, Default: "core", Profiles: []Profile{
		{Name: "core", Tools: []string{"read_file"}, Search: true},
		{Name: "narrow", Tools: []string{"read_file"}, Search: true, Searchable: []string{"*_dir", "write_*"}},
		{Name: "ro", Tools: []string{"read_file"}, Search: true, ReadOnly: true},
		{Name: "plain", Tools: []string{"read_file"}},
		{Name: "off", Tools: []string{"read_file"}, Search: true},
		{Name: "nodeny", Tools: []string{}, Search: true},
	}}
	s := &Set{File: file, Policy: &Policy{Profiles: []PolicyProfile{
		{Name: "off", Search: ptr(false)},
		{Name: "nodeny", Deny: []string{"run_sql"}, AllowDestructive: true},
	}}}
	r, err := s.Resolve(offered())
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		profile, tool string
		want          bool
	}{
		{"core", "list_dir", true},
		{"core", "read_file", false},   // listed already
		{"core", "delete_file", false}, // destructive, not allowed in core
		{"core", "no_such", false},     // not offered
		{"narrow", "list_dir", true},
		{"narrow", "write_file", true},
		{"narrow", "run_sql", false}, // matches no searchable pattern
		{"ro", "list_dir", true},
		{"ro", "write_file", false},  // read_only profile
		{"plain", "list_dir", false}, // no search
		{"off", "list_dir", false},   // profiles.toml turned it off
		{"nodeny", "run_sql", false}, // denied
		{"nodeny", "delete_file", true},
		{"missing", "list_dir", false},
	} {
		if got := r.Searchable(tc.profile, tc.tool); got != tc.want {
			t.Errorf("Searchable(%q, %q) = %v, want %v", tc.profile, tc.tool, got, tc.want)
		}
	}
}

func TestSearchPriorsConversion(t *testing.T) {
	l := toolsearch.Learn([][]string{{"a", "b"}, {"a"}}, 0)
	l.Profiles = toolsearch.LearnDemand(map[string][][]string{"core": {{"b"}, {"a", "b"}}})
	p := SearchPriorsOf(l)
	if got, want := p.Priors(), l.Priors(); !reflect.DeepEqual(got, want) {
		t.Fatalf("Priors() = %+v, want %+v", got, want)
	}
	if got := (*SearchPriors)(nil).Priors(); len(got.Tools) != 0 {
		t.Fatalf("nil priors: %+v", got)
	}
}
