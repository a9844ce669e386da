package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"pgregory.net/rapid"

	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// searchCatalog: files and mail tools with descriptions, one destructive.
func searchCatalog() []*mcp.Tool {
	yes := true
	obj := func(props ...string) map[string]any {
		p := map[string]any{}
		for _, n := range props {
			p[n] = map[string]any{"type": "string"}
		}
		return map[string]any{"type": "object", "properties": p}
	}
	return []*mcp.Tool{
		{Name: "read_file", Description: "Read a file's contents.", InputSchema: obj("path"), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "list_dir", Description: "List the files of a directory.", InputSchema: obj("path"), Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true}},
		{Name: "write_file", Title: "Write a file", Description: "Write text to a file.", InputSchema: obj("path", "text"), OutputSchema: obj("written")},
		{Name: "delete_file", Description: "Delete a file for good.", InputSchema: obj("path"), Annotations: &mcp.ToolAnnotations{DestructiveHint: &yes}},
		{Name: "send_mail", Description: "Send an email message.", InputSchema: obj("to", "body")},
	}
}

const searchGenerated = `version = 1
default = "searchy"

[[profile]]
name = "searchy"
tools = ["read_file"]
search = true

[[profile]]
name = "ceiling"
tools = ["read_file", "list_dir", "write_file"]

[[profile]]
name = "demanding"
tools = ["read_file"]
search = true

[[profile]]
name = "mailless"
tools = ["read_file"]
search = true
searchable = ["*_dir", "*_file"]

[search]
sessions = 10

[[search.tool]]
name = "send_mail"
weight = 0.2

[[search.profile]]
name = "demanding"
sessions = 3

[[search.profile.tool]]
name = "write_file"
weight = 1.0
`

func searchGateway(t *testing.T, opts Options) (*Gateway, *recordingFakeUpstream) {
	t.Helper()
	up := &recordingFakeUpstream{tools: searchCatalog()}
	opts.Upstream = up
	opts.Profiles = writeProfiles(t, up.tools, searchGenerated, "version = 1\n")
	return newGateway(t, opts), up
}

func findNames(t *testing.T, cs *mcp.ClientSession, args map[string]any) []string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.FindToolsName, Arguments: args})
	if err != nil || res.IsError {
		t.Fatalf("find_tools %v: %v %+v", args, err, res)
	}
	var body struct {
		Tools []map[string]json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &body); err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, d := range body.Tools {
		// What a model needs to call the tool, and nothing more: no
		// title, effect _meta, annotations or output schema.
		if keys := slices.Sorted(maps.Keys(d)); !slices.Equal(keys, []string{"description", "inputSchema", "name"}) {
			t.Fatalf("find_tools returned a definition with keys %v, want description, inputSchema, name", keys)
		}
		var name string
		if err := json.Unmarshal(d["name"], &name); err != nil {
			t.Fatal(err)
		}
		out = append(out, name)
	}
	return out
}

func listBytes(t *testing.T, cs *mcp.ClientSession) []byte {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := json.Marshal(res)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestFindTools(t *testing.T) {
	for _, tc := range []struct {
		name    string
		opts    Options
		profile string
		args    map[string]any
		want    []string
	}{
		{"ranked by words", Options{}, "searchy", map[string]any{"query": "write text to a file", "limit": 1}, []string{"write_file"}},
		{"listed and destructive tools are never found", Options{}, "searchy", map[string]any{"query": "file", "limit": 10}, []string{"write_file", "list_dir", "send_mail"}},
		{"priors without words", Options{}, "searchy", map[string]any{"query": ""}, []string{"send_mail"}},
		{"the profile's measured demand", Options{}, "demanding", map[string]any{"query": ""}, []string{"write_file"}},
		{"searchable narrows", Options{}, "mailless", map[string]any{"query": "send an email", "limit": 10}, []string{"list_dir", "write_file"}},
		{"ceiling bounds", Options{MaxProfile: "ceiling"}, "searchy", map[string]any{"query": "send an email", "limit": 10}, []string{"list_dir", "write_file"}},
		{"read-only bounds", Options{ReadOnly: true}, "searchy", map[string]any{"query": "email file", "limit": 10}, []string{"list_dir"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			g, _ := searchGateway(t, tc.opts)
			cs := connect(t, g, tc.profile)
			if got := findNames(t, cs, tc.args); !slices.Equal(got, tc.want) {
				t.Fatalf("find_tools %v = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

// TestFindToolsCut: over HTTP, find_tools returns the hits that score at
// least toolsearch.DefaultCut of the best one's: a clear query gets the
// tools it names and no more, hits its words cannot tell apart all come,
// up to the limit.
func TestFindToolsCut(t *testing.T) {
	g, _ := searchGateway(t, Options{})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	for _, tc := range []struct {
		name, profile string
		args          map[string]any
		want          []string
	}{
		{"a clear query gets the tool it names", "searchy", map[string]any{"query": "send an email message", "limit": 10}, []string{"send_mail"}},
		{"measured demand alone", "demanding", map[string]any{"query": "", "limit": 10}, []string{"write_file"}},
		{"ties all come", "mailless", map[string]any{"query": "", "limit": 10}, []string{"list_dir", "write_file"}},
		{"ties within the limit", "mailless", map[string]any{"query": "", "limit": 1}, []string{"list_dir"}},
		{"near the best all come", "searchy", map[string]any{"query": "file", "limit": 10}, []string{"write_file", "list_dir", "send_mail"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := httpClient(t, srv.URL+"/mcp/"+tc.profile, "cut-client", "", legacyProtocol)
			if got := findNames(t, cs, tc.args); !slices.Equal(got, tc.want) {
				t.Fatalf("find_tools %v = %v, want %v", tc.args, got, tc.want)
			}
		})
	}
}

// TestFindToolsReturnsEachToolOnce: a session holds every definition
// find_tools returned it, so a later search returns the next best ones,
// and another session starts afresh.
func TestFindToolsReturnsEachToolOnce(t *testing.T) {
	g, _ := searchGateway(t, Options{})
	cs := connect(t, g, "searchy")
	args := map[string]any{"query": "file", "limit": 2}
	for i, want := range [][]string{{"write_file", "list_dir"}, {"send_mail"}, nil} {
		if got := findNames(t, cs, args); !slices.Equal(got, want) {
			t.Fatalf("search %d: find_tools %v = %v, want %v", i+1, args, got, want)
		}
	}
	if got, want := findNames(t, connect(t, g, "searchy"), args), []string{"write_file", "list_dir"}; !slices.Equal(got, want) {
		t.Fatalf("a new session: find_tools %v = %v, want %v", args, got, want)
	}
}

// TestFindToolsAnswerIsAnswer: each find_tools answer, for random
// queries and limits in one session, is toolsearch.Answer of the served
// definitions it names, byte for byte (the text profiler evaluate prices),
// though the gateway encodes each definition once per catalog.
func TestFindToolsAnswerIsAnswer(t *testing.T) {
	tools := append(searchCatalog(), &mcp.Tool{
		Name:        "render_page",
		Description: "Render <b>a page</b> & its \u2028 \"links\".",
		InputSchema: map[string]any{"type": "object", "properties": map[string]any{
			"z<>": map[string]any{"enum": []any{1.5, 1e21, "a&b"}},
			"a":   map[string]any{"type": "string", "description": "é\ttab"},
		}},
	})
	up := &recordingFakeUpstream{tools: tools}
	g := newGateway(t, Options{Upstream: up, Profiles: writeProfiles(t, tools, searchGenerated, "version = 1\n")})
	words := []string{"file", "read", "write", "text", "send", "mail", "page", "render", "links", "delete", "directory", "render_page", "list_dir", "*"}
	rapid.Check(t, func(rt *rapid.T) {
		cs := connectRapid(rt, g, rapid.SampledFrom([]string{"searchy", "demanding", "mailless"}).Draw(rt, "profile"))
		defer cs.Close()
		for i := range rapid.IntRange(1, 5).Draw(rt, "searches") {
			query := strings.Join(rapid.SliceOfN(rapid.SampledFrom(words), 0, 4).Draw(rt, fmt.Sprint("query ", i)), " ")
			if query == toolsearch.ListQuery {
				continue
			}
			args := map[string]any{"query": query}
			if rapid.Bool().Draw(rt, fmt.Sprint("limited ", i)) {
				args["limit"] = rapid.IntRange(1, toolsearch.MaxLimit).Draw(rt, fmt.Sprint("limit ", i))
			}
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.FindToolsName, Arguments: args})
			if err != nil || res.IsError {
				rt.Fatalf("find_tools %v: %v %+v", args, err, res)
			}
			got := res.Content[0].(*mcp.TextContent).Text
			var body struct {
				Tools []struct {
					Name string `json:"name"`
				} `json:"tools"`
			}
			if err := json.Unmarshal([]byte(got), &body); err != nil {
				rt.Fatalf("find_tools %v = %s: %v", args, got, err)
			}
			var defs []toolsearch.Definition
			for _, d := range body.Tools {
				st := g.cat().served[d.Name]
				defs = append(defs, toolsearch.Definition{Name: st.Name, Description: st.Description, InputSchema: st.InputSchema})
			}
			want, err := toolsearch.Answer(defs)
			if err != nil {
				rt.Fatal(err)
			}
			if got != want {
				rt.Fatalf("find_tools %v = %s; want toolsearch.Answer's %s", args, got, want)
			}
		}
	})
}

// TestFindToolsNamesAndLookup: the query "*" answers the names of the
// searchable tools not returned before, as toolsearch.NamesAnswer writes
// them (the text profiler evaluate prices), and a query that is one of
// their names returns that tool alone; a name the session may not search
// (listed, destructive, outside searchable, the ceiling or read-only) is
// words like any other, and neither lists it.
func TestFindToolsNamesAndLookup(t *testing.T) {
	g, _ := searchGateway(t, Options{})
	list := func(cs *mcp.ClientSession) string {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.FindToolsName, Arguments: map[string]any{"query": toolsearch.ListQuery}})
		if err != nil || res.IsError {
			t.Fatalf("find_tools %q: %v %+v", toolsearch.ListQuery, err, res)
		}
		return res.Content[0].(*mcp.TextContent).Text
	}
	answer := func(names ...string) string {
		t.Helper()
		text, err := toolsearch.NamesAnswer(names)
		if err != nil {
			t.Fatal(err)
		}
		return text
	}
	cs := connect(t, g, "searchy")
	if got, want := list(cs), answer("list_dir", "send_mail", "write_file"); got != want {
		t.Fatalf("names = %s, want %s", got, want)
	}
	// Searched for by words, write_file comes with send_mail's prior.
	if got := findNames(t, connect(t, g, "searchy"), map[string]any{"query": "write file"}); len(got) < 2 {
		t.Fatalf("find_tools \"write file\" = %v, want write_file and more", got)
	}
	if got := findNames(t, cs, map[string]any{"query": "write_file"}); !slices.Equal(got, []string{"write_file"}) {
		t.Fatalf("find_tools by name = %v, want [write_file]", got)
	}
	if got, want := list(cs), answer("list_dir", "send_mail"); got != want {
		t.Fatalf("names after write_file was returned = %s, want %s", got, want)
	}
	for _, name := range []string{"delete_file", "read_file"} {
		if got := findNames(t, cs, map[string]any{"query": name, "limit": 10}); slices.Contains(got, name) {
			t.Fatalf("find_tools %q = %v: returned a tool the session may not search", name, got)
		}
	}
	for _, tc := range []struct {
		name    string
		opts    Options
		profile string
		want    string
	}{
		{"searchable narrows", Options{}, "mailless", answer("list_dir", "write_file")},
		{"ceiling bounds", Options{MaxProfile: "ceiling"}, "searchy", answer("list_dir", "write_file")},
		{"read-only bounds", Options{ReadOnly: true}, "searchy", answer("list_dir")},
	} {
		g, _ := searchGateway(t, tc.opts)
		if got := list(connect(t, g, tc.profile)); got != tc.want {
			t.Errorf("%s: names = %s, want %s", tc.name, got, tc.want)
		}
		if got := findNames(t, connect(t, g, tc.profile), map[string]any{"query": "send_mail"}); slices.Contains(got, "send_mail") {
			t.Errorf("%s: find_tools by name = %v: returned a tool beyond the bounds", tc.name, got)
		}
	}
}

func TestFindToolsInvalidArguments(t *testing.T) {
	g, _ := searchGateway(t, Options{})
	cs := connect(t, g, "searchy")
	for _, args := range []any{map[string]any{}, map[string]any{"query": 3}, map[string]any{"query": "x", "limit": 0}, map[string]any{"query": "x", "limit": 21}} {
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.FindToolsName, Arguments: args})
		if err != nil {
			t.Fatal(err)
		}
		if env, ok := envelopeFrom(res); !ok || env.Code != CodeInvalidArguments {
			t.Fatalf("find_tools %v: %+v, want invalid_arguments", args, res)
		}
	}
}

// TestCallToolGatesAndTelemetry: call_tool runs a searchable tool, refuses
// what a direct call refuses, records the real tool marked as reached by
// search, and the list stays byte-identical throughout.
func TestCallToolGatesAndTelemetry(t *testing.T) {
	rec, read := recorder(t)
	g, up := searchGateway(t, Options{Recorder: rec})
	cs := connect(t, g, "searchy")
	before := listBytes(t, cs)
	var names []string
	for _, d := range mustList(t, cs) {
		names = append(names, d)
	}
	if want := []string{toolsearch.FindToolsName, toolsearch.CallToolName, "read_file"}; !slices.Equal(names, want) {
		t.Fatalf("listed %v, want %v", names, want)
	}
	call := func(name string, args any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.CallToolName, Arguments: map[string]any{"name": name, "arguments": args}})
		if err != nil {
			t.Fatalf("call_tool %s: %v", name, err)
		}
		return res
	}
	findNames(t, cs, map[string]any{"query": "file"})
	if res := call("write_file", map[string]any{"path": "a"}); res.IsError {
		t.Fatalf("searchable write_file refused: %+v", res)
	}
	if res := call("read_file", nil); res.IsError {
		t.Fatalf("listed read_file refused through call_tool: %+v", res)
	}
	if env, ok := envelopeFrom(call("delete_file", nil)); !ok || env.Code != CodeToolNotInProfile {
		t.Fatalf("destructive delete_file through call_tool: %+v", env)
	}
	if env, ok := envelopeFrom(call("write_file", []int{1})); !ok || env.Code != CodeInvalidArguments {
		t.Fatalf("array arguments through call_tool: %+v", env)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.CallToolName, Arguments: map[string]any{"name": "no_such"}}); err == nil {
		t.Fatal("call_tool of an unknown tool succeeded")
	}
	if env, ok := envelopeFrom(must(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.CallToolName, Arguments: map[string]any{}}))); !ok || env.Code != CodeInvalidArguments {
		t.Fatalf("call_tool without name: %+v", env)
	}
	// A direct call of a searchable tool is still refused: only call_tool
	// reaches it.
	if env, ok := envelopeFrom(must(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "write_file"}))); !ok || env.Code != CodeToolNotInProfile {
		t.Fatalf("direct write_file: %+v", env)
	}
	if after := listBytes(t, cs); string(after) != string(before) {
		t.Fatalf("tools/list changed:\n%s\n%s", before, after)
	}
	if got, want := up.forwarded(), []string{"write_file", "read_file"}; !slices.Equal(got, want) {
		t.Fatalf("upstream got %v, want %v", got, want)
	}
	cs.Close()
	g.Close()
	_, calls := read()
	var marked []string
	for _, c := range calls {
		if c.Search {
			marked = append(marked, fmt.Sprintf("%s:%s", c.Tool, c.Outcome))
		}
	}
	if want := []string{"write_file:ok", "read_file:ok", "delete_file:denied", "write_file:denied", "no_such:unknown_tool"}; !slices.Equal(marked, want) {
		t.Fatalf("calls marked as search %v, want %v", marked, want)
	}
}

// TestSearchNotServedWithoutFlag: a profile without search lists neither
// tool, and calls to them are unknown tools.
func TestSearchNotServedWithoutFlag(t *testing.T) {
	g, _ := searchGateway(t, Options{})
	cs := connect(t, g, "ceiling")
	if names := mustList(t, cs); slices.Contains(names, toolsearch.FindToolsName) {
		t.Fatalf("listed %v", names)
	}
	if _, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.CallToolName, Arguments: map[string]any{"name": "read_file"}}); err == nil {
		t.Fatal("call_tool answered in a profile without search")
	}
}

func mustList(t *testing.T, cs *mcp.ClientSession) []string {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, tl := range res.Tools {
		out = append(out, tl.Name)
	}
	return out
}

func must(res *mcp.CallToolResult, err error) *mcp.CallToolResult {
	if err != nil {
		panic(err)
	}
	return res
}

// searchableByRule is searchability written out independently: offered,
// not in the profile, not destructive (no random profile allows them),
// read-only tools only under --read-only, within the ceiling.
func (c propertyCase) searchableByRule(profile, ceiling, name string) bool {
	if profile == FullProfile || ceiling != "" && !c.allowedByRule(ceiling, name) && !(ceiling == FullProfile) {
		return false
	}
	var search bool
	var listed []string
	for _, p := range c.file.Profiles {
		if p.Name == profile {
			search, listed = p.Search, p.Tools
		}
	}
	if !search || slices.Contains(listed, name) {
		return false
	}
	for _, tl := range c.tools {
		if tl.Name != name {
			continue
		}
		ro := tl.Annotations != nil && tl.Annotations.ReadOnlyHint
		destructive := !ro && tl.Annotations != nil && tl.Annotations.DestructiveHint != nil && *tl.Annotations.DestructiveHint
		return !destructive && (!c.readOnly || ro)
	}
	return false
}

// Over random catalogs, profiles (some served search), ceilings and call
// sequences mixing direct calls and call_tool, a call reaches the upstream
// exactly when the rule allows it: directly when the profile lists it,
// through call_tool when it lists it or it is searchable. call_tool never
// reaches a tool the ceiling, the destructive or the read-only rule keeps
// out.
func TestPropertyCallToolReachesNoMoreThanAllowed(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		c := drawCase(t)
		for i := range c.file.Profiles {
			c.file.Profiles[i].Search = rapid.Bool().Draw(t, c.file.Profiles[i].Name+"/search")
		}
		up := &recordingFakeUpstream{tools: c.tools}
		resolved, err := (&profiles.Set{File: c.file, Path: "random.toml"}).Resolve(c.tools)
		if err != nil {
			t.Fatalf("resolve: %v", err)
		}
		ceiling := rapid.SampledFrom(append(resolved.Names(), "")).Draw(t, "ceiling")
		g, err := New(context.Background(), Options{Upstream: up, Profiles: resolved, ReadOnly: c.readOnly, MaxProfile: ceiling})
		if err != nil {
			t.Skip("profile beyond the ceiling") // New refuses a default profile beyond it
		}
		defer g.Close()
		profile := rapid.SampledFrom(resolved.Names()).Draw(t, "session profile")
		s, err := g.Server(profile)
		if err != nil {
			t.Skip("profile beyond the ceiling")
		}
		_ = s
		cs := connectRapid(t, g, profile)
		defer cs.Close()
		before := mustListRapid(t, cs)
		checkSnap := &policy.Snapshot{Resolved: resolved, Tools: map[string]*mcp.Tool{}, Ceiling: ceiling, ReadOnly: c.readOnly, Search: policy.SearchServed(resolved)}
		for _, tool := range c.tools {
			checkSnap.Tools[tool.Name] = tool
		}
		searchOn := false
		for _, fp := range c.file.Profiles {
			if fp.Name == profile {
				searchOn = fp.Search
			}
		}
		if searchOn && checkSnap.SearchOffered(profile) {
			// find_tools' names list holds only tools call_tool runs.
			res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: toolsearch.FindToolsName, Arguments: map[string]any{"query": toolsearch.ListQuery}})
			if err != nil || res.IsError {
				t.Fatalf("find_tools %q: %v %+v", toolsearch.ListQuery, err, res)
			}
			var listed struct{ Names []string }
			if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &listed); err != nil {
				t.Fatal(err)
			}
			for _, name := range listed.Names {
				if !c.searchableByRule(profile, ceiling, name) {
					t.Fatalf("find_tools %q in profile %q under ceiling %q, read-only %v lists %q, which call_tool may not run", toolsearch.ListQuery, profile, ceiling, c.readOnly, name)
				}
			}
		}
		var want []string
		calls := rapid.SliceOfN(rapid.SampledFrom(c.names), 0, 20).Draw(t, "calls")
		for i, name := range calls {
			via := rapid.Bool().Draw(t, fmt.Sprintf("via call_tool %d", i))
			inCeiling := ceiling == "" || ceiling == FullProfile || c.allowedByRule(ceiling, name)
			direct := c.allowedByRule(profile, name) && inCeiling
			p := &mcp.CallToolParams{Name: name}
			allowed := direct
			if via {
				p = &mcp.CallToolParams{Name: toolsearch.CallToolName, Arguments: map[string]any{"name": name}}
				allowed = direct || c.searchableByRule(profile, ceiling, name)
				searchOn := false
				for _, fp := range c.file.Profiles {
					if fp.Name == profile {
						searchOn = fp.Search
					}
				}
				if !searchOn || name == "" {
					allowed = false
				}
			}
			res, err := cs.CallTool(context.Background(), p)
			ran := err == nil && !res.IsError
			if ran != allowed {
				t.Fatalf("call %q (via call_tool %v) in profile %q under ceiling %q, read-only %v: ran %v, want %v (%v %+v)", name, via, profile, ceiling, c.readOnly, ran, allowed, err, res)
			}
			// profiler check predicts what serving did.
			v := policy.CheckSession(checkSnap, "s", []policy.Call{{Tool: name, ViaSearch: via}}, profile)
			if covered := v.Status == policy.VerdictCovered; covered != ran {
				t.Fatalf("call %q (via call_tool %v) in profile %q under ceiling %q, read-only %v: ran %v, but check says %s %s", name, via, profile, ceiling, c.readOnly, ran, v.Status, v.Detail())
			}
			if allowed {
				want = append(want, name)
			}
		}
		if got := up.forwarded(); !slices.Equal(got, want) {
			t.Fatalf("upstream got %q, want %q", got, want)
		}
		if after := mustListRapid(t, cs); !slices.Equal(before, after) {
			t.Fatalf("the list changed: %v then %v", before, after)
		}
	})
}

func mustListRapid(t *rapid.T, cs *mcp.ClientSession) []string {
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(res)
	return []string{string(b)}
}

// BenchmarkFindTools500 answers find_tools over a 500-tool catalog, beside
// a tools/list of the same catalog (the baseline), through the gateway over
// an in-memory transport; compare the two in one run.
func BenchmarkFindTools500(b *testing.B) {
	var tools []*mcp.Tool
	for i := range 500 {
		tools = append(tools, &mcp.Tool{
			Name:        fmt.Sprintf("server%d__tool_%d", i%20, i),
			Description: fmt.Sprintf("Does thing %d with item %d and reports the %d result.", i%13, i%17, i%5),
			InputSchema: map[string]any{"type": "object", "properties": map[string]any{"id": map[string]any{"type": "string"}}},
		})
	}
	resolved, err := (&profiles.Set{File: &profiles.File{Version: 1, Default: "s", Profiles: []profiles.Profile{{Name: "s", Search: true}}}}).Resolve(tools)
	if err != nil {
		b.Fatal(err)
	}
	g, err := New(context.Background(), Options{Upstream: &recordingFakeUpstream{tools: tools}, Profiles: resolved})
	if err != nil {
		b.Fatal(err)
	}
	defer g.Close()
	ctx := context.Background()
	for _, bc := range []struct {
		name    string
		profile string
		run     func(cs *mcp.ClientSession) error
	}{
		{"tools_list", FullProfile, func(cs *mcp.ClientSession) error { _, err := cs.ListTools(ctx, nil); return err }},
		{"find_tools", "s", func(cs *mcp.ClientSession) error {
			_, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: toolsearch.FindToolsName, Arguments: map[string]any{"query": "report the result of thing 3 for item 4"}})
			return err
		}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			s, err := g.Server(bc.profile)
			if err != nil {
				b.Fatal(err)
			}
			st, ct := mcp.NewInMemoryTransports()
			if _, err := s.Connect(ctx, st, nil); err != nil {
				b.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil)
			if err != nil {
				b.Fatal(err)
			}
			defer func() { cs.Close() }()
			n := 0
			for b.Loop() {
				// find_tools returns a definition once per session: a new
				// session every 50 searches keeps each answer full.
				if n++; n%50 == 0 {
					b.StopTimer()
					cs.Close()
					st, ct := mcp.NewInMemoryTransports()
					if _, err := s.Connect(ctx, st, nil); err != nil {
						b.Fatal(err)
					}
					if cs, err = mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, ct, nil); err != nil {
						b.Fatal(err)
					}
					b.StartTimer()
				}
				if err := bc.run(cs); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
