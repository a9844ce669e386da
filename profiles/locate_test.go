package profiles

import (
	"testing"

	"pgregory.net/rapid"
)

func TestLocate(t *testing.T) {
	src := `# [[profile]] in a comment
version = 1 # trailing [comment]
"quoted key" = 'x'
a.b = 2
inline = { x = 1, y = [1,
  2] }

[[profile]]
name = "p0"
text = '''
[[profile]]
name = "fake"
'''
tools = [ # comment
  "x", 'y',
  "z",
]

[profile.measured]
sessions = 1

[[profile]]
name = "p1"
  [profile.measured]
  coverage = 0.5
[[effect]]
tool = "e"
`
	loc := locate(src)
	want := map[string]int{
		"version":                      2,
		"quoted key":                   3,
		"a":                            4,
		"a.b":                          4,
		"inline":                       5,
		"inline.x":                     5, // keys inside inline tables fall back to the table's line
		"profile":                      8,
		"profile[0]":                   8,
		"profile[0].name":              9,
		"profile[0].text":              10,
		"profile[0].tools":             14,
		"profile[0].measured":          19,
		"profile[0].measured.sessions": 20,
		"profile[1].name":              23,
		"profile[1].measured.coverage": 25,
		"effect[0].tool":               27,
		"profile[2].name":              8, // falls back to the first [[profile]]
		"nothing":                      0,
	}
	for key, line := range want {
		if got := loc.line(key); got != line {
			t.Errorf("line(%q) = %d, want %d", key, got, line)
		}
	}
	elems := []struct {
		value string
		nth   int
		want  int
	}{{"x", 0, 15}, {"y", 0, 15}, {"z", 0, 16}, {"x", 1, 14}, {"absent", 0, 14}}
	for _, e := range elems {
		if got := loc.elementLine("profile[0].tools", e.value, e.nth); got != e.want {
			t.Errorf("elementLine(tools, %q, %d) = %d, want %d", e.value, e.nth, got, e.want)
		}
	}
	if got := loc.exact("inline.x"); got != 0 {
		t.Errorf("exact(inline.x) = %d, want 0", got)
	}
}

// TestLocateNeverHangs: the scanner terminates on any input, valid TOML or
// not (it runs only after the parser accepted the file, but must not turn a
// parser bug into a hang).
func TestLocateNeverHangs(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		src := rapid.StringMatching(`[a-z"'\[\]{}=,.#\n \\\x00]{0,60}`).Draw(t, "src")
		loc := locate(src)
		for _, k := range loc.order {
			loc.elementLine(k, "a", 0)
		}
	})
}
