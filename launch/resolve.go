package launch

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Redaction replaces a value that may be a secret in printed output.
const Redaction = "<redacted>"

// minScrubLen is the shortest resolved value Scrub removes from messages:
// shorter values are not credentials and replacing them would garble text.
const minScrubLen = 4

// minEchoLen is the shortest resolved value Echoes finds: shorter values
// (true, json, object, debug) are words a server's own text holds
// whatever it was given, and no credential is that short.
const minEchoLen = 8

// isVarName reports whether name is a variable name: letters, digits and
// '_', not starting with a digit.
func isVarName(name string) bool {
	if name == "" || '0' <= name[0] && name[0] <= '9' {
		return false
	}
	return strings.IndexFunc(name, func(r rune) bool { return r == '-' || !isNameRune(r, false) }) < 0
}

// Lookup finds a variable's value; os.LookupEnv in production.
type Lookup func(name string) (string, bool)

// ResolvedServer is a Server with every ${NAME} replaced by its value. Its
// values are secrets: print it only through Resolved.Redacted.
type ResolvedServer struct {
	Name      string
	Transport Transport
	// Command is a bare name to look up on PATH, or a path: absolute when
	// it was declared relative in a file, taken from Cwd, else from the
	// file's directory.
	Command string
	Args    []string
	Env     map[string]string
	Cwd     string // absolute when it was declared relative to its file
	URL     string
	Headers map[string]string
	OAuth   *ResolvedOAuth // nil: no OAuth
	// Template is the entry as written.
	Template Server

	scrub *strings.Replacer // every form of every value that came from a variable; nil: none
	echo  *strings.Replacer // scrub, of the values of at least minEchoLen bytes only
}

// Resolved is a Document with its variables resolved.
type Resolved struct {
	Version   int
	Separator string // as in the Document
	Servers   []ResolvedServer
}

// Resolve replaces every ${NAME} using lookup. Every unset variable is
// reported, each naming its server, field and variable, never a value.
func (d *Document) Resolve(lookup Lookup) (*Resolved, error) {
	r := &Resolved{Version: d.Version, Separator: d.Separator}
	var errs []error
	for _, s := range d.Servers {
		rs, err := resolveServer(s, lookup)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		r.Servers = append(r.Servers, rs)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return r, nil
}

// resolver expands the templates of one server, collecting errors and the
// values substituted.
type resolver struct {
	server  Server
	lookup  Lookup
	errs    []error
	secrets map[string]bool
	// composed holds each resolved value that put a value of minScrubLen
	// bytes or more among literal text: a short key shows in it.
	composed map[string]bool
}

func resolveServer(s Server, lookup Lookup) (ResolvedServer, error) {
	r := &resolver{server: s, lookup: lookup, secrets: map[string]bool{}, composed: map[string]bool{}}
	rs := ResolvedServer{
		Name:      s.Name,
		Transport: s.Transport,
		Command:   r.expand("command", s.Command),
		Cwd:       r.expand("cwd", s.Cwd),
		URL:       r.expand("url", s.URL),
		Template:  s,
	}
	for i, a := range s.Args {
		rs.Args = append(rs.Args, r.expand(fmt.Sprintf("args[%d]", i), a))
	}
	rs.Env = r.expandMap("env", s.Env)
	rs.Headers = r.expandMap("headers", s.Headers)
	rs.OAuth = r.resolveOAuth(s.OAuth)
	if rs.Cwd != "" && !filepath.IsAbs(rs.Cwd) && s.dir != "" {
		rs.Cwd = filepath.Join(s.dir, rs.Cwd)
	}
	if s.Transport == Stdio {
		rs.Command = resolveCommand(rs.Command, rs.Cwd, s.dir)
	}
	if len(r.errs) == 0 && s.Transport == StreamableHTTP && rs.URL != s.URL {
		// Checked here, naming the template: the parse error would quote
		// the resolved URL, or a piece of it, on every connection attempt.
		if _, err := url.Parse(rs.URL); err != nil {
			r.fail("url", "%q does not parse as a URL once its variables are resolved: URL-escape their values (e.g. %%22 for a quote, %%25 for %%)", s.URL)
		}
	}
	if len(r.errs) > 0 {
		return ResolvedServer{}, errors.Join(r.errs...)
	}
	rs.scrub = scrubber(r.secrets, rs.URL, s.URL)
	// A short value alone is a word any text holds, but one a server
	// repeats in the text it came in (a URL's key=k3y42) is its secret.
	long := maps.Clone(r.secrets)
	maps.Copy(long, r.composed)
	maps.DeleteFunc(long, func(v string, _ bool) bool { return len(v) < minEchoLen })
	rs.echo = scrubber(long, "", "")
	return rs, nil
}

// NewScrubber returns a function replacing with Redaction every form in
// which Scrub finds a resolved value, for values learned after resolving
// (an OAuth server's tokens); values shorter than 4 bytes are left.
func NewScrubber(values ...string) func(string) string {
	secrets := map[string]bool{}
	for _, v := range values {
		secrets[v] = true
	}
	r := scrubber(secrets, "", "")
	if r == nil {
		return func(msg string) string { return msg }
	}
	return r.Replace
}

// scrubber replaces every form in which a message may carry one of the
// secrets with Redaction, and the resolved URL, when it holds one, with its
// template: an error about the URL then reads as the URL was written.
// Longest first, so a form containing another is replaced whole.
func scrubber(secrets map[string]bool, resolvedURL, templateURL string) *strings.Replacer {
	with := map[string]string{}
	for v := range secrets {
		if len(v) < minScrubLen {
			continue
		}
		for _, f := range secretForms(v) {
			with[f] = Redaction
		}
	}
	if len(with) == 0 {
		return nil
	}
	if resolvedURL != templateURL {
		for _, f := range urlForms(resolvedURL) {
			with[f] = templateURL
		}
	}
	olds := slices.SortedFunc(maps.Keys(with), func(a, b string) int {
		return cmp.Or(len(b)-len(a), strings.Compare(a, b))
	})
	var pairs []string
	for _, o := range olds {
		pairs = append(pairs, o, with[o])
	}
	return strings.NewReplacer(pairs...)
}

// secretForms are the encodings of v that toolprof's own output may
// carry: as is; JSON-escaped, with and without HTML escaping (health,
// JSON-RPC errors); Go-quoted, as %q, url.Error and slog print (and quoted
// twice, a quoted message quoted again); URL-escaped as a path, a path
// segment and a query value.
func secretForms(v string) []string {
	forms := []string{v, url.PathEscape(v), url.QueryEscape(v), (&url.URL{Path: v}).EscapedPath()}
	if u, err := url.PathUnescape(v); err == nil && u != v {
		// net/url decodes the escapes the value held before printing it.
		forms = append(forms, u, url.PathEscape(u), url.QueryEscape(u), (&url.URL{Path: u}).EscapedPath())
	}
	for _, q := range []string{v, strconv.Quote(v)} {
		forms = append(forms, inner(strconv.Quote(q)), inner(strconv.QuoteToASCII(q)))
		for _, html := range []bool{false, true} {
			var b strings.Builder
			enc := json.NewEncoder(&b)
			enc.SetEscapeHTML(html)
			if enc.Encode(q) == nil {
				forms = append(forms, inner(strings.TrimSuffix(b.String(), "\n")))
			}
		}
	}
	return forms
}

// urlForms are the ways the resolved URL u appears in errors: as given,
// as net/url prints it after parsing (path escaped), and Go-quoted.
func urlForms(u string) []string {
	forms := []string{u}
	if p, err := url.Parse(u); err == nil {
		forms = append(forms, p.String(), p.Redacted())
	}
	for _, f := range slices.Clone(forms) {
		forms = append(forms, inner(strconv.Quote(f)))
	}
	return forms
}

// inner strips the quotes a quoting function put around its result.
func inner(quoted string) string { return quoted[1 : len(quoted)-1] }

func (r *resolver) expandMap(field string, m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out[k] = r.expand(field+" "+k, m[k])
	}
	return out
}

func (r *resolver) fail(field, format string, args ...any) {
	r.errs = append(r.errs, fmt.Errorf("server %q (%s): %s: %s", r.server.Name, r.server.Source, field, fmt.Sprintf(format, args...)))
}

// expand replaces the references in one template. On error it records it
// and returns "".
func (r *resolver) expand(field, tmpl string) string {
	var b strings.Builder
	rest := tmpl
	ok := true
	secret := false // a value of minScrubLen bytes or more written
	for {
		i := strings.Index(rest, "${")
		if i < 0 {
			b.WriteString(rest)
			break
		}
		b.WriteString(rest[:i])
		end := strings.IndexByte(rest[i:], '}')
		if end < 0 {
			r.fail(field, `unterminated "${": write ${NAME} or ${NAME:-default} (there is no escape for a literal "${")`)
			return ""
		}
		ref := rest[i+2 : i+end]
		rest = rest[i+end+1:]
		name, def, hasDef := strings.Cut(ref, ":-")
		if !isVarName(name) {
			r.fail(field, `malformed reference "${%s}": write ${NAME} or ${NAME:-default} with NAME of letters, digits and '_'`, ref)
			ok = false
			continue
		}
		if hasDef && strings.Contains(def, "${") {
			// References do not nest: the first "}" ends this one, so the
			// rest of the inner reference would reach the upstream literally.
			r.fail(field, `default of ${%s} contains "${": references do not nest; write a literal default`, name)
			ok = false
			continue
		}
		v, set := r.lookup(name)
		switch {
		case set && (v != "" || !hasDef):
			r.secrets[v] = true
			secret = secret || len(v) >= minScrubLen
			b.WriteString(v)
		case hasDef:
			b.WriteString(def)
		default:
			r.fail(field, "variable ${%s} is not set", name)
			ok = false
		}
	}
	if !ok {
		return ""
	}
	if secret && !onlyReferences(tmpl) {
		r.composed[b.String()] = true
	}
	return b.String()
}

// onlyReferences reports whether tmpl is one or more ${...} references with
// no literal text between them.
func onlyReferences(tmpl string) bool {
	if tmpl == "" {
		return false
	}
	for tmpl != "" {
		if !strings.HasPrefix(tmpl, "${") {
			return false
		}
		end := strings.IndexByte(tmpl, '}')
		if end < 0 {
			return false
		}
		tmpl = tmpl[end+1:]
	}
	return true
}

// Redacted returns the document as written, safe to print: templates
// instead of values, and env and header values that hold literal text
// replaced by Redaction.
func (r *Resolved) Redacted() Document {
	d := Document{Version: r.Version, Separator: r.Separator}
	for _, s := range r.Servers {
		d.Servers = append(d.Servers, s.Template.redacted())
	}
	return d
}

// Redacted returns the server as written with literal env and header values
// replaced by Redaction.
func (s Server) redacted() Server {
	out := s
	out.Args = slices.Clone(s.Args)
	out.Env = redactMap(s.Env)
	out.Headers = redactMap(s.Headers)
	out.OAuth = s.OAuth.redacted()
	return out
}

func redactMap(m map[string]string) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		if onlyReferences(v) {
			out[k] = v
		} else {
			out[k] = Redaction
		}
	}
	return out
}

// Scrub replaces every value this server took from a variable with
// Redaction, in each form toolprof's output may carry it (as is,
// JSON-escaped, Go-quoted, URL-escaped), and the resolved URL holding one
// with the URL as written, so messages from a transport or an upstream can
// be logged.
func (s *ResolvedServer) Scrub(msg string) string {
	if s.scrub == nil {
		return msg
	}
	return s.scrub.Replace(msg)
}

// Echoes reports whether text holds, in a form Scrub finds, a value of at
// least 8 bytes this server took from a variable: what a server repeated
// of its configuration, unlike a short value (DEBUG=true) that text
// holds by itself.
func (s *ResolvedServer) Echoes(text string) bool {
	return s.echo != nil && s.echo.Replace(text) != text
}

// String, GoString, MarshalJSON and LogValue show the redacted template, so
// a ResolvedServer printed, encoded or logged by mistake leaks nothing.
func (s ResolvedServer) String() string {
	b, _ := json.Marshal(s.Template.redacted())
	return string(b)
}

// GoString is String, for %#v.
func (s ResolvedServer) GoString() string { return s.String() }

// MarshalJSON encodes the redacted template.
func (s ResolvedServer) MarshalJSON() ([]byte, error) { return json.Marshal(s.Template.redacted()) }

// LogValue logs the redacted template.
func (s ResolvedServer) LogValue() slog.Value { return slog.StringValue(s.String()) }

// String shows the redacted document.
func (r Resolved) String() string {
	b, _ := json.Marshal(r.Redacted())
	return string(b)
}

// GoString is String, for %#v.
func (r Resolved) GoString() string { return r.String() }

// MarshalJSON encodes the redacted document.
func (r Resolved) MarshalJSON() ([]byte, error) { return json.Marshal(r.Redacted()) }

// LogValue logs the redacted document.
func (r Resolved) LogValue() slog.Value { return slog.StringValue(r.String()) }
