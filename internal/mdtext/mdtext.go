// Package mdtext writes names that are not ours (tools an upstream
// offers or a client calls, client names from handshakes, profile names)
// into GitHub-flavoured markdown as a pull request body shows them.
//
// A name is written as a code span: inside one, GitHub renders no link,
// image, HTML, emphasis, mention or issue reference, so a name such as
// `<img src=...>`, `[approve](https://...)`, `@org/team` or `</details>`
// shows as the characters it is. Code also keeps the span inside its table
// cell: line endings are shown as escapes and pipes are escaped as
// cmark-gfm (the renderer GitHub uses) reads table rows.
//
// Cells and CodeContent read a row back as cmark-gfm does, for tests of
// what a reader of the pull request sees.
package mdtext

import (
	"strings"

	"github.com/toolprof/toolprof/internal/visible"
)

// Code returns s as a code span that may stand in a table cell and shows
// s, its control and format characters (line endings, escapes,
// bidirectional overrides) written as Go escapes by visible.String. One
// reading differs: a run of an odd number of backslashes directly before
// a '|' shows one backslash more, since cmark-gfm pairs backslashes before
// it splits a row into cells. An empty s is the empty string.
func Code(s string) string {
	s = visible.String(s)
	if s == "" {
		return ""
	}
	var b strings.Builder
	run, longest, ticks := 0, 0, 0 // backslashes before here; backtick runs
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c == '`' {
			ticks++
			longest = max(longest, ticks)
		} else {
			ticks = 0
		}
		switch c {
		case '\\':
			run++
		case '|':
			// An even run leaves the pipe's escape its own backslash.
			if run%2 == 1 {
				b.WriteByte('\\')
			}
			b.WriteByte('\\')
			run = 0
		default:
			run = 0
		}
		b.WriteByte(c)
	}
	body := b.String()
	fence := strings.Repeat("`", longest+1)
	// A span's content loses one space at each end when it starts and ends
	// with one; padding keeps a leading or trailing backtick off the fence.
	if strings.Trim(body, " ") != "" && (strings.ContainsAny(body[:1], " `") || strings.ContainsAny(body[len(body)-1:], " `")) {
		body = " " + body + " "
	}
	return fence + body + fence
}

// Text returns s as plain text in a paragraph or block quote: its control
// and format characters written as escapes by visible.String and each
// character that can open HTML, a link or image, emphasis, strikethrough,
// a code span, a table cell, a mention or an issue reference
// backslash-escaped, so that GitHub shows the characters of s, a name
// inside it included, and a reader sees s unchanged. Other punctuation is
// left as it is, to keep the source readable in a terminal.
func Text(s string) string {
	s = visible.String(s)
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if strings.IndexByte(textSpecial, s[i]) >= 0 {
			b.WriteByte('\\')
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// textSpecial is what Text escapes.
const textSpecial = "\\`*_[]<>&~@#|!"

// isPunct reports whether c is ASCII punctuation: what a backslash may
// escape in CommonMark, and what cmark-gfm pairs with one in a table row.
func isPunct(c byte) bool {
	return strings.IndexByte("!\"#$%&'()*+,-./:;<=>?@[\\]^_`{|}~", c) >= 0
}

// Cells splits one table row into its cells as cmark-gfm does: a backslash
// and the punctuation after it are one character, an unpaired '|' ends a
// cell, the leading and trailing '|' are optional; in each cell a '\'
// directly before '|' is then dropped and surrounding spaces trimmed.
func Cells(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	var cells []string
	var cur strings.Builder
	flush := func() {
		c := cur.String()
		var out strings.Builder
		for i := 0; i < len(c); i++ {
			if c[i] == '\\' && i+1 < len(c) && c[i+1] == '|' {
				continue
			}
			out.WriteByte(c[i])
		}
		cells = append(cells, strings.TrimSpace(out.String()))
		cur.Reset()
	}
	for i := 0; i < len(row); i++ {
		switch {
		case row[i] == '\\' && i+1 < len(row) && isPunct(row[i+1]):
			cur.WriteByte(row[i])
			cur.WriteByte(row[i+1])
			i++
		case row[i] == '|':
			flush()
		default:
			cur.WriteByte(row[i])
		}
	}
	if strings.TrimSpace(cur.String()) != "" {
		flush()
	}
	return cells
}

// CodeContent returns what a cell shows when the whole cell is one code
// span, and whether it is one: the text between a run of backticks and
// the next run of the same length, which must end the cell, with one
// space taken from each end when both ends are spaces and the text is not
// only spaces.
func CodeContent(cell string) (string, bool) {
	n := len(cell) - len(strings.TrimLeft(cell, "`"))
	if n == 0 {
		return "", false
	}
	rest := cell[n:]
	for i := 0; i < len(rest); {
		if rest[i] != '`' {
			i++
			continue
		}
		j := i
		for j < len(rest) && rest[j] == '`' {
			j++
		}
		if j-i == n {
			if j != len(rest) {
				return "", false // the span closes before the cell ends
			}
			body := rest[:i]
			if len(body) >= 2 && body[0] == ' ' && body[len(body)-1] == ' ' && strings.Trim(body, " ") != "" {
				body = body[1 : len(body)-1]
			}
			return body, true
		}
		i = j
	}
	return "", false
}
