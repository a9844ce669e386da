package gateway

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/profiles"
)

func ptr[T any](v T) *T { return &v }

// annotated is a recorded catalog with every combination of the three hints
// that decide an effect (each absent, false or true; readOnlyHint has no
// absent form distinct from false), plus a tool with no annotations at all.
func annotated() (*catalog.Catalog, map[string]profiles.Effect) {
	cat := &catalog.Catalog{}
	want := map[string]profiles.Effect{}
	add := func(name string, a *mcp.ToolAnnotations, e profiles.Effect) {
		cat.Tools = append(cat.Tools, &mcp.Tool{Name: name, InputSchema: map[string]any{"type": "object"}, Annotations: a,
			Meta: mcp.Meta{"upstream/own": "kept"}})
		want[name] = e
	}
	add("bare", nil, profiles.Effect{Kind: profiles.KindMutate})
	hints := []struct {
		label string
		v     *bool
	}{{"absent", nil}, {"false", ptr(false)}, {"true", ptr(true)}}
	for _, ro := range []bool{false, true} {
		for _, d := range hints {
			for _, ow := range hints {
				name := "ro_" + map[bool]string{false: "false", true: "true"}[ro] + "__destr_" + d.label + "__open_" + ow.label
				e := profiles.Effect{Kind: profiles.KindMutate, External: ow.v != nil && *ow.v}
				switch {
				case ro:
					e.Kind = profiles.KindRead
				case d.v != nil && *d.v:
					e.Kind = profiles.KindDestructive
				}
				add(name, &mcp.ToolAnnotations{ReadOnlyHint: ro, DestructiveHint: d.v, OpenWorldHint: ow.v}, e)
			}
		}
	}
	return cat, want
}

// listedMeta lists every tool of profile over a real client session and
// returns each tool's _meta by name.
func listedMeta(t *testing.T, g *Gateway, profile string) map[string]map[string]any {
	t.Helper()
	res, err := connect(t, g, profile).ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]map[string]any{}
	for _, tool := range res.Tools {
		got[tool.Name] = tool.Meta
	}
	return got
}

func metaEffect(m map[string]any) profiles.Effect {
	e, _ := ParseEffectMeta(m)
	return e
}

// Each annotation combination reaches the client as its kind and external
// flag in _meta, next to the upstream's own _meta keys.
func TestEffectInMeta(t *testing.T) {
	cat, want := annotated()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat)})
	got := listedMeta(t, g, FullProfile)
	if len(got) != len(want) {
		t.Fatalf("listed %d tools, want %d", len(got), len(want))
	}
	for name, e := range want {
		t.Run(name, func(t *testing.T) {
			m := got[name]
			// One key, its value the kind, "+external" only when set.
			wantValue := string(e.Kind)
			if e.External {
				wantValue += "+external"
			}
			if m[MetaEffect] != wantValue {
				t.Errorf("%s = %#v, want %q", MetaEffect, m[MetaEffect], wantValue)
			}
			for k := range m {
				if strings.HasPrefix(k, "toolprof/") && k != MetaEffect {
					t.Errorf("extra _meta key %s = %v: the effect is one key", k, m[k])
				}
			}
			if g := metaEffect(m); g != e {
				t.Errorf("effect %+v, want %+v", g, e)
			}
			if m["upstream/own"] != "kept" {
				t.Errorf("upstream's own _meta lost: %v", m)
			}
		})
	}
	// The upstream's tools are not modified (they are shared).
	for _, tool := range cat.Tools {
		if _, ok := tool.Meta[MetaEffect]; ok {
			t.Fatalf("catalog tool %s modified", tool.Name)
		}
	}
}

// The _meta value reads back as the effect it was written from; anything
// that is not a kind with an optional "+external" is not an effect.
func TestParseEffectMeta(t *testing.T) {
	tests := []struct {
		value  any
		want   profiles.Effect
		wantOK bool
	}{
		{"read", profiles.Effect{Kind: profiles.KindRead}, true},
		{"evaluate", profiles.Effect{Kind: profiles.KindEvaluate}, true},
		{"mutate+external", profiles.Effect{Kind: profiles.KindMutate, External: true}, true},
		{"destructive+external", profiles.Effect{Kind: profiles.KindDestructive, External: true}, true},
		{"", profiles.Effect{}, false},
		{nil, profiles.Effect{}, false},
		{true, profiles.Effect{}, false},
		{"write", profiles.Effect{Kind: "write"}, false},
		{"+external", profiles.Effect{External: true}, false},
		{"read+externals", profiles.Effect{Kind: "read+externals"}, false},
		{"read+external+external", profiles.Effect{Kind: "read+external", External: true}, false},
	}
	for _, tt := range tests {
		m := mcp.Meta{}
		if tt.value != nil {
			m[MetaEffect] = tt.value
		}
		got, ok := ParseEffectMeta(m)
		if ok != tt.wantOK || (ok && got != tt.want) {
			t.Errorf("ParseEffectMeta(%#v) = %+v, %v; want %+v, %v", tt.value, got, ok, tt.want, tt.wantOK)
		}
		if ok && EffectMeta(got) != tt.value {
			t.Errorf("EffectMeta(%+v) = %q, want %q", got, EffectMeta(got), tt.value)
		}
	}
}

// writeProfiles writes a generated file and a profiles.toml beside it, and
// resolves them against tools.
func writeProfiles(t *testing.T, tools []*mcp.Tool, generated, policy string) *profiles.Resolved {
	t.Helper()
	dir := t.TempDir()
	path := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(path, []byte(generated), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "profiles.toml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	return loadResolved(t, path, tools)
}

// effectTools: what the annotations say, before profiles.toml corrects it.
func effectTools() *catalog.Catalog {
	obj := map[string]any{"type": "object"}
	return &catalog.Catalog{Tools: []*mcp.Tool{
		{Name: "lookup", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "query", InputSchema: obj}, // mutate; profiles.toml: evaluate
		{Name: "save", InputSchema: obj},  // mutate
		{Name: "wipe", InputSchema: obj},  // mutate; profiles.toml: destructive
		{Name: "purge", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}}, // destructive
		{Name: "fetch", InputSchema: obj, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: ptr(true)}},
	}}
}

const effectGenerated = `version = 1
default = "work"

[[profile]]
name = "work"
tools = ["fetch", "lookup", "query", "save"]
`

const effectPolicy = `version = 1
destructive = ["wipe"]

[[effect]]
tool = "query"
kind = "evaluate"

[[effect]]
tool = "fetch"
external = false

[[effect]]
tool = "save"
kind = "read"
external = true

[[profile]]
name = "review"
pin = ["lookup", "query", "save"]
read_only = true
`

// Overrides in profiles.toml win over annotations, in _meta as everywhere.
func TestEffectOverridesWin(t *testing.T) {
	cat := effectTools()
	r := writeProfiles(t, cat.Tools, effectGenerated, effectPolicy)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: r})
	got := listedMeta(t, g, FullProfile)
	want := map[string]profiles.Effect{
		"lookup": {Kind: profiles.KindRead},
		"query":  {Kind: profiles.KindEvaluate},              // annotations: mutate
		"save":   {Kind: profiles.KindRead, External: true},  // annotations: mutate, not external
		"wipe":   {Kind: profiles.KindDestructive},           // annotations: mutate
		"purge":  {Kind: profiles.KindDestructive},           // annotations alone
		"fetch":  {Kind: profiles.KindRead, External: false}, // annotations: external
	}
	for name, e := range want {
		if g := metaEffect(got[name]); g != e {
			t.Errorf("%s: effect %+v, want %+v", name, g, e)
		}
	}
}

// callEnvelope calls tool with args over cs and returns the envelope, or
// the zero Envelope when the call succeeded.
func callEnvelope(t *testing.T, cs *mcp.ClientSession, tool string, args any) Envelope {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("call %s: %v", tool, err)
	}
	if !res.IsError {
		return Envelope{}
	}
	return envelopeOf(t, res)
}

func listedNames(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range res.Tools {
		names = append(names, tool.Name)
	}
	return names
}

// Read-only serving lists only read and evaluate tools and refuses the
// others on call with read_only, whether it comes from Options.ReadOnly
// (--read-only) or from a read_only profile. A read or evaluate tool is
// forwarded (the recorded catalog then answers upstream_unavailable, which
// shows the call got past the gate). The end-to-end test in cmd/server
// shows the upstream receives nothing.
func TestReadOnly(t *testing.T) {
	cat := effectTools()
	r := writeProfiles(t, cat.Tools, effectGenerated, effectPolicy)
	tests := []struct {
		name     string
		readOnly bool
		profile  string
		listed   []string
		why      string // in the refusal message
	}{
		{"option, full", true, FullProfile, []string{"fetch", "lookup", "query", "save"}, "--read-only"},
		{"option, work", true, "work", []string{"fetch", "lookup", "query", "save"}, "--read-only"},
		{"read_only profile", false, "review", []string{"lookup", "query", "save"}, `profile "review" is read_only`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: r, ReadOnly: tt.readOnly})
			cs := connect(t, g, tt.profile)
			if got := listedNames(t, cs); !slices.Equal(got, tt.listed) {
				t.Errorf("listed %v, want %v", got, tt.listed)
			}
			for _, tool := range []string{"wipe", "purge"} { // destructive
				env := callEnvelope(t, cs, tool, nil)
				if env.Code != CodeReadOnly || env.Category != CategoryPolicy || env.Retryable ||
					!strings.Contains(env.Message, `"`+tool+`" is destructive`) || !strings.Contains(env.Message, tt.why) {
					t.Errorf("%s: %+v, want read_only naming destructive and %q", tool, env, tt.why)
				}
			}
			if tt.profile != "review" {
				env := callEnvelope(t, cs, "save", nil)
				if env.Code != CodeUpstreamUnavailable {
					t.Errorf("save (overridden to read): %+v, want it forwarded", env)
				}
			}
			for _, tool := range []string{"lookup", "query"} { // read, evaluate
				if env := callEnvelope(t, cs, tool, nil); env.Code != CodeUpstreamUnavailable {
					t.Errorf("%s: %+v, want it forwarded", tool, env)
				}
			}
		})
	}
	// Not read-only: a mutating tool in the profile is forwarded.
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: r})
	if env := callEnvelope(t, connect(t, g, FullProfile), "wipe", nil); env.Code != CodeUpstreamUnavailable {
		t.Errorf("wipe under full without read-only: %+v, want it forwarded", env)
	}
	if h := g.Health(); h.ReadOnly {
		t.Error("health says read-only")
	}
	ro := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: r, ReadOnly: true})
	if h := ro.Health(); !h.ReadOnly {
		t.Error("health does not say read-only")
	}
}

// A mutating tool refused read_only under --read-only: the mutate arm (the
// table above covers destructive).
func TestReadOnlyRefusesMutate(t *testing.T) {
	cat := effectTools()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), ReadOnly: true})
	env := callEnvelope(t, connect(t, g, FullProfile), "save", nil)
	if env.Code != CodeReadOnly || !strings.Contains(env.Message, `"save" is mutate`) {
		t.Errorf("save: %+v, want read_only naming mutate", env)
	}
}

// Arguments that are not a JSON object never reach the upstream; absent and
// null arguments are no arguments.
func TestInvalidArguments(t *testing.T) {
	cat := effectTools()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat)})
	cs := connect(t, g, FullProfile)
	tests := []struct {
		args any
		code string
		kind string
	}{
		{json.RawMessage(`[1,2]`), CodeInvalidArguments, "an array"},
		{json.RawMessage(`"x"`), CodeInvalidArguments, "a string"},
		{json.RawMessage(`3`), CodeInvalidArguments, "a number"},
		{json.RawMessage(`true`), CodeInvalidArguments, "a boolean"},
		{json.RawMessage(`null`), CodeUpstreamUnavailable, ""},
		{nil, CodeUpstreamUnavailable, ""},
		{map[string]any{"a": 1}, CodeUpstreamUnavailable, ""},
	}
	for _, tt := range tests {
		env := callEnvelope(t, cs, "save", tt.args)
		if env.Code != tt.code || (tt.kind != "" && (env.Category != CategoryValidation || !strings.Contains(env.Message, "got "+tt.kind))) {
			t.Errorf("arguments %v: %+v, want %s (%s)", tt.args, env, tt.code, tt.kind)
		}
	}
}

// documentedCodes extracts the codes of the table in docs/errors.md and in
// the Envelope doc comment.
func documentedCodes(t *testing.T) (doc, comment []string) {
	t.Helper()
	b, err := os.ReadFile("../docs/errors.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile("(?m)^\\| `([a-z_]+)` \\|").FindAllStringSubmatch(string(b), -1) {
		doc = append(doc, m[1])
	}
	src, err := os.ReadFile("envelope.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range regexp.MustCompile(`(?m)^//\t([a-z_]+) +(policy|upstream|validation|capacity) `).FindAllStringSubmatch(string(src), -1) {
		comment = append(comment, m[1])
	}
	return doc, comment
}

// Every documented code is produced by the gateway over a real client
// session, and the documentation (docs/errors.md, the Envelope comment)
// lists exactly the codes the gateway has.
func TestEveryDocumentedCodeIsProduced(t *testing.T) {
	doc, comment := documentedCodes(t)
	if !slices.Equal(doc, Codes()) || !slices.Equal(comment, Codes()) {
		t.Fatalf("docs/errors.md lists %v, envelope.go %v, Codes() %v: keep them equal", doc, comment, Codes())
	}
	cat := effectTools()
	r := writeProfiles(t, cat.Tools, effectGenerated, effectPolicy)
	oc, _ := contextSidecar(t, `version = 1
context_revision = "codes-1"
[registry]
argument = "project_id"
project_ids = ["acme-app"]
enforce = "reject"
`)
	withProject := append(slices.Clone(cat.Tools), &mcp.Tool{Name: "store", InputSchema: map[string]any{
		"type": "object", "properties": map[string]any{"project_id": map[string]any{"type": "string"}}}})
	ctxCat := &catalog.Catalog{Tools: withProject}
	// busy: another session's call holds the only place first.
	held := make(chan struct{}, 1)
	holds := map[string]chan struct{}{CodeBusy: held}
	tests := []struct {
		code    string
		opts    Options
		profile string
		tool    string
		args    any
	}{
		{CodeToolNotInProfile, Options{Upstream: NewCatalogUpstream(cat), Profiles: r}, "work", "purge", nil},
		{CodeReadOnly, Options{Upstream: NewCatalogUpstream(cat), Profiles: r, ReadOnly: true}, "work", "purge", nil},
		{CodeOperatingContextRejected, Options{Upstream: NewCatalogUpstream(ctxCat), OperatingContext: oc}, FullProfile, "store", map[string]any{"project_id": "nope"}},
		{CodeGroupNotAllowed, groupCeilingOptions(t), "grouped", "enable_tools", map[string]any{"group": "media"}},
		{CodeInvalidArguments, Options{Upstream: NewCatalogUpstream(cat)}, FullProfile, "save", json.RawMessage(`[]`)},
		{CodeUpstreamUnavailable, Options{Upstream: NewCatalogUpstream(cat)}, FullProfile, "save", nil},
		{CodeUpstreamUnauthorized, Options{Upstream: &unauthorizedFakeUpstream{tools: cat.Tools}}, FullProfile, "save", nil},
		{CodeUpstreamTimeout, Options{Upstream: &hangingFakeUpstream{tools: cat.Tools}, CallTimeout: 20 * time.Millisecond}, FullProfile, "save", nil},
		{CodeResultTooLarge, Options{Upstream: &tooLargeFakeUpstream{tools: cat.Tools}}, FullProfile, "save", nil},
		{CodeBusy, Options{Upstream: &hangingFakeUpstream{tools: cat.Tools, started: held}, MaxCalls: 1}, FullProfile, "save", nil},
	}
	var produced []string
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			g := newGateway(t, tt.opts)
			if hold := holds[tt.code]; hold != nil {
				other := connect(t, g, tt.profile)
				ctx, cancel := context.WithCancel(context.Background())
				t.Cleanup(cancel) // before other's cleanup, which waits for the call
				go other.CallTool(ctx, &mcp.CallToolParams{Name: tt.tool})
				<-hold
			}
			env := callEnvelope(t, connect(t, g, tt.profile), tt.tool, tt.args)
			if env.Code != tt.code {
				t.Fatalf("got %+v, want code %s", env, tt.code)
			}
			if env.Message == "" || env.Category == "" || env.SuggestedActions == nil {
				t.Errorf("incomplete envelope %+v", env)
			}
			produced = append(produced, env.Code)
		})
	}
	if !slices.Equal(produced, Codes()) {
		t.Errorf("produced %v, want every code %v", produced, Codes())
	}
}

// evaluate is only ever set by the operator: an upstream whose own _meta
// claims toolprof/effect = evaluate (or read) is listed with the kind its
// annotations give, and --read-only refuses it as that kind.
func TestUpstreamCannotClaimEffect(t *testing.T) {
	cat := &catalog.Catalog{Tools: []*mcp.Tool{
		{Name: "claims_evaluate", InputSchema: map[string]any{"type": "object"}, Meta: mcp.Meta{MetaEffect: "evaluate"}},
		{Name: "claims_read", InputSchema: map[string]any{"type": "object"}, Meta: mcp.Meta{MetaEffect: "read"},
			Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true)}},
	}}
	want := map[string]profiles.Effect{
		"claims_evaluate": {Kind: profiles.KindMutate},
		"claims_read":     {Kind: profiles.KindDestructive},
	}
	got := listedMeta(t, newGateway(t, Options{Upstream: NewCatalogUpstream(cat)}), FullProfile)
	for name, e := range want {
		if g := metaEffect(got[name]); g != e {
			t.Errorf("%s listed as %+v, want %+v from its annotations", name, g, e)
		}
	}
	cs := connect(t, newGateway(t, Options{Upstream: NewCatalogUpstream(cat), ReadOnly: true}), FullProfile)
	if names := listedNames(t, cs); len(names) != 0 {
		t.Errorf("--read-only lists %v, want none", names)
	}
	for name, e := range want {
		if env := callEnvelope(t, cs, name, nil); env.Code != CodeReadOnly || !strings.Contains(env.Message, string(e.Kind)) {
			t.Errorf("%s under --read-only: %+v, want read_only naming %s", name, env, e.Kind)
		}
	}
}
