// Package visible shows strings that are not ours (names a client or an
// upstream chose, as telemetry holds them) as the characters they hold.
package visible

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// String returns s with every control and format character, line and
// paragraph separator, and byte of invalid UTF-8 written as a Go escape
// (\x1b, \r, \u202e, \xff): a terminal then runs no escape sequence, no
// carriage return overwrites a row, and no bidirectional override or
// zero-width character makes one name look like another. Any other s is
// returned as it is.
func String(s string) string {
	if strings.IndexFunc(s, hidden) < 0 && utf8.ValidString(s) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && n == 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case hidden(r):
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		default:
			b.WriteString(s[i : i+n])
		}
		i += n
	}
	return b.String()
}

func hidden(r rune) bool {
	return unicode.IsControl(r) || unicode.In(r, unicode.Cf, unicode.Zl, unicode.Zp)
}
