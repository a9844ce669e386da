package opcontext

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// readSchema is a read tool that takes project_id but no agent_id.
var readSchema = map[string]any{
	"type":       "object",
	"properties": map[string]any{"project_id": map[string]any{"type": "string"}, "query": map[string]any{"type": "string"}},
}

// sourceWith returns an active Source over the standard sidecar in mode.
func sourceWith(t testing.TB, mode Enforce) *Source {
	t.Helper()
	s := sourceAt(t, writeFile(t, t.TempDir(), "oc.toml", fmt.Sprintf(sidecar, mode)), nil)
	if !s.Active() {
		t.Fatalf("sidecar in mode %s is not active: %v", mode, s.Findings())
	}
	return s
}

type outcome int

const (
	pass outcome = iota
	warn
	reject
)

// Registry modes off/warn/reject x read/write x known/unknown/"": reads
// never reject, writes reject only in reject mode, "" is always valid, and
// the arguments are never rewritten.
func TestRegistryModes(t *testing.T) {
	values := []struct {
		name, value string
		known       bool
	}{
		{"known", "acme-app", true},
		{"unknown", "nope-app", false},
		{"empty", "", true},
	}
	for _, mode := range []Enforce{EnforceOff, EnforceWarn, EnforceReject} {
		s := sourceWith(t, mode)
		for _, writes := range []bool{false, true} {
			for _, v := range values {
				want := pass
				switch {
				case v.known || mode == EnforceOff:
				case mode == EnforceReject && writes:
					want = reject
				default:
					want = warn
				}
				name := fmt.Sprintf("%s/writes=%v/%s", mode, writes, v.name)
				t.Run(name, func(t *testing.T) {
					args := json.RawMessage(fmt.Sprintf(`{"query": "q",  "project_id": %q}`, v.value))
					d, err := s.Check(context.Background(), CallInfo{Tool: "t", Writes: writes, InputSchema: readSchema, Arguments: args})
					if err != nil {
						t.Fatal(err)
					}
					if string(d.Arguments) != string(args) {
						t.Fatalf("arguments rewritten: %s", d.Arguments)
					}
					if d.Resolved {
						t.Fatal("explicit value reported as resolved")
					}
					got := pass
					if len(d.Warnings) > 0 {
						got = warn
					}
					if d.Rejected() {
						got = reject
					}
					if got != want {
						t.Fatalf("outcome %d, want %d: %+v", got, want, d)
					}
					msg := d.Reject + strings.Join(d.Warnings, "")
					if want != pass {
						for _, w := range []string{`"nope-app"`, "rev 2026-07-16.1", `valid project_id values: "", "acme-app"`} {
							if !strings.Contains(msg, w) {
								t.Errorf("message %q lacks %q", msg, w)
							}
						}
					}
				})
			}
		}
	}
}

// Calls the registry does not concern pass untouched whatever the mode.
func TestCheckPassesUntouched(t *testing.T) {
	s := sourceWith(t, EnforceReject)
	noArg := map[string]any{"type": "object", "properties": map[string]any{"query": map[string]any{}}}
	tests := []struct {
		name   string
		schema any
		args   string
	}{
		{"tool without the argument", noArg, `{"project_id":"nope-app"}`},
		{"nil schema", nil, `{"project_id":"nope-app"}`},
		{"omitted", writeSchema, `{"content":"x"}`},
		{"null", writeSchema, `{"project_id":null}`},
		{"no arguments", writeSchema, ``},
		{"null arguments", writeSchema, `null`},
		{"raw schema without the argument", json.RawMessage(`{"properties":{"q":{}}}`), `{"project_id":"@auto"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, err := s.Check(context.Background(), CallInfo{Writes: true, InputSchema: tt.schema, Arguments: json.RawMessage(tt.args), Client: "claude-code"})
			if err != nil {
				t.Fatal(err)
			}
			if string(d.Arguments) != tt.args || d.Rejected() || d.Resolved || len(d.Warnings) > 0 {
				t.Fatalf("decision %+v", d)
			}
		})
	}
}

func TestCheckSchemaForms(t *testing.T) {
	s := sourceWith(t, EnforceReject)
	type props struct {
		Properties map[string]any `json:"properties"`
	}
	for _, schema := range []any{
		writeSchema,
		json.RawMessage(`{"type":"object","properties":{"project_id":{"type":"string"}}}`),
		props{Properties: map[string]any{"project_id": map[string]any{}}},
	} {
		d, err := s.Check(context.Background(), CallInfo{Writes: true, InputSchema: schema, Arguments: json.RawMessage(`{"project_id":"nope"}`)})
		if err != nil || !d.Rejected() {
			t.Errorf("schema %T: %+v %v", schema, d, err)
		}
	}
}

func TestCheckBadArguments(t *testing.T) {
	s := sourceWith(t, EnforceWarn)
	for _, args := range []string{`[1]`, `{"project_id":`, `"x"`, `{"a":1} {}`} {
		if _, err := s.Check(context.Background(), CallInfo{Tool: "store", InputSchema: writeSchema, Arguments: json.RawMessage(args)}); err == nil ||
			!strings.Contains(err.Error(), "store") {
			t.Errorf("arguments %s: err %v", args, err)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Check(ctx, CallInfo{InputSchema: writeSchema, Arguments: json.RawMessage(`{}`)}); err == nil {
		t.Error("cancelled context accepted")
	}
	// A non-string value is an explicit value outside the registry.
	for _, mode := range []Enforce{EnforceWarn, EnforceReject} {
		d, err := sourceWith(t, mode).Check(context.Background(), CallInfo{Writes: true, InputSchema: writeSchema, Arguments: json.RawMessage(`{"project_id":5}`)})
		if err != nil || string(d.Arguments) != `{"project_id":5}` {
			t.Fatalf("%s: %+v %v", mode, d, err)
		}
		if got := d.Reject + strings.Join(d.Warnings, ""); !strings.Contains(got, "must be a string, got 5") ||
			(mode == EnforceReject) != d.Rejected() {
			t.Errorf("%s: %+v", mode, d)
		}
	}
}

// A key the upstream may read as the registry's argument, spelled in
// another case or repeated, is judged like an unregistered id whatever the
// values: encoding/json matches keys case-insensitively and keeps the last
// duplicate, other parsers the first, so the checked value may not be the
// one used. The arguments are never rewritten.
func TestAmbiguousArgumentKey(t *testing.T) {
	tests := []struct {
		name, args string
		want       []string // in the message, besides the registry's valid values
	}{
		{"case variant", `{"Project_ID":"nope-app"}`,
			[]string{`argument "Project_ID" is not "project_id"`, `spell it "project_id"`}},
		{"case variant of a registered id", `{"PROJECT_ID":"acme-app"}`,
			[]string{`argument "PROJECT_ID" is not "project_id"`}},
		{"duplicate, unregistered first", `{"project_id":"nope-app","project_id":"acme-app"}`,
			[]string{`project_id is given 2 times in the arguments (as "project_id")`, `pass "project_id" exactly once`}},
		{"duplicate, same value", `{"project_id":"acme-app","project_id":"acme-app"}`,
			[]string{`project_id is given 2 times`}},
		{"duplicate spelled with an escape", `{"project_id":"nope-app","project\u005fid":"acme-app"}`,
			[]string{`project_id is given 2 times`}},
		{"exact and case variant", `{"query":"q","project_id":"acme-app","Project_Id":"nope-app","PROJECT_ID":"x"}`,
			[]string{`project_id is given 3 times in the arguments (as "PROJECT_ID", "Project_Id", "project_id")`}},
		{"case variant beside @auto", `{"project_id":"@auto","Project_ID":"nope-app"}`,
			[]string{`project_id is given 2 times`}},
	}
	for _, mode := range []Enforce{EnforceOff, EnforceWarn, EnforceReject} {
		s := sourceWith(t, mode)
		for _, writes := range []bool{false, true} {
			for _, tt := range tests {
				want := warn
				switch {
				case mode == EnforceOff:
					want = pass
				case mode == EnforceReject && writes:
					want = reject
				}
				t.Run(fmt.Sprintf("%s/writes=%v/%s", mode, writes, tt.name), func(t *testing.T) {
					args := json.RawMessage(tt.args)
					d, err := s.Check(context.Background(), CallInfo{Tool: "t", Writes: writes, InputSchema: readSchema, Arguments: args, Client: "claude-code"})
					if err != nil {
						t.Fatal(err)
					}
					got := pass
					if len(d.Warnings) > 0 {
						got = warn
					}
					if d.Rejected() {
						got = reject
					}
					if got != want {
						t.Fatalf("outcome %d, want %d: %+v", got, want, d)
					}
					if want == reject && string(d.Arguments) != tt.args {
						t.Fatalf("rejected call's arguments rewritten: %s", d.Arguments)
					}
					msg := d.Reject + strings.Join(d.Warnings, "")
					if want == pass {
						if strings.Contains(msg, "project_id is given") || strings.Contains(msg, "is not \"project_id\"") {
							t.Fatalf("mode off judged the key: %q", msg)
						}
						return
					}
					for _, w := range append(tt.want, "rev 2026-07-16.1", `valid project_id values: "", "acme-app"`) {
						if !strings.Contains(msg, w) {
							t.Errorf("message %q lacks %q", msg, w)
						}
					}
				})
			}
		}
	}
	// A configured argument is matched the way encoding/json folds it: the
	// Kelvin sign is a k.
	p := writeFile(t, t.TempDir(), "oc.toml", "version = 1\n[registry]\nargument = \"workspace\"\nproject_ids = [\"w1\"]\nenforce = \"reject\"\n")
	schema := map[string]any{"properties": map[string]any{"workspace": map[string]any{}}}
	d, err := sourceAt(t, p, nil).Check(context.Background(), CallInfo{Writes: true, InputSchema: schema, Arguments: json.RawMessage("{\"wor\u212aspace\":\"w2\"}")})
	if err != nil || !d.Rejected() || !strings.Contains(d.Reject, "argument \"wor\u212aspace\" is not \"workspace\"") {
		t.Fatalf("Kelvin-sign variant: %+v %v", d, err)
	}
}

// @auto resolves through [defaults]; the upstream receives the resolved
// value, every other byte unchanged, and resolved_project_id is echoed.
func TestAuto(t *testing.T) {
	tests := []struct {
		name     string
		mode     Enforce
		writes   bool
		schema   map[string]any
		args     string
		client   string
		wantArgs string // "" = rejected
		resolved string
		warning  []string
	}{
		{name: "mapped by client name", mode: EnforceReject, writes: true, schema: readSchema,
			args: `{ "query" : "a  b",   "project_id" : "@auto" }`, client: "claude-code",
			wantArgs: `{ "query" : "a  b",   "project_id" : "acme-app" }`, resolved: "acme-app"},
		{name: "mapped by agent_id argument, not client name", mode: EnforceReject, writes: true, schema: writeSchema,
			args: `{"agent_id":"agent.indexer","project_id":"@auto","content":"x"}`, client: "claude-code",
			wantArgs: `{"agent_id":"agent.indexer","project_id":"","content":"x"}`, resolved: ""},
		{name: "agent_id not in the schema: client name", mode: EnforceReject, writes: true, schema: readSchema,
			args: `{"agent_id":"agent.indexer","project_id":"@auto"}`, client: "claude-code",
			wantArgs: `{"agent_id":"agent.indexer","project_id":"acme-app"}`, resolved: "acme-app"},
		{name: "empty agent_id falls back to client name", mode: EnforceWarn, writes: true, schema: writeSchema,
			args: `{"agent_id":"","project_id":"@auto"}`, client: "claude-code",
			wantArgs: `{"agent_id":"","project_id":"acme-app"}`, resolved: "acme-app"},
		{name: "unmapped warn write", mode: EnforceWarn, writes: true, schema: writeSchema,
			args: `{"project_id":"@auto"}`, client: "cursor",
			wantArgs: `{"project_id":""}`, resolved: "", warning: []string{`agent "cursor" (client name)`, "no [defaults] entry", `"agent.indexer"`}},
		{name: "unmapped reject read warns", mode: EnforceReject, writes: false, schema: writeSchema,
			args: `{"project_id":"@auto","agent_id":"agent.new"}`, client: "claude-code",
			wantArgs: `{"project_id":"","agent_id":"agent.new"}`, resolved: "", warning: []string{`agent "agent.new" (agent_id argument)`}},
		{name: "unmapped reject write rejects", mode: EnforceReject, writes: true, schema: writeSchema,
			args: `{"project_id":"@auto"}`, client: "cursor", resolved: "", warning: []string{`agent "cursor"`, "rev 2026-07-16.1"}},
		{name: "unmapped off still resolves and warns", mode: EnforceOff, writes: true, schema: writeSchema,
			args: `{"project_id":"@auto"}`, client: "cursor",
			wantArgs: `{"project_id":""}`, resolved: "", warning: []string{"no [defaults] entry"}},
		{name: "mapped to an unregistered id, warn", mode: EnforceWarn, writes: true, schema: readSchema,
			args: `{"project_id":"@auto"}`, client: "agent.stray",
			wantArgs: `{"project_id":"unlisted-app"}`, resolved: "unlisted-app", warning: []string{`resolved to "unlisted-app"`}},
		{name: "mapped to an unregistered id, reject write", mode: EnforceReject, writes: true, schema: readSchema,
			args: `{"project_id":"@auto"}`, client: "agent.stray", resolved: "unlisted-app", warning: []string{`resolved to "unlisted-app"`}},
		{name: "mapped to an unregistered id, reject read", mode: EnforceReject, writes: false, schema: readSchema,
			args: `{"project_id":"@auto"}`, client: "agent.stray",
			wantArgs: `{"project_id":"unlisted-app"}`, resolved: "unlisted-app", warning: []string{`resolved to "unlisted-app"`}},
		{name: "duplicate key: warned, every @auto replaced", mode: EnforceWarn, writes: true, schema: readSchema,
			args: `{"project_id":"@auto","project_id":"@auto"}`, client: "claude-code",
			wantArgs: `{"project_id":"acme-app","project_id":"acme-app"}`, resolved: "acme-app", warning: []string{"project_id is given 2 times"}},
		{name: "nested @auto is not the argument", mode: EnforceWarn, writes: true, schema: writeSchema,
			args: `{"content":{"project_id":"@auto"},"project_id":"@auto"}`, client: "claude-code",
			wantArgs: `{"content":{"project_id":"@auto"},"project_id":"acme-app"}`, resolved: "acme-app"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := sourceWith(t, tt.mode)
			d, err := s.Check(context.Background(), CallInfo{Tool: "store", Writes: tt.writes, InputSchema: tt.schema,
				Arguments: json.RawMessage(tt.args), Client: tt.client})
			if err != nil {
				t.Fatal(err)
			}
			if !d.Resolved || d.ResolvedProjectID != tt.resolved {
				t.Fatalf("resolved %v %q, want %q", d.Resolved, d.ResolvedProjectID, tt.resolved)
			}
			if tt.wantArgs == "" {
				if !d.Rejected() {
					t.Fatalf("not rejected: %+v", d)
				}
			} else if d.Rejected() || string(d.Arguments) != tt.wantArgs {
				t.Fatalf("arguments %s (reject %q), want %s", d.Arguments, d.Reject, tt.wantArgs)
			}
			msg := d.Reject + strings.Join(d.Warnings, "")
			if len(tt.warning) == 0 && msg != "" {
				t.Fatalf("unexpected message %q", msg)
			}
			for _, w := range tt.warning {
				if !strings.Contains(msg, w) {
					t.Errorf("message %q lacks %q", msg, w)
				}
			}
			meta := d.Meta()
			if meta[MetaResolved] != tt.resolved || meta[MetaRevision] != "2026-07-16.1" {
				t.Errorf("meta %v", meta)
			}
		})
	}
}

// Explicit values are never rewritten, whatever the defaults say.
func TestExplicitNeverRewritten(t *testing.T) {
	s := sourceWith(t, EnforceWarn)
	for _, v := range []string{"acme-app", "", "nope-app", "@AUTO", " @auto"} {
		args := json.RawMessage(fmt.Sprintf(`{"project_id":%q,"agent_id":"claude-code"}`, v))
		d, err := s.Check(context.Background(), CallInfo{Writes: true, InputSchema: writeSchema, Arguments: args, Client: "claude-code"})
		if err != nil || string(d.Arguments) != string(args) || d.Resolved {
			t.Errorf("%q: %+v %v", v, d, err)
		}
	}
}

// The registry's argument name is configurable.
func TestConfiguredArgument(t *testing.T) {
	p := writeFile(t, t.TempDir(), "oc.toml", `version = 1
[registry]
argument = "workspace"
project_ids = ["w1"]
enforce = "reject"
[defaults]
bot = "w1"
`)
	s := sourceAt(t, p, nil)
	schema := map[string]any{"properties": map[string]any{"workspace": map[string]any{}, "project_id": map[string]any{}}}
	d, _ := s.Check(context.Background(), CallInfo{Writes: true, InputSchema: schema, Arguments: json.RawMessage(`{"workspace":"w2","project_id":"zzz"}`)})
	if !d.Rejected() || !strings.Contains(d.Reject, `workspace "w2"`) || !strings.Contains(d.Reject, "rev unlabelled") {
		t.Fatalf("%+v", d)
	}
	// "" is valid even when the registry does not list it.
	d, _ = s.Check(context.Background(), CallInfo{Writes: true, InputSchema: schema, Arguments: json.RawMessage(`{"workspace":""}`)})
	if d.Rejected() || len(d.Warnings) > 0 {
		t.Fatalf("empty value refused: %+v", d)
	}
	d, _ = s.Check(context.Background(), CallInfo{Writes: true, InputSchema: schema, Arguments: json.RawMessage(`{"workspace":"@auto","project_id":"@auto"}`), Client: "bot"})
	if d.Rejected() || string(d.Arguments) != `{"workspace":"w1","project_id":"@auto"}` {
		t.Fatalf("%+v", d)
	}
}

// Without project_ids there is no registry: nothing to validate, but @auto
// still resolves.
func TestNoRegistry(t *testing.T) {
	s := sourceAt(t, writeFile(t, t.TempDir(), "oc.toml", "version = 1\n[registry]\nenforce = \"reject\"\n[defaults]\nbot = \"p\"\n"), nil)
	d, _ := s.Check(context.Background(), CallInfo{Writes: true, InputSchema: writeSchema, Arguments: json.RawMessage(`{"project_id":"anything"}`)})
	if d.Rejected() || len(d.Warnings) > 0 {
		t.Fatalf("%+v", d)
	}
	d, _ = s.Check(context.Background(), CallInfo{Writes: true, InputSchema: writeSchema, Arguments: json.RawMessage(`{"project_id":"@auto"}`), Client: "bot"})
	if string(d.Arguments) != `{"project_id":"p"}` || len(d.Warnings) > 0 {
		t.Fatalf("%+v", d)
	}
}

func TestDecisionResults(t *testing.T) {
	d := Decision{Revision: "r1", Warnings: []string{"w1", "w2"}, Resolved: true, ResolvedProjectID: "acme"}
	res := &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream"}}, Meta: mcp.Meta{"kept": 1}}
	d.Annotate(res)
	if len(res.Content) != 2 || res.Content[1].(*mcp.TextContent).Text != "operating context warning: w1; w2" {
		t.Fatalf("content %v", res.Content)
	}
	if res.Meta["kept"] != 1 || res.Meta[MetaWarning] != "w1; w2" || res.Meta[MetaResolved] != "acme" || res.Meta[MetaRevision] != "r1" {
		t.Fatalf("meta %v", res.Meta)
	}

	echo := Decision{Revision: "r1", Resolved: true, ResolvedProjectID: ""}
	res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream"}}}
	echo.Annotate(res)
	if len(res.Content) != 1 || res.Meta[MetaResolved] != "" {
		t.Fatalf("echo only: %+v", res)
	}
	if _, has := res.Meta[MetaWarning]; has {
		t.Fatal("warning key without warnings")
	}

	res = &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "upstream"}}}
	Decision{Revision: "r1"}.Annotate(res)
	if res.Meta != nil || len(res.Content) != 1 {
		t.Fatalf("empty decision changed the result: %+v", res)
	}
	Decision{Warnings: []string{"x"}}.Annotate(nil) // must not panic

	rej := Decision{Revision: "r1", Reject: "rejected by operating context: no", Resolved: true, ResolvedProjectID: "x"}.RejectResult()
	if !rej.IsError || rej.Content[0].(*mcp.TextContent).Text != "rejected by operating context: no" || rej.Meta[MetaResolved] != "x" {
		t.Fatalf("%+v", rej)
	}
}
