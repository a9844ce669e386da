package profiles

import (
	"os"
	"strconv"
	"strings"
)

// keyLines maps every key of a TOML document to the line it is written on.
// Keys carry array-of-tables indices ("profile[1].tools") because
// toml.MetaData keeps one position per dotted key, so in a file with several
// [[profile]] tables it cannot tell which one a problem is in.
//
// The scanner runs only on text that the toml parser has accepted, so it can
// be lenient: it never fails, it just stops recording.
type keyLines struct {
	src   string
	lines map[string]int // indexed key -> line
	order []string       // indexed keys in file order
}

// exact returns the line of key when it is written in the file, else 0.
func (k *keyLines) exact(key string) int {
	if k == nil {
		return 0
	}
	return k.lines[key]
}

// line returns the line of key, or of its nearest written ancestor (a key
// inside an inline table has none of its own), or 0.
func (k *keyLines) line(key string) int {
	if k == nil {
		return 0
	}
	for key != "" {
		if l, ok := k.lines[key]; ok {
			return l
		}
		i := strings.LastIndexAny(key, ".[")
		if i < 0 {
			break
		}
		key = key[:i]
	}
	return 0
}

// elementLine returns the line of the nth (0-based) occurrence of the string
// value s inside the array written at key, falling back to the key's line.
func (k *keyLines) elementLine(key, s string, nth int) int {
	l := k.line(key)
	if k == nil || l == 0 {
		return l
	}
	// Start scanning at the key's line; the value follows the '='.
	off := lineOffset(k.src, l)
	sc := scanner{src: k.src, i: off, line: l}
	sc.skipTo('=')
	sc.i++
	sc.skipSpace(true)
	if sc.peek() != '[' {
		return l
	}
	sc.i++
	for sc.i < len(sc.src) {
		sc.skipSpace(true)
		switch c := sc.peek(); c {
		case ']':
			return l
		case ',':
			sc.i++
		case '"', '\'':
			at := sc.line
			v := sc.readString()
			if v == s {
				if nth == 0 {
					return at
				}
				nth--
			}
		default:
			before := sc.i
			sc.skipValue()
			if sc.i == before {
				sc.i++
			}
		}
	}
	return l
}

func lineOffset(src string, line int) int {
	off := 0
	for n := 1; n < line; n++ {
		i := strings.IndexByte(src[off:], '\n')
		if i < 0 {
			return len(src)
		}
		off += i + 1
	}
	return off
}

// locate indexes the keys of src.
func locate(src string) *keyLines {
	k := &keyLines{src: src, lines: map[string]int{}}
	sc := scanner{src: src, line: 1}
	table := ""
	arrays := map[string]int{} // indexed path of an array of tables -> tables seen
	resolve := func(segs []string) string {
		p := ""
		for _, s := range segs {
			p = join(p, s)
			if n, ok := arrays[p]; ok {
				p += "[" + strconv.Itoa(n-1) + "]"
			}
		}
		return p
	}
	record := func(key string, line int) {
		if _, dup := k.lines[key]; !dup {
			k.lines[key] = line
			k.order = append(k.order, key)
		}
	}
	for {
		sc.skipSpace(true)
		if sc.i >= len(sc.src) {
			return k
		}
		before := sc.i
		line := sc.line
		if sc.peek() == '[' {
			double := strings.HasPrefix(sc.src[sc.i:], "[[")
			sc.i++
			if double {
				sc.i++
			}
			segs := sc.readKey(']')
			if len(segs) == 0 {
				sc.skipLine()
				continue
			}
			p := join(resolve(segs[:len(segs)-1]), segs[len(segs)-1])
			if double {
				n := arrays[p]
				arrays[p] = n + 1
				record(p, line)
				p += "[" + strconv.Itoa(n) + "]"
			}
			table = p
			record(table, line)
			sc.skipLine()
			continue
		}
		segs := sc.readKey('=')
		if len(segs) > 0 && sc.peek() == '=' {
			sc.i++
			key := table
			for _, s := range segs {
				key = join(key, s)
				record(key, line)
			}
			sc.skipSpace(false)
			sc.skipValue()
		}
		sc.skipLine()
		if sc.i == before {
			sc.i++
		}
	}
}

func join(a, b string) string {
	if a == "" {
		return b
	}
	return a + "." + b
}

// scanner walks TOML text, counting lines.
type scanner struct {
	src  string
	i    int
	line int
}

func (s *scanner) peek() byte {
	if s.i < len(s.src) {
		return s.src[s.i]
	}
	return 0
}

func (s *scanner) advance() {
	if s.src[s.i] == '\n' {
		s.line++
	}
	s.i++
}

// skipSpace skips blanks and comments, and newlines when newlines is set.
func (s *scanner) skipSpace(newlines bool) {
	for s.i < len(s.src) {
		switch c := s.src[s.i]; {
		case c == ' ' || c == '\t' || c == '\r':
			s.i++
		case c == '\n' && newlines:
			s.advance()
		case c == '#':
			for s.i < len(s.src) && s.src[s.i] != '\n' {
				s.i++
			}
		default:
			return
		}
	}
}

// skipLine skips to the end of the line: what is left after a header or
// a complete value is only a closing bracket, blanks or a comment.
func (s *scanner) skipLine() {
	for s.i < len(s.src) && s.src[s.i] != '\n' {
		s.i++
	}
}

func (s *scanner) skipTo(c byte) {
	for s.i < len(s.src) && s.src[s.i] != c {
		s.advance()
	}
}

// readKey reads a dotted key up to (not past) end.
func (s *scanner) readKey(end byte) []string {
	var segs []string
	for s.i < len(s.src) {
		s.skipSpace(false)
		switch c := s.peek(); {
		case c == end:
			return segs
		case c == '.':
			s.i++
		case c == '"' || c == '\'':
			segs = append(segs, s.readString())
		case isBare(c):
			j := s.i
			for s.i < len(s.src) && isBare(s.src[s.i]) {
				s.i++
			}
			segs = append(segs, s.src[j:s.i])
		default:
			return segs
		}
	}
	return segs
}

func isBare(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

// readString reads any of TOML's four string forms and returns its value
// (escapes are resolved only well enough to compare tool names).
func (s *scanner) readString() string {
	q := s.src[s.i]
	multi := strings.HasPrefix(s.src[s.i:], string([]byte{q, q, q}))
	var b strings.Builder
	if multi {
		s.i += 3
		for s.i < len(s.src) {
			if strings.HasPrefix(s.src[s.i:], string([]byte{q, q, q})) {
				s.i += 3
				for s.i < len(s.src) && s.src[s.i] == q { // up to two quotes may end the content
					b.WriteByte(q)
					s.i++
				}
				return b.String()
			}
			if q == '"' && s.src[s.i] == '\\' && s.i+1 < len(s.src) {
				s.i++
			}
			b.WriteByte(s.src[s.i])
			s.advance()
		}
		return b.String()
	}
	s.i++
	for s.i < len(s.src) && s.src[s.i] != q && s.src[s.i] != '\n' {
		if q == '"' && s.src[s.i] == '\\' && s.i+1 < len(s.src) {
			s.i++
		}
		b.WriteByte(s.src[s.i])
		s.i++
	}
	if s.i < len(s.src) && s.src[s.i] == q {
		s.i++
	}
	return b.String()
}

// skipValue skips one value: string, array, inline table or scalar.
func (s *scanner) skipValue() {
	switch c := s.peek(); c {
	case '"', '\'':
		s.readString()
	case '[':
		s.i++
		for s.i < len(s.src) {
			s.skipSpace(true)
			switch s.peek() {
			case ']':
				s.i++
				return
			case ',':
				s.i++
			case 0:
				return
			default:
				before := s.i
				s.skipValue()
				if s.i == before {
					s.i++
				}
			}
		}
	case '{':
		s.i++
		for s.i < len(s.src) {
			s.skipSpace(true)
			switch s.peek() {
			case '}':
				s.i++
				return
			case ',', '=':
				s.i++
			case 0:
				return
			default:
				before := s.i
				if s.readKey('='); s.peek() == '=' {
					s.i++
					s.skipSpace(true)
					s.skipValue()
				}
				if s.i == before {
					s.i++
				}
			}
		}
	default:
		for s.i < len(s.src) {
			switch s.src[s.i] {
			case ',', ']', '}', '\n', '#':
				return
			}
			s.i++
		}
	}
}

// KeyLine returns the line the TOML file at path writes key on (with array
// indices, "profile[1].deny"), or that of its nearest written ancestor; 0
// when the file cannot be read or writes neither. It is for errors found
// after loading, which Error locates as loading's own do.
func KeyLine(path, key string) int {
	src, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	return locate(string(src)).line(key)
}
