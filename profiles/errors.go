package profiles

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
)

// Error is one problem in a profiles file, located as precisely as the
// input allows.
type Error struct {
	File string // path as given to the loader
	Line int    // 1-based; 0 when the problem is a missing key
	Key  string // TOML key with array indices, e.g. "profile[1].tools"
	Msg  string // what is wrong and what would be valid
}

func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Key != "" {
		b.WriteString(": ")
		b.WriteString(e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// Errors is every problem found in one file, in line order. errors.As with
// a **Error target finds the first.
type Errors []*Error

func (es Errors) Error() string {
	parts := make([]string, len(es))
	for i, e := range es {
		parts[i] = e.Error()
	}
	return strings.Join(parts, "\n")
}

// Unwrap lets errors.As and errors.Is see each problem.
func (es Errors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// collect returns nil, the single problem, or all of them sorted by line
// (missing keys, at line 0, first).
func collect(es []*Error) error {
	switch len(es) {
	case 0:
		return nil
	case 1:
		return es[0]
	}
	slices.SortStableFunc(es, func(a, b *Error) int { return cmp.Compare(a.Line, b.Line) })
	return Errors(es)
}
