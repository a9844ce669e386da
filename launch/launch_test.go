package launch

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/golden"
)

// writeFiles creates files (path relative to a temp dir -> content) and
// returns the dir.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const packJSON = `{
  "mcpServers": {
    "files": {"command": "files-server", "args": ["--root", "/data"], "env": {"A": "1"}},
    "memory": {"command": "memory-server"}
  }
}`

func TestLoadMerge(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		".mcp.json": packJSON,
		"personas/adder.mcp.json": `{"mcpServers": {
			"search": {"type": "http", "url": "https://search.example/mcp"}}}`,
		"personas/replacer.mcp.json": `{"mcpServers": {
			"files": {"command": "other-files", "cwd": "sub"}}}`,
		"personas/notes.txt": "not a persona",
	})
	pack := filepath.Join(dir, ".mcp.json")
	tests := []struct {
		name    string
		persona string
		want    []Server // compared on Name, Transport, Command, Args, Env, Cwd, URL
		wantErr string
	}{
		{name: "pack only", want: []Server{
			{Name: "files", Transport: Stdio, Command: "files-server", Args: []string{"--root", "/data"}, Env: map[string]string{"A": "1"}},
			{Name: "memory", Transport: Stdio, Command: "memory-server"},
		}},
		{name: "persona adds", persona: "adder", want: []Server{
			{Name: "files", Transport: Stdio, Command: "files-server", Args: []string{"--root", "/data"}, Env: map[string]string{"A": "1"}},
			{Name: "memory", Transport: Stdio, Command: "memory-server"},
			{Name: "search", Transport: StreamableHTTP, URL: "https://search.example/mcp"},
		}},
		{name: "persona replaces entirely", persona: "replacer", want: []Server{
			// No args or env survive from the pack's "files": no partial merge.
			{Name: "files", Transport: Stdio, Command: "other-files", Cwd: "sub"},
			{Name: "memory", Transport: Stdio, Command: "memory-server"},
		}},
		{name: "unknown persona", persona: "nobody", wantErr: `unknown persona "nobody": known personas in ` + filepath.Join(dir, "personas") + `: adder, replacer`},
		{name: "persona name with path", persona: "../x", wantErr: `unknown persona "../x"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc, err := Load(pack, tt.persona)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if doc.Version != 1 {
				t.Errorf("version = %d, want 1", doc.Version)
			}
			got := make([]Server, len(doc.Servers))
			for i, s := range doc.Servers {
				got[i] = Server{Name: s.Name, Transport: s.Transport, Command: s.Command, Args: s.Args, Env: s.Env, Cwd: s.Cwd, URL: s.URL}
			}
			gj, _ := json.Marshal(got)
			wj, _ := json.Marshal(tt.want)
			if string(gj) != string(wj) {
				t.Errorf("servers =\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

func TestUnknownPersonaWithoutPersonaDir(t *testing.T) {
	dir := writeFiles(t, map[string]string{".mcp.json": packJSON})
	_, err := Load(filepath.Join(dir, ".mcp.json"), "x")
	if err == nil || !strings.Contains(err.Error(), "holds no *.mcp.json files") {
		t.Fatalf("err = %v", err)
	}
}

func TestTransports(t *testing.T) {
	tests := []struct {
		entry string
		want  Transport
	}{
		{`{"command": "x"}`, Stdio},
		{`{"type": "stdio", "command": "x"}`, Stdio},
		{`{"type": "http", "url": "http://h/"}`, StreamableHTTP},
		{`{"type": "streamable_http", "url": "http://h/"}`, StreamableHTTP},
		{`{"type": "streamableHttp", "url": "http://h/"}`, StreamableHTTP},
		{`{"url": "http://h/"}`, StreamableHTTP},
	}
	for _, tt := range tests {
		servers, err := Decode("f.json", []byte(`{"mcpServers": {"s": `+tt.entry+`}}`))
		if err != nil {
			t.Errorf("%s: %v", tt.entry, err)
			continue
		}
		if servers[0].Transport != tt.want {
			t.Errorf("%s: transport %q, want %q", tt.entry, servers[0].Transport, tt.want)
		}
	}
}

func TestDecodeStrict(t *testing.T) {
	tests := []struct {
		name, data string
		want       DecodeError // Msg compared by prefix
	}{
		{"sse type", "{\"mcpServers\": {\n \"old\": {\"type\": \"sse\", \"url\": \"http://h/sse\"}}}",
			DecodeError{Line: 2, Server: "old", Key: "type", Msg: "SSE is unsupported, migrate to streamable_http"}},
		{"unknown transport", `{"mcpServers": {"s": {"type": "websocket", "url": "ws://h"}}}`,
			DecodeError{Line: 1, Server: "s", Key: "type", Msg: `unknown transport "websocket"; valid: stdio, http, streamable_http, streamableHttp`}},
		{"unknown server key", "{\"mcpServers\": {\n  \"s\": {\n    \"command\": \"x\",\n    \"timeout\": 5\n  }\n}}",
			DecodeError{Line: 4, Server: "s", Key: "timeout", Msg: "unknown key; valid keys"}},
		{"unknown top key", "{\n\"servers\": {}}",
			DecodeError{Line: 2, Key: "servers", Msg: "unknown key"}},
		{"separator not a separator", "{\"mcpServers\": {},\n \"separator\": \"a\"}",
			DecodeError{Line: 2, Key: "separator", Msg: `want a string of one to three of "_", "-" and "."`}},
		{"separator too long", `{"separator": "____", "mcpServers": {}}`,
			DecodeError{Line: 1, Key: "separator", Msg: `want a string of one to three`}},
		{"separator empty", `{"separator": "", "mcpServers": {}}`,
			DecodeError{Line: 1, Key: "separator", Msg: `want a string of one to three`}},
		{"separator not a string", `{"separator": 1, "mcpServers": {}}`,
			DecodeError{Line: 1, Key: "separator", Msg: `want a string of one to three`}},
		{"missing mcpServers", `{}`,
			DecodeError{Line: 1, Key: "mcpServers", Msg: "missing key"}},
		{"args wrong type", "{\"mcpServers\": {\"s\": {\"command\": \"x\",\n \"args\": \"--flag\"}}}",
			DecodeError{Line: 2, Server: "s", Key: "args", Msg: "want an array of strings, got a string"}},
		{"args element wrong type", `{"mcpServers": {"s": {"command": "x", "args": ["a", 1]}}}`,
			DecodeError{Line: 1, Server: "s", Key: "args", Msg: "want an array of strings, got an array"}},
		{"env wrong type", `{"mcpServers": {"s": {"command": "x", "env": {"A": 1}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "env", Msg: "want an object of strings, got an object"}},
		{"command null", `{"mcpServers": {"s": {"command": null}}}`,
			DecodeError{Line: 1, Server: "s", Key: "command", Msg: "want a string, got null"}},
		{"headers wrong type", `{"mcpServers": {"s": {"url": "http://h", "headers": ["a"]}}}`,
			DecodeError{Line: 1, Server: "s", Key: "headers", Msg: "want an object of strings, got an array"}},
		{"missing command", "{\"mcpServers\": {\n\"s\": {\"args\": [\"a\"]}}}",
			DecodeError{Line: 2, Server: "s", Key: "command", Msg: "missing or empty"}},
		{"missing url", `{"mcpServers": {"s": {"type": "http"}}}`,
			DecodeError{Line: 1, Server: "s", Key: "url", Msg: "missing or empty"}},
		{"command with url", `{"mcpServers": {"s": {"command": "x", "url": "http://h"}}}`,
			DecodeError{Line: 1, Server: "s", Key: "url", Msg: "not valid for a stdio server"}},
		{"http with env", `{"mcpServers": {"s": {"type": "http", "url": "http://h", "env": {}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "env", Msg: "not valid for a streamable_http server"}},
		{"server not object", `{"mcpServers": {"s": "x"}}`,
			DecodeError{Line: 1, Server: "s", Msg: "a server entry must be a JSON object"}},
		{"duplicate server", "{\"mcpServers\": {\"s\": {\"command\": \"x\"},\n \"s\": {\"command\": \"y\"}}}",
			DecodeError{Line: 2, Key: "s", Msg: "duplicate key"}},
		{"duplicate env variable", "{\"mcpServers\": {\"s\": {\"command\": \"x\", \"env\": {\"A\": \"1\",\n \"A\": \"2\"}}}}",
			DecodeError{Line: 2, Server: "s", Key: "env.A", Msg: "duplicate key"}},
		{"duplicate header", "{\"mcpServers\": {\"s\": {\"url\": \"http://h\", \"headers\": {\"X-A\": \"1\",\n \"X-A\": \"2\"}}}}",
			DecodeError{Line: 2, Server: "s", Key: "headers.X-A", Msg: "duplicate key"}},
		{"headers differing in case", "{\"mcpServers\": {\"s\": {\"url\": \"http://h\", \"headers\": {\"Authorization\": \"${A}\",\n \"authorization\": \"${B}\"}}}}",
			DecodeError{Line: 2, Server: "s", Key: "headers.authorization", Msg: `the same header as "Authorization"`}},
		{"duplicate oauth key", "{\"mcpServers\": {\"s\": {\"url\": \"http://h\", \"oauth\": {\"client_id\": \"a\",\n \"client_id\": \"b\"}}}}",
			DecodeError{Line: 2, Server: "s", Key: "oauth.client_id", Msg: "duplicate key"}},
		{"args null element", `{"mcpServers": {"s": {"command": "x", "args": ["a", null]}}}`,
			DecodeError{Line: 1, Server: "s", Key: "args", Msg: "want an array of strings, got an array"}},
		{"env null value", `{"mcpServers": {"s": {"command": "x", "env": {"A": null}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "env", Msg: "want an object of strings, got an object"}},
		{"variable in env name", `{"mcpServers": {"s": {"command": "x", "env": {"${A}": "1"}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "env", Msg: `invalid variable name "${A}"`}},
		{"variable in header name", `{"mcpServers": {"s": {"url": "http://h", "headers": {"X-${A}": "1"}}}}`,
			DecodeError{Line: 1, Server: "s", Key: "headers", Msg: `invalid header name "X-${A}"`}},
		{"mcpServers not object", "{\"mcpServers\": []}",
			DecodeError{Line: 1, Msg: `"mcpServers" must be a JSON object`}},
		{"bad server name", `{"mcpServers": {"a b": {"command": "x"}}}`,
			DecodeError{Line: 1, Server: "a b", Msg: "invalid server name"}},
		{"syntax error", "{\"mcpServers\": {\n\"s\": {\"command\": \"x\",}}}",
			DecodeError{Line: 2, Msg: "invalid JSON"}},
		{"truncated", `{"mcpServers": {"s": {"command": "x"`,
			DecodeError{Msg: "unexpected end of JSON"}},
		{"trailing data", `{"mcpServers": {}} {}`,
			DecodeError{Line: 1, Msg: "unexpected data after the file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Decode("pack.json", []byte(tt.data))
			var de *DecodeError
			if !errors.As(err, &de) {
				t.Fatalf("err = %v, want a DecodeError", err)
			}
			if de.File != "pack.json" || (tt.want.Line != 0 && de.Line != tt.want.Line) || de.Server != tt.want.Server ||
				de.Key != tt.want.Key || !strings.HasPrefix(de.Msg, tt.want.Msg) {
				t.Errorf("err = %+v\nwant %+v", *de, tt.want)
			}
			if !strings.HasPrefix(err.Error(), "pack.json:") {
				t.Errorf("message %q does not start with the file", err)
			}
		})
	}
}

func lookupFrom(m map[string]string) Lookup {
	return func(k string) (string, bool) { v, ok := m[k]; return v, ok }
}

func TestResolve(t *testing.T) {
	const secret = "s3cret-token-value"
	doc := Merge([]Server{{
		Name: "api", Transport: StreamableHTTP, Source: "p.json:3",
		URL:     "https://${HOST}/mcp?key=${KEY}",
		Headers: map[string]string{"Authorization": "Bearer ${TOKEN}", "X-Token": "${TOKEN}", "X-Plain": "literal-credential"},
	}, {
		Name: "cli", Transport: Stdio, Source: "p.json:9", dir: "/pack",
		Command: "${BIN:-server}", Args: []string{"--token=${TOKEN}", "$HOME"}, Cwd: "work",
		Env: map[string]string{"API_TOKEN": "${TOKEN}", "MODE": "${MODE:-fast}"},
	}}, nil)
	env := map[string]string{"HOST": "h.example", "KEY": "k3y-value", "TOKEN": secret, "MODE": ""}
	r, err := doc.Resolve(lookupFrom(env))
	if err != nil {
		t.Fatal(err)
	}
	api, cli := r.Servers[0], r.Servers[1]
	if api.URL != "https://h.example/mcp?key=k3y-value" || api.Headers["Authorization"] != "Bearer "+secret || api.Headers["X-Plain"] != "literal-credential" {
		t.Errorf("api resolved wrong: %q %q", api.URL, api.Headers)
	}
	if cli.Command != "server" || cli.Args[0] != "--token="+secret || cli.Args[1] != "$HOME" ||
		cli.Env["API_TOKEN"] != secret || cli.Env["MODE"] != "fast" || cli.Cwd != filepath.Join("/pack", "work") {
		t.Errorf("cli resolved wrong: %q %q %q %q", cli.Command, cli.Args, cli.Env, cli.Cwd)
	}

	// The redacted form never carries a value that came from a variable,
	// nor a literal env or header value.
	red := r.Redacted()
	out, err := json.Marshal(red)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{secret, "k3y-value", "h.example", "literal-credential"} {
		if strings.Contains(string(out), v) {
			t.Errorf("redacted document contains %q: %s", v, out)
		}
	}
	var buf strings.Builder
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(red); err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "redacted.golden.json"), []byte(buf.String()))

	// Printing, encoding or logging the resolved forms by mistake shows the
	// redacted template, not the values.
	var logBuf strings.Builder
	slog.New(slog.NewTextHandler(&logBuf, nil)).Info("x", "server", cli, "doc", r, "ptr", &cli)
	encoded, _ := json.Marshal(struct {
		S ResolvedServer
		R *Resolved
	}{cli, r})
	for _, shown := range []string{
		fmt.Sprintf("%v %+v %#v %s %v", cli, cli, cli, cli, &cli),
		fmt.Sprintf("%v %+v %#v", *r, *r, *r),
		string(encoded), logBuf.String(),
	} {
		if strings.Contains(shown, secret) || strings.Contains(shown, "k3y-value") {
			t.Errorf("resolved values shown: %s", shown)
		}
		if !strings.Contains(shown, "${TOKEN}") {
			t.Errorf("template not shown: %s", shown)
		}
	}

	msg := "dial https://h.example/mcp?key=k3y-value: Bearer " + secret + " refused"
	if got := api.Scrub(msg); strings.Contains(got, secret) || strings.Contains(got, "k3y-value") {
		t.Errorf("Scrub left a secret: %q", got)
	}
}

func TestResolveErrors(t *testing.T) {
	tests := []struct {
		name   string
		server Server
		want   []string
	}{
		{"unset in env", Server{Name: "db", Source: "p.json:4", Command: "x", Env: map[string]string{"PASSWORD": "${DB_PASSWORD}"}},
			[]string{`server "db" (p.json:4): env PASSWORD: variable ${DB_PASSWORD} is not set`}},
		{"unset in header and url", Server{Name: "api", Source: "p.json:7", URL: "https://${HOST}/", Headers: map[string]string{"Authorization": "Bearer ${TOKEN}"}},
			[]string{`server "api" (p.json:7): url: variable ${HOST} is not set`, `headers Authorization: variable ${TOKEN} is not set`}},
		{"unset in args", Server{Name: "c", Command: "x", Args: []string{"a", "${MISSING}"}}, []string{`args[1]: variable ${MISSING} is not set`}},
		{"unterminated", Server{Name: "c", Command: "x", Args: []string{"${OOPS"}}, []string{`args[0]: unterminated "${"`}},
		{"malformed", Server{Name: "c", Command: "x", Args: []string{"${1X}"}}, []string{`args[0]: malformed reference "${1X}"`}},
		{"escape is not special", Server{Name: "c", Command: "x", Args: []string{"$${MISSING}"}}, []string{`variable ${MISSING} is not set`}},
		// The default would be "${B" followed by the "}" after the reference:
		// a literal "${B}" handed to the upstream.
		{"reference in a default", Server{Name: "c", Command: "x", Args: []string{"${A:-${B}}"}}, []string{`args[0]: default of ${A} contains "${"`}},
		{"reference in a default, outer set", Server{Name: "c", Command: "x", Env: map[string]string{"K": "${SET:-x${B}}"}}, []string{`env K: default of ${SET} contains "${"`}},
	}
	const secret = "present-secret-value"
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			doc := Merge([]Server{tt.server}, nil)
			_, err := doc.Resolve(lookupFrom(map[string]string{"SET": secret}))
			if err == nil {
				t.Fatal("Resolve succeeded; want an error")
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("err = %v\nwant containing %q", err, w)
				}
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error carries a value: %v", err)
			}
		})
	}
}

func TestUnresolvedNeverReachesValues(t *testing.T) {
	// A resolved value is taken as the user set it: it is not expanded again,
	// and a variable whose value contains ${ is not an unresolved reference.
	doc := Merge([]Server{{Name: "c", Command: "x", Args: []string{"${A}"}}}, nil)
	r, err := doc.Resolve(lookupFrom(map[string]string{"A": "${B}"}))
	if err != nil {
		t.Fatal(err)
	}
	if r.Servers[0].Args[0] != "${B}" {
		t.Errorf("arg = %q", r.Servers[0].Args[0])
	}
}

func TestRedactMap(t *testing.T) {
	for v, want := range map[string]bool{"${A}": true, "${A}${B}": true, "${A:-x}": true, "Bearer ${A}": false, "plain": false, "${A}x": false, "": false} {
		if got := onlyReferences(v); got != want {
			t.Errorf("onlyReferences(%q) = %v, want %v", v, got, want)
		}
	}
}

func TestNames(t *testing.T) {
	for name, want := range map[string][3]bool{ // server, persona, variable
		"files":   {true, true, true},
		"a.b-c_d": {true, true, false},
		".hidden": {true, false, false},
		"..":      {true, false, false},
		"a/b":     {false, false, false},
		"a b":     {false, false, false},
		"":        {false, false, false},
		"_X1":     {true, true, true},
		"1X":      {true, true, false},
		"é":       {false, false, false},
	} {
		got := [3]bool{isServerName(name), isPersonaName(name), isVarName(name)}
		if got != want {
			t.Errorf("%q: server/persona/variable = %v, want %v", name, got, want)
		}
	}
}

// TestSeparator: the optional top-level "separator" of the pack reaches the
// document and the resolved document (and so the printed one); a persona's
// wins over the pack's; absent in both, it stays "" (the default).
func TestSeparator(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"plain/.mcp.json":                  `{"mcpServers": {"a": {"command": "a"}}}`,
		"plain/personas/dot.mcp.json":      `{"separator": ".", "mcpServers": {}}`,
		"set/.mcp.json":                    `{"mcpServers": {"a": {"command": "a"}}, "separator": "-"}`,
		"set/personas/same.mcp.json":       `{"mcpServers": {"b": {"command": "b"}}}`,
		"set/personas/underscore.mcp.json": `{"separator": "_", "mcpServers": {}}`,
	})
	for _, tt := range []struct{ pack, persona, want string }{
		{"plain", "", ""},
		{"plain", "dot", "."},
		{"set", "", "-"},
		{"set", "same", "-"},
		{"set", "underscore", "_"},
	} {
		doc, err := Load(filepath.Join(dir, tt.pack, ".mcp.json"), tt.persona)
		if err != nil {
			t.Fatal(err)
		}
		r, err := doc.Resolve(func(string) (string, bool) { return "", false })
		if err != nil {
			t.Fatal(err)
		}
		if doc.Separator != tt.want || r.Separator != tt.want || r.Redacted().Separator != tt.want {
			t.Errorf("%s persona %q: separator %q / resolved %q / printed %q, want %q", tt.pack, tt.persona, doc.Separator, r.Separator, r.Redacted().Separator, tt.want)
		}
	}
}

// TestInvalidNamesReportedInOrder: with several invalid env or header
// names, the error names the first by sort order on every run, not
// whichever map iteration meets first.
func TestInvalidNamesReportedInOrder(t *testing.T) {
	for _, tt := range []struct{ doc, want string }{
		{`{"mcpServers": {"s": {"command": "x", "env": {"z=": "1", "b=": "2", "m=": "3", "d=": "4"}}}}`, `"b="`},
		{`{"mcpServers": {"s": {"type": "http", "url": "http://h", "headers": {"z:": "1", "b:": "2", "m:": "3", "d:": "4"}}}}`, `"b:"`},
	} {
		for range 20 {
			_, err := Decode("pack.json", []byte(tt.doc))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode: %v, want the error to name %s", err, tt.want)
			}
		}
	}
}

// TestScrubEveryEncoding: a value with a quote, a backslash, an HTML
// character and URL-escaped characters is removed in every form a message
// may carry it, by Scrub and by NewScrubber, and a message quoting the
// resolved URL shows the template.
func TestScrubEveryEncoding(t *testing.T) {
	const secret = `pa"ss\wo rd<&>%41é`
	doc := Document{Servers: []Server{{Name: "r", Transport: StreamableHTTP, URL: "http://h.example/mcp/${S}?k=${S}"}}}
	r, err := doc.Resolve(func(string) (string, bool) { return secret, true })
	if err != nil {
		t.Fatal(err)
	}
	srv := r.Servers[0]
	u, _ := url.Parse(srv.URL)
	jsonHTML, _ := json.Marshal(secret)
	var plain strings.Builder
	enc := json.NewEncoder(&plain)
	enc.SetEscapeHTML(false)
	enc.Encode(secret)
	decoded, _ := url.PathUnescape(secret)
	tests := map[string]string{
		"raw":               secret,
		"JSON":              string(jsonHTML),
		"JSON without HTML": plain.String(),
		"Go-quoted":         strconv.Quote(secret),
		"Go-quoted ASCII":   strconv.QuoteToASCII(secret),
		"quoted twice":      strconv.Quote(strconv.Quote(secret)),
		"path-escaped":      url.PathEscape(secret),
		"query-escaped":     url.QueryEscape(secret),
		"decoded":           decoded,
		"decoded, escaped":  url.PathEscape(decoded),
	}
	learned := NewScrubber(secret, "abc") // a value learned later: an OAuth token
	for name, form := range tests {
		got := srv.Scrub("refused " + form + " here")
		if strings.Contains(got, strings.Trim(form, "\"\n")) || !strings.Contains(got, Redaction) {
			t.Errorf("%s: Scrub(%q) = %q", name, form, got)
		}
		got = learned("refused " + form + " abc here")
		if strings.Contains(got, strings.Trim(form, "\"\n")) || !strings.Contains(got, Redaction) || !strings.HasSuffix(got, " abc here") {
			t.Errorf("%s: NewScrubber(...)(%q) = %q, want it redacted and a value under 4 bytes left", name, form, got)
		}
	}
	for _, printed := range []string{srv.URL, u.String(), fmt.Sprintf("Post %q: refused", u.String())} {
		got := srv.Scrub(printed)
		if !strings.Contains(got, "http://h.example/mcp/${S}?k=${S}") || strings.Contains(got, "pa") && strings.Contains(got, "ss") && strings.Contains(got, "wo") {
			t.Errorf("Scrub(%q) = %q, want the URL as written", printed, got)
		}
	}
}

// TestURLThatDoesNotParseOnceResolved: a value that makes the URL
// unparseable fails resolution naming the template, never the value.
func TestURLThatDoesNotParseOnceResolved(t *testing.T) {
	const secret = "bad%zzsecret"
	doc := Document{Servers: []Server{{Name: "r", Transport: StreamableHTTP, URL: "http://h.example/${S}"}}}
	_, err := doc.Resolve(func(string) (string, bool) { return secret, true })
	if err == nil || !strings.Contains(err.Error(), `url: "http://h.example/${S}" does not parse`) || strings.Contains(err.Error(), "zz") {
		t.Errorf("err = %v, want the template named and no piece of the value", err)
	}
}
