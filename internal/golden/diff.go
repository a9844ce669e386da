package golden

import (
	"bytes"
	"fmt"
	"strings"
)

// contextLines is how many unchanged lines a hunk shows around a change.
const contextLines = 3

// maxCells bounds the table of the longest-common-subsequence search; beyond
// it the differing middle is shown as one replaced block, which is still a
// correct (if longer) diff.
const maxCells = 1 << 22

type op struct {
	kind byte // ' ', '-' or '+'
	line string
}

// Diff returns the difference from old to new as a unified line diff with
// three lines of context, headed by the two names; "" when they are equal.
func Diff(oldName string, old []byte, newName string, new []byte) string {
	if bytes.Equal(old, new) {
		return ""
	}
	ops := edits(lines(old), lines(new))
	var out strings.Builder
	fmt.Fprintf(&out, "--- %s\n+++ %s\n", oldName, newName)
	oldLine, newLine := 1, 1 // numbers of the next line of each side
	for i := 0; i < len(ops); {
		if ops[i].kind == ' ' {
			i++
			oldLine++
			newLine++
			continue
		}
		// A hunk starts context lines before this change and runs until a
		// gap of more than two contexts of unchanged lines.
		start := max(i-contextLines, 0)
		back := i - start
		end := i
		for j := i; j < len(ops); j++ {
			if ops[j].kind != ' ' {
				end = j + 1
			} else if j-end >= 2*contextLines {
				break
			}
		}
		end = min(end+contextLines, len(ops))
		var nOld, nNew int
		for _, o := range ops[start:end] {
			if o.kind != '+' {
				nOld++
			}
			if o.kind != '-' {
				nNew++
			}
		}
		fmt.Fprintf(&out, "@@ -%s +%s @@\n", span(oldLine-back, nOld), span(newLine-back, nNew))
		for _, o := range ops[start:end] {
			out.WriteByte(o.kind)
			out.WriteString(o.line)
			if !strings.HasSuffix(o.line, "\n") {
				out.WriteString("\n\\ No newline at end of file\n")
			}
		}
		oldLine += nOld - back
		newLine += nNew - back
		i = end
	}
	return out.String()
}

// span formats a hunk range: the first line and the count, with the line
// before the hunk as start when it has no lines on that side.
func span(first, n int) string {
	if n == 0 {
		first--
	}
	if n == 1 {
		return fmt.Sprint(first)
	}
	return fmt.Sprintf("%d,%d", first, n)
}

// lines splits b after each newline; a last line without one is kept.
func lines(b []byte) []string {
	s := strings.SplitAfter(string(b), "\n")
	if s[len(s)-1] == "" {
		s = s[:len(s)-1]
	}
	return s
}

// edits returns a shortest edit script from a to b: unchanged, removed and
// added lines in order.
func edits(a, b []string) []op {
	var ops []op
	p := 0
	for p < len(a) && p < len(b) && a[p] == b[p] {
		ops = append(ops, op{' ', a[p]})
		p++
	}
	s := 0
	for s < len(a)-p && s < len(b)-p && a[len(a)-1-s] == b[len(b)-1-s] {
		s++
	}
	ma, mb := a[p:len(a)-s], b[p:len(b)-s]
	if (len(ma)+1)*(len(mb)+1) > maxCells {
		for _, l := range ma {
			ops = append(ops, op{'-', l})
		}
		for _, l := range mb {
			ops = append(ops, op{'+', l})
		}
	} else {
		ops = append(ops, lcs(ma, mb)...)
	}
	for _, l := range a[len(a)-s:] {
		ops = append(ops, op{' ', l})
	}
	return ops
}

// lcs aligns a and b on a longest common subsequence of lines.
func lcs(a, b []string) []op {
	w := len(b) + 1
	// n[i*w+j] is the length of the longest common subsequence of a[i:], b[j:].
	n := make([]int32, (len(a)+1)*w)
	for i := len(a) - 1; i >= 0; i-- {
		for j := len(b) - 1; j >= 0; j-- {
			if a[i] == b[j] {
				n[i*w+j] = n[(i+1)*w+j+1] + 1
			} else {
				n[i*w+j] = max(n[(i+1)*w+j], n[i*w+j+1])
			}
		}
	}
	var ops []op
	i, j := 0, 0
	for i < len(a) && j < len(b) {
		switch {
		case a[i] == b[j]:
			ops = append(ops, op{' ', a[i]})
			i++
			j++
		case n[(i+1)*w+j] >= n[i*w+j+1]:
			ops = append(ops, op{'-', a[i]})
			i++
		default:
			ops = append(ops, op{'+', b[j]})
			j++
		}
	}
	for ; i < len(a); i++ {
		ops = append(ops, op{'-', a[i]})
	}
	for ; j < len(b); j++ {
		ops = append(ops, op{'+', b[j]})
	}
	return ops
}
