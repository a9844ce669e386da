package visible

import "testing"

func TestString(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"read_file", "read_file"},
		{"naïve 工具 <b>|`", "naïve 工具 <b>|`"},
		{"x\x1b]52;c;aGk=\x07y", `x\x1b]52;c;aGk=\ay`},
		{"row\r| forged |", `row\r| forged |`},
		{"a\tb\nc", `a\tb\nc`},
		{"abc\u202edef", `abc\u202edef`},
		{"zero\u200bwidth", `zero\u200bwidth`},
		{"line\u2028sep", `line\u2028sep`},
		{"bad\xffutf8", `bad\xffutf8`},
		{"\u0085next", `\u0085next`},
	} {
		if got := String(tc.in); got != tc.want {
			t.Errorf("String(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
