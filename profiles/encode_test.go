package profiles

import (
	"bytes"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/golden"
	"pgregory.net/rapid"
)

func sampleFile() *File {
	return &File{
		Version: 1,
		Default: "core",
		Provenance: &Provenance{
			Generator:   "toolprof profiler derive",
			DataFrom:    "2025-08-01T00:00:00Z",
			DataUntil:   "2025-08-31T23:59:59Z",
			Sessions:    1000,
			CatalogHash: "sha256:0123abcd",
			Method:      "greedy+lagrangian",
			Parameters:  []string{"target=0.8", "holdout=0.2"},
			Tokenizer:   "o200k_base",
		},
		Profiles: []Profile{
			{
				Name:         "core",
				Tools:        []string{"search_issues", "get_file_contents", "list_commits"},
				Instructions: "Use these tools for \"everyday\" work.\nPaths are relative to the repo root: C:\\ is not.\n\tIndented line.\n",
				Groups:       []string{"prs", "actions"},
				Measured: &Measured{
					Sessions: 800, Coverage: ptr(0.8125), HoldoutSessions: 200, HoldoutCoverage: ptr(0.79),
					HoldoutCI: []float64{0.7288, 0.8407}, Tools: 3, Bytes: 2048, TokensO200k: 512,
				},
			},
			{
				Name:     "standard",
				Tools:    []string{"list_commits", "get_file_contents", "search_issues", "create_issue"},
				ReadOnly: true,
				Measured: &Measured{Sessions: 800, HoldoutSessions: 0, NotEvaluable: []string{"holdout_coverage", "holdout_ci"}, Tools: 4, Bytes: 4096, TokensO200k: 1024},
			},
			{Name: "full", Tools: []string{}, Instructions: "All tools."},
		},
		Groups: []Group{
			{Name: "prs", Description: "pull requests: create, merge", Tools: []string{"merge_pr", "create_pr"}},
			{Name: "actions", Description: "workflows", Tools: []string{"run_workflow"}},
		},
	}
}

func TestEncodeGolden(t *testing.T) {
	var buf bytes.Buffer
	if err := Encode(&buf, sampleFile()); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "encode.golden.toml"), buf.Bytes())
	if !strings.HasPrefix(buf.String(), Header+"\n# sessions from 2025-08-01T00:00:00Z to 2025-08-31T23:59:59Z, 1000 sessions; catalog sha256:0123abcd;") {
		t.Errorf("header and provenance comment missing:\n%s", buf.String())
	}
}

func TestEncodeDeterministicAndRoundTrip(t *testing.T) {
	f := sampleFile()
	var a, b bytes.Buffer
	if err := Encode(&a, f); err != nil {
		t.Fatal(err)
	}
	if err := Encode(&b, f); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two encodings of the same File differ")
	}
	got, err := DecodeFile(bytes.NewReader(a.Bytes()), "round trip")
	if err != nil {
		t.Fatalf("%v\n%s", err, a.String())
	}
	if want := canonical(f); !reflect.DeepEqual(got, want) {
		t.Errorf("round trip:\n got %+v\nwant %+v", got, want)
	}
	// Encode must not reorder the caller's slices.
	if f.Profiles[0].Tools[0] != "search_issues" {
		t.Errorf("Encode sorted the caller's tool list in place")
	}
}

// canonical is f as it reads back: string lists sorted.
func canonical(f *File) *File {
	c := *f
	if f.Provenance != nil {
		p := *f.Provenance
		p.Parameters = sortedCopy(p.Parameters)
		c.Provenance = &p
	}
	c.Profiles = nil
	for _, p := range f.Profiles {
		p.Tools = sortedCopy(p.Tools)
		p.Groups = sortedCopy(p.Groups)
		if p.Measured != nil {
			m := *p.Measured
			m.NotEvaluable = sortedCopy(m.NotEvaluable)
			p.Measured = &m
		}
		c.Profiles = append(c.Profiles, p)
	}
	c.Groups = nil
	for _, g := range f.Groups {
		g.Tools = sortedCopy(g.Tools)
		c.Groups = append(c.Groups, g)
	}
	return &c
}

// TestEncodeRoundTripProperty: any valid File survives Encode -> decode,
// whatever its strings hold (quotes, backslashes, newlines, control
// characters, non-ASCII) and whatever its floats are.
func TestEncodeRoundTripProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		text := rapid.StringMatching(`[a-z"\\\n\t\x01 é'#\[\]=]{0,20}`)
		toolName := rapid.StringMatching(`[a-z][a-z_."\\ ]{0,6}[a-z]`)
		share := rapid.Float64Range(0, 1)
		nProfiles := rapid.IntRange(0, 4).Draw(t, "profiles")
		f := &File{Version: 1, Default: "full"}
		if rapid.Bool().Draw(t, "provenance") {
			f.Provenance = &Provenance{Generator: text.Draw(t, "gen"), Sessions: rapid.IntRange(0, 1<<40).Draw(t, "sessions"),
				Parameters: rapid.SliceOfDistinct(text, func(s string) string { return s }).Draw(t, "params")}
		}
		for i := range nProfiles {
			p := Profile{
				Name:         "p" + string(rune('a'+i)),
				Tools:        rapid.SliceOfDistinct(toolName, func(s string) string { return s }).Draw(t, "tools"),
				Instructions: text.Draw(t, "instructions"),
				ReadOnly:     rapid.Bool().Draw(t, "ro"),
			}
			if rapid.Bool().Draw(t, "measured") {
				lo, hi := share.Draw(t, "lo"), share.Draw(t, "hi")
				if lo > hi {
					lo, hi = hi, lo
				}
				p.Measured = &Measured{Sessions: rapid.IntRange(0, 1e9).Draw(t, "s"), Coverage: ptr(share.Draw(t, "cov")), HoldoutCI: []float64{lo, hi}}
			}
			f.Profiles = append(f.Profiles, p)
		}
		if nProfiles > 0 {
			f.Default = "pa"
		}
		var buf bytes.Buffer
		if err := Encode(&buf, f); err != nil {
			t.Fatal(err)
		}
		got, err := DecodeFile(bytes.NewReader(buf.Bytes()), "prop")
		if err != nil {
			t.Fatalf("%v\n%s", err, buf.String())
		}
		want := canonical(f)
		for i := range want.Profiles { // an empty list reads back as empty, not nil
			if want.Profiles[i].Tools == nil {
				want.Profiles[i].Tools = []string{}
			}
			if len(want.Profiles[i].Groups) == 0 {
				want.Profiles[i].Groups = nil
			}
		}
		if want.Provenance != nil && len(want.Provenance.Parameters) == 0 {
			want.Provenance.Parameters = nil
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("round trip:\n got %#v\nwant %#v\n%s", got, want, buf.String())
		}
		var again bytes.Buffer
		if err := Encode(&again, got); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
			t.Fatalf("re-encoding differs (err %v)", err)
		}
	})
}

func TestEncodeFloats(t *testing.T) {
	e := &encoder{}
	for v, want := range map[float64]string{1: "1.0", 0: "0.0", 0.8: "0.8", 1e-7: "1e-07", 1e21: "1e+21", math.Inf(1): "inf", math.NaN(): "nan"} {
		if got := e.float(v); got != want {
			t.Errorf("float(%v) = %q, want %q", v, got, want)
		}
	}
}

func TestEncodeRefusesInvalid(t *testing.T) {
	tests := map[string]*File{
		"duplicate tool":    {Version: 1, Default: "a", Profiles: []Profile{{Name: "a", Tools: []string{"x", "x"}}}},
		"duplicate profile": {Version: 1, Default: "a", Profiles: []Profile{{Name: "a"}, {Name: "a"}}},
		"bad default":       {Version: 1, Default: "b", Profiles: []Profile{{Name: "a"}}},
		"no version":        {Default: "full"},
		"invalid utf-8":     {Version: 1, Default: "full", Profiles: []Profile{{Name: "full", Instructions: "a\xffb"}}},
	}
	for name, f := range tests {
		if err := Encode(&bytes.Buffer{}, f); err == nil {
			t.Errorf("%s: Encode accepted it", name)
		}
	}
	if err := Encode(&bytes.Buffer{}, nil); err == nil {
		t.Error("Encode(nil) accepted")
	}
}

func TestWriteFileAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(path, []byte("old contents"), 0o600); err != nil {
		t.Fatal(err)
	}
	// A File that cannot be encoded leaves the old file untouched.
	if err := WriteFile(path, &File{Version: 1, Default: "nope"}); err == nil {
		t.Fatal("WriteFile accepted an invalid File")
	}
	if b, _ := os.ReadFile(path); string(b) != "old contents" {
		t.Fatalf("file changed after a failed write: %q", b)
	}
	if err := WriteFile(path, sampleFile()); err != nil {
		t.Fatal(err)
	}
	got, err := LoadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, canonical(sampleFile())) {
		t.Errorf("WriteFile then LoadFile differs")
	}
	entries, _ := os.ReadDir(dir)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{"profiles.generated.toml"}) {
		t.Errorf("directory holds %v, want only the file (no temp files left)", names)
	}
	if st, _ := os.Stat(path); st.Mode().Perm() != 0o644 {
		t.Errorf("mode = %v, want 0644", st.Mode().Perm())
	}
	if err := WriteFile(filepath.Join(dir, "missing", "x.toml"), sampleFile()); err == nil {
		t.Error("WriteFile into a missing directory succeeded")
	}
}
