package launch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// DecodeError locates a problem in a declaration file.
type DecodeError struct {
	File   string
	Line   int    // 0 when unknown
	Server string // "" at the top level
	Key    string // "" when the problem is the entry as a whole
	Msg    string
}

func (e *DecodeError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	if e.Server != "" {
		fmt.Fprintf(&b, ": server %q", e.Server)
	}
	if e.Key != "" {
		fmt.Fprintf(&b, ": key %q", e.Key)
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return b.String()
}

// sseRefusal is the message an SSE entry fails with.
const sseRefusal = "SSE is unsupported, migrate to streamable_http"

// isServerName reports whether name is letters, digits, '_', '-' and '.'
// only: it prefixes tool names, which allow no more.
func isServerName(name string) bool {
	return name != "" && strings.IndexFunc(name, func(r rune) bool { return !isNameRune(r, true) }) < 0
}

// isNameRune reports whether r is an ASCII letter, digit or '_', or '-'
// (and '.' when dot).
func isNameRune(r rune, dot bool) bool {
	return 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' || '0' <= r && r <= '9' || r == '_' || r == '-' || dot && r == '.'
}

// File is one decoded .mcp.json-format file.
type File struct {
	Servers []Server // in file order
	// Separator, when the file sets the optional top-level "separator",
	// joins server and tool names when several servers are served.
	Separator string
}

// ReadFile strictly decodes one .mcp.json-format file into its servers, in
// file order.
func ReadFile(path string) ([]Server, error) {
	f, err := ReadFileAll(path)
	return f.Servers, err
}

// ReadFileAll strictly decodes one .mcp.json-format file.
func ReadFileAll(path string) (File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return File{}, fmt.Errorf("read launch file: %w", err)
	}
	return DecodeFile(path, data)
}

// Decode strictly decodes data, read from file, into its servers.
func Decode(file string, data []byte) ([]Server, error) {
	f, err := DecodeFile(file, data)
	return f.Servers, err
}

// DecodeFile strictly decodes data, read from file.
func DecodeFile(file string, data []byte) (File, error) {
	dir, err := filepath.Abs(filepath.Dir(file))
	if err != nil {
		return File{}, fmt.Errorf("decode %s: %w", file, err)
	}
	p := parser{file: file, data: data, dir: dir}
	return p.document()
}

// isSeparator reports whether sep may join server and tool names: one to
// three of '_', '-' and '.', which tool names allow and server names
// cannot be confused with.
func isSeparator(sep string) bool {
	return len(sep) >= 1 && len(sep) <= 3 && strings.Trim(sep, "_-.") == ""
}

type parser struct {
	file string
	data []byte
	dir  string
}

// line returns the 1-based line of the first token at or after off.
func (p *parser) line(off int64) int {
	i := int(off)
	for i < len(p.data) && strings.IndexByte(" \t\r\n,:", p.data[i]) >= 0 {
		i++
	}
	return bytes.Count(p.data[:min(i, len(p.data))], []byte("\n")) + 1
}

func (p *parser) fail(off int64, server, key, format string, args ...any) error {
	return &DecodeError{File: p.file, Line: p.line(off), Server: server, Key: key, Msg: fmt.Sprintf(format, args...)}
}

// syntax turns a json error into a DecodeError with its line.
func (p *parser) syntax(base int64, err error, server string) error {
	var se *json.SyntaxError
	off := base
	if errors.As(err, &se) {
		off = base + se.Offset
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return &DecodeError{File: p.file, Line: p.line(int64(len(p.data))), Server: server, Msg: "unexpected end of JSON"}
	}
	return &DecodeError{File: p.file, Line: p.line(off), Server: server, Msg: "invalid JSON: " + err.Error()}
}

// object walks the members of the object starting at base in data, calling
// member with each key, the offset of its key and its raw value. A key
// given twice fails, named with keyPrefix before it.
func (p *parser) object(data []byte, base int64, server, what, keyPrefix string,
	member func(key string, keyOff, valOff int64, raw json.RawMessage) error) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	tok, err := dec.Token()
	if err != nil {
		return p.syntax(base, err, server)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return p.fail(base, server, "", "%s must be a JSON object", what)
	}
	seen := map[string]bool{}
	for dec.More() {
		keyOff := base + dec.InputOffset()
		tok, err := dec.Token()
		if err != nil {
			return p.syntax(base, err, server)
		}
		key := tok.(string) // object keys are always strings
		valOff := base + dec.InputOffset()
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return p.syntax(base, err, server)
		}
		if seen[key] {
			return p.fail(keyOff, server, keyPrefix+key, "duplicate key")
		}
		seen[key] = true
		if err := member(key, keyOff, valOff, raw); err != nil {
			return err
		}
	}
	if _, err := dec.Token(); err != nil {
		return p.syntax(base, err, server)
	}
	if _, err := dec.Token(); err != io.EOF {
		return p.fail(base+dec.InputOffset(), server, "", "unexpected data after %s", what)
	}
	return nil
}

func (p *parser) document() (File, error) {
	var f File
	found := false
	err := p.object(p.data, 0, "", "the file", "", func(key string, keyOff, valOff int64, raw json.RawMessage) error {
		switch key {
		case "separator":
			if err := json.Unmarshal(raw, &f.Separator); err != nil || !isSeparator(f.Separator) {
				return p.fail(valOff, "", key, `want a string of one to three of "_", "-" and ".", such as "__" (the default) or "."`)
			}
			return nil
		case "mcpServers":
		default:
			return p.fail(keyOff, "", key, `unknown key; the file holds "mcpServers" and, optionally, "separator"`)
		}
		found = true
		return p.object(raw, skipSpace(p.data, valOff), "", `"mcpServers"`, "", func(name string, keyOff, valOff int64, raw json.RawMessage) error {
			s, err := p.server(name, keyOff, skipSpace(p.data, valOff), raw)
			if err != nil {
				return err
			}
			f.Servers = append(f.Servers, s)
			return nil
		})
	})
	if err != nil {
		return File{}, err
	}
	if !found {
		return File{}, &DecodeError{File: p.file, Line: 1, Key: "mcpServers", Msg: `missing key; want {"mcpServers": {"name": {...}}}`}
	}
	return f, nil
}

// skipSpace returns the offset of the first non-space byte at or after off,
// so a nested decoder's offsets can be added to it.
func skipSpace(data []byte, off int64) int64 {
	for off < int64(len(data)) && strings.IndexByte(" \t\r\n,:", data[off]) >= 0 {
		off++
	}
	return off
}

type entry struct {
	typ, command, cwd, url string
	args                   []string
	env, headers           map[string]string
	oauth                  *OAuth
	has                    map[string]int64 // key -> offset, for later errors
}

func (p *parser) server(name string, keyOff, base int64, raw json.RawMessage) (Server, error) {
	if !isServerName(name) {
		return Server{}, p.fail(keyOff, name, "", "invalid server name: use letters, digits, '_', '-' and '.' (it prefixes tool names)")
	}
	e := entry{has: map[string]int64{}}
	err := p.object(raw, base, name, "a server entry", "", func(key string, keyOff, valOff int64, raw json.RawMessage) error {
		e.has[key] = keyOff
		var target any
		want := "a string"
		switch key {
		case "type":
			target = &e.typ
		case "command":
			target = &e.command
		case "cwd":
			target = &e.cwd
		case "url":
			target = &e.url
		case "args":
			var args []*string // a null element is no string
			if json.Unmarshal(raw, &args) != nil || args == nil || slices.Contains(args, nil) {
				return p.fail(keyOff, name, key, "want an array of strings, got %s", kind(raw))
			}
			for _, a := range args {
				e.args = append(e.args, *a)
			}
			return nil
		case "env", "headers":
			m, err := p.strings(name, key, keyOff, skipSpace(p.data, valOff), raw)
			if key == "env" {
				e.env = m
			} else {
				e.headers = m
			}
			return err
		case "oauth":
			o, err := p.oauth(name, skipSpace(p.data, valOff), raw)
			e.oauth = o
			return err
		default:
			return p.fail(keyOff, name, key, "unknown key; valid keys: type, command, args, env, cwd, url, headers, oauth")
		}
		if string(raw) == "null" || json.Unmarshal(raw, target) != nil {
			return p.fail(keyOff, name, key, "want %s, got %s", want, kind(raw))
		}
		return nil
	})
	if err != nil {
		return Server{}, err
	}
	s := Server{
		Name: name, Command: e.command, Args: e.args, Env: e.env, Cwd: e.cwd,
		URL: e.url, Headers: e.headers, OAuth: e.oauth, dir: p.dir,
		Source: fmt.Sprintf("%s:%d", p.file, p.line(keyOff)),
	}
	switch e.typ {
	case "":
		s.Transport = Stdio
		if e.url != "" && e.command == "" {
			s.Transport = StreamableHTTP
		}
	case "stdio":
		s.Transport = Stdio
	case "http", "streamable_http", "streamableHttp":
		s.Transport = StreamableHTTP
	case "sse":
		return Server{}, p.fail(e.has["type"], name, "type", sseRefusal)
	default:
		return Server{}, p.fail(e.has["type"], name, "type", "unknown transport %q; valid: stdio, http, streamable_http, streamableHttp", e.typ)
	}
	if s.Transport == Stdio {
		for _, k := range []string{"url", "headers"} {
			if off, ok := e.has[k]; ok {
				return Server{}, p.fail(off, name, k, "not valid for a stdio server (it has a command)")
			}
		}
		if e.command == "" {
			return Server{}, p.fail(keyOff, name, "command", "missing or empty; a stdio server needs a command (or give a url for HTTP)")
		}
	} else {
		for _, k := range []string{"command", "args", "env", "cwd"} {
			if off, ok := e.has[k]; ok {
				return Server{}, p.fail(off, name, k, "not valid for a streamable_http server (it has a url)")
			}
		}
		if e.url == "" {
			return Server{}, p.fail(keyOff, name, "url", "missing or empty; a streamable_http server needs a url")
		}
	}
	if err := p.checkOAuth(name, e, s); err != nil {
		return Server{}, err
	}
	for _, k := range slices.Sorted(maps.Keys(e.env)) { // the first invalid name by order, the same every run
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.Contains(k, "${") {
			return Server{}, p.fail(e.has["env"], name, "env", "invalid variable name %q (names are taken literally; ${...} is expanded only in values)", k)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.headers)) {
		if k == "" || strings.ContainsAny(k, " \t\r\n:") || strings.Contains(k, "${") {
			return Server{}, p.fail(e.has["headers"], name, "headers", "invalid header name %q (names are taken literally; ${...} is expanded only in values)", k)
		}
	}
	return s, nil
}

// strings decodes the object of strings under key (env or headers) of
// server name, starting at base: a name given twice fails rather than the
// last silently winning, and so does a header name that differs from
// another in case only, since both are one HTTP header and which value
// is sent would vary from request to request.
func (p *parser) strings(name, key string, keyOff, base int64, raw json.RawMessage) (map[string]string, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, p.fail(keyOff, name, key, "want an object of strings, got %s", kind(raw))
	}
	m := map[string]string{}
	canonical := map[string]string{} // header name as net/http sends it -> the name as written
	err := p.object(raw, base, name, fmt.Sprintf("%q", key), key+".", func(k string, kOff, _ int64, v json.RawMessage) error {
		var s *string
		if json.Unmarshal(v, &s) != nil || s == nil {
			return p.fail(keyOff, name, key, "want an object of strings, got an object whose %q is %s", k, kind(v))
		}
		if key == "headers" {
			c := http.CanonicalHeaderKey(k)
			if first, ok := canonical[c]; ok {
				return p.fail(kOff, name, key+"."+k, "the same header as %q (header names ignore case): keep one", first)
			}
			canonical[c] = k
		}
		m[k] = *s
		return nil
	})
	return m, err
}

// kind names the JSON type of raw for error messages, never its value.
func kind(raw json.RawMessage) string {
	switch raw[0] {
	case '"':
		return "a string"
	case '{':
		return "an object"
	case '[':
		return "an array"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}
