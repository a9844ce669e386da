package mdtext

import (
	"strings"
	"testing"

	"pgregory.net/rapid"
)

func TestCodeStaysInItsCell(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain__tool", "plain__tool"},
		{`<img src="https://example.com/x.png">`, `<img src="https://example.com/x.png">`},
		{"[approve](https://example.com)", "[approve](https://example.com)"},
		{"</details>", "</details>"},
		{"@octocat #1 **bold**", "@octocat #1 **bold**"},
		{"a|b", "a|b"},
		{"a||b|", "a||b|"},
		{`a\\|b`, `a\\|b`},
		{`a\|b`, `a\\|b`}, // the one reading that differs: an odd run before '|'
		{"`", "`"},
		{"``x", "``x"},
		{"x`", "x`"},
		{"a ``` b", "a ``` b"},
		{" lead", " lead"},
		{"trail ", "trail "},
		{"   ", "   "},
		{"x\r| y | 1 |\n# heading\r\nz", `x\r| y | 1 |\n# heading\r\nz`},
		{"esc\x1b[2J\u202e", `esc\x1b[2J\u202e`},
	} {
		row := "| " + Code(tc.in) + " | 1 |"
		if strings.ContainsAny(row, "\r\n") {
			t.Errorf("Code(%q) = %q holds a line ending", tc.in, Code(tc.in))
		}
		cells := Cells(row)
		if len(cells) != 2 {
			t.Errorf("Code(%q) in a row of two cells: %q reads as %d cells %q", tc.in, row, len(cells), cells)
			continue
		}
		got, ok := CodeContent(cells[0])
		if !ok || got != tc.want {
			t.Errorf("Code(%q) = %q: cell %q shows %q (code span %v), want %q", tc.in, Code(tc.in), cells[0], got, ok, tc.want)
		}
	}
	if Code("") != "" {
		t.Errorf(`Code("") = %q, want ""`, Code(""))
	}
}

// TestCodePropertyOneSpanOneCell: whatever the name, the row keeps its
// cells and the name's cell is one code span.
func TestCodePropertyOneSpanOneCell(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("ab `\\|<>[]()@#*_\r\n!")), 1, 24, -1).Draw(t, "name")
		row := "| " + Code(s) + " | 1 | 2 |"
		cells := Cells(row)
		if len(cells) != 3 || cells[1] != "1" || cells[2] != "2" {
			t.Fatalf("Code(%q) = %q: row reads as %q", s, Code(s), cells)
		}
		if strings.Trim(s, " \r\n") == "" {
			return
		}
		if _, ok := CodeContent(cells[0]); !ok {
			t.Fatalf("Code(%q) = %q: cell %q is not one code span", s, Code(s), cells[0])
		}
	})
}

func TestCells(t *testing.T) {
	for _, tc := range []struct {
		row  string
		want []string
	}{
		{"| a | b |", []string{"a", "b"}},
		{"a | b", []string{"a", "b"}},
		{`| a\|b | c |`, []string{"a|b", "c"}},
		{`| a\\|b |`, []string{`a\\`, "b"}},
		{"| `x` | |", []string{"`x`", ""}},
	} {
		if got := Cells(tc.row); strings.Join(got, "\x00") != strings.Join(tc.want, "\x00") {
			t.Errorf("Cells(%q) = %q, want %q", tc.row, got, tc.want)
		}
	}
}

// TestText: every character that could open markup is escaped, nothing
// else is, and a reader (CommonMark drops the backslash before
// punctuation) sees the input.
func TestText(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"profile \"core\": 3 tools", `profile "core": 3 tools`},
		{`x <img src="https://example.com/p.png"> y`, `x \<img src="https://example.com/p.png"\> y`},
		{"[approve](https://example.com)", `\[approve\](https://example.com)`},
		{"![i](u)", `\!\[i\](u)`},
		{"`code` **b** _i_ ~~s~~", "\\`code\\` \\*\\*b\\*\\* \\_i\\_ \\~\\~s\\~\\~"},
		{"@octocat #1 a|b &amp;", `\@octocat \#1 a\|b \&amp;`},
		{`back\slash`, `back\\slash`},
		{"line\nbreak\x1b", `line\\nbreak\\x1b`},
	} {
		if got := Text(tc.in); got != tc.want {
			t.Errorf("Text(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
	rapid.Check(t, func(t *rapid.T) {
		s := rapid.StringOfN(rapid.SampledFrom([]rune("ab \"`\\|<>[]()@#*_~&!:.")), 0, 24, -1).Draw(t, "text")
		got := Text(s)
		var shown strings.Builder
		for i := 0; i < len(got); i++ {
			if got[i] == '\\' && i+1 < len(got) && isPunct(got[i+1]) {
				i++
			} else if strings.IndexByte(textSpecial, got[i]) >= 0 {
				t.Fatalf("Text(%q) = %q leaves %q unescaped", s, got, got[i])
			}
			shown.WriteByte(got[i])
		}
		if shown.String() != s {
			t.Fatalf("Text(%q) = %q reads as %q", s, got, shown.String())
		}
	})
}
