package gateway

// Tool search. A profile served with search (profiles.toml or the
// generated file: search = true) lists two extra tools, find_tools and
// call_tool, and its list never changes during a session: no
// notifications/tools/list_changed, no busted prompt cache.
//
// find_tools({query, limit?}) returns up to limit (default 11, at most 20)
// definitions, ranked by package toolsearch over the searchable tools with
// the generated file's priors (the session's profile's measured demand
// among them) and the tools this session already called, and cut where a
// hit scores below toolsearch.DefaultCut of the best one's
// (toolsearch.Cut): a clear query gets the few tools it asks for, an
// ambiguous one up to limit. A query that is a searchable tool's name
// returns that tool alone, and the query "*" (toolsearch.ListQuery) the
// names of the searchable tools not returned before, sorted: a model
// whose search missed reads them and asks for the one it needs by name,
// instead of the session needing the whole catalog.
// Each is what a model needs to call the tool (toolsearch.Definition:
// name, description, input schema) and is returned once per session: the
// answer is conversation the model pays for in every later turn, and it
// has the earlier answers already.
// The searchable tools of a session are those its profile does not list
// and whose deny, destructive and read-only rules allow them
// (profiles.Resolved.Searchable), within the operator's ceiling
// (--max-profile) and, under --read-only, read or evaluate tools only.
//
// call_tool({name, arguments}) runs one tool through the same gates as a
// direct call (argument shape, read-only, ceiling, profile or searchable,
// operating context) and is recorded as a call of that tool, marked
// Search. It never lets a session call a tool outside its profile that is
// not searchable, so it widens nothing.
//
// When an upstream offers a tool named find_tools or call_tool, the
// profile is served without search: the upstream's tool is never shadowed.

import (
	"encoding/json"
	"fmt"
	"slices"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/toolsearch"
)

// sessionSearch is what search knows of one session: the tools it called,
// in first-call order, for co-usage, and those find_tools returned.
type sessionSearch struct {
	mu       sync.Mutex
	called   []string
	returned map[string]bool
}

// returnedBefore reports whether find_tools returned tool to this session.
func (ss *sessionSearch) returnedBefore(tool string) bool {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return ss.returned[tool]
}

func (ss *sessionSearch) noteReturned(tools []string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if ss.returned == nil {
		ss.returned = map[string]bool{}
	}
	for _, t := range tools {
		ss.returned[t] = true
	}
}

func (ss *sessionSearch) note(tool string) {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	if !slices.Contains(ss.called, tool) {
		ss.called = append(ss.called, tool)
	}
}

func (ss *sessionSearch) history() []string {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	return slices.Clone(ss.called)
}

// searchState is what a catalog holds for search: the index over every
// offered tool, each one's find_tools definition encoded once (a search
// then joins bytes instead of encoding schemas), and the two tools'
// definitions.
type searchState struct {
	index      *toolsearch.Index
	defs       map[string]encodedDefinition
	find, call *mcp.Tool
}

// encodedDefinition is a tool's toolsearch.Encode, or why it has none: a
// search that returns the tool fails as encoding its answer would.
type encodedDefinition struct {
	raw json.RawMessage
	err error
}

// newSearchState indexes every offered tool; nil when no profile serves
// search.
func newSearchState(list []*mcp.Tool, r *profiles.Resolved) (*searchState, error) {
	if !policy.SearchServed(r) {
		return nil, nil
	}
	docs := make([]toolsearch.Doc, 0, len(list))
	defs := make(map[string]encodedDefinition, len(list))
	for _, t := range list {
		docs = append(docs, toolsearch.Doc{Name: t.Name, Description: t.Description, Params: toolsearch.ParamNames(t.InputSchema)})
		raw, err := toolsearch.Encode(toolsearch.Definition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
		defs[t.Name] = encodedDefinition{raw: raw, err: err}
	}
	st := &searchState{index: toolsearch.New(docs, r.SearchPriors.Priors(), toolsearch.Weights{}), defs: defs}
	for _, d := range []struct {
		def string
		to  **mcp.Tool
	}{{toolsearch.FindToolsDefinition, &st.find}, {toolsearch.CallToolDefinition, &st.call}} {
		var t mcp.Tool
		if err := json.Unmarshal([]byte(d.def), &t); err != nil {
			return nil, fmt.Errorf("gateway: search tool definition: %w", err)
		}
		*d.to = &t
	}
	return st, nil
}

// searchOffered reports whether sessions of profile are served search.
func (g *Gateway) searchOffered(profile string) bool {
	return g.policySnapshot(g.cat()).SearchOffered(profile)
}

// withSearchTools puts find_tools and call_tool before names when profile
// is served search.
func (g *Gateway) withSearchTools(profile string, names []string) []string {
	if !g.searchOffered(profile) {
		return names
	}
	return append([]string{toolsearch.FindToolsName, toolsearch.CallToolName}, names...)
}

// searchTool is the definition of find_tools or call_tool.
func (g *Gateway) searchTool(name string) (*mcp.Tool, bool) {
	if _, upstream := g.cat().tools[name]; upstream {
		return nil, false
	}
	st := g.cat().search
	switch {
	case st == nil:
		return nil, false
	case name == toolsearch.FindToolsName:
		return st.find, true
	case name == toolsearch.CallToolName:
		return st.call, true
	}
	return nil, false
}

// findTools answers a call to find_tools; ok is false for any other tool,
// or when s is not served search. It sets the call's outcome.
func (g *Gateway) findTools(snap *policy.Snapshot, s *session, params *mcp.CallToolParamsRaw, call *telemetry.Call) (res *mcp.CallToolResult, ok bool, err error) {
	if params.Name != toolsearch.FindToolsName || !g.searchOffered(s.profile) {
		return nil, false, nil
	}
	call.Outcome = telemetry.OutcomeDenied
	var args struct {
		Query *string `json:"query"`
		Limit *int    `json:"limit"`
	}
	if len(params.Arguments) > 0 {
		if err := json.Unmarshal(params.Arguments, &args); err != nil {
			return invalidSearch(fmt.Sprintf("%s: \"query\" must be a string and \"limit\" an integer (%v)", toolsearch.FindToolsName, err), findAction()), true, nil
		}
	}
	if args.Query == nil {
		return invalidSearch(toolsearch.FindToolsName+": missing \"query\"", findAction()), true, nil
	}
	limit := toolsearch.DefaultLimit
	if args.Limit != nil {
		if *args.Limit < 1 || *args.Limit > toolsearch.MaxLimit {
			return invalidSearch(fmt.Sprintf("%s: limit %d: want 1 to %d", toolsearch.FindToolsName, *args.Limit, toolsearch.MaxLimit), findAction()), true, nil
		}
		limit = *args.Limit
	}
	cat := g.cat()
	fresh := func(name string) bool { return snap.Searchable(s.profile, name) && !s.search.returnedBefore(name) }
	if *args.Query == toolsearch.ListQuery {
		body, err := toolsearch.NamesAnswer(cat.search.index.Names(fresh))
		if err != nil {
			call.Outcome = telemetry.OutcomeToolError
			return nil, true, err
		}
		call.Outcome = telemetry.OutcomeOK
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: body}}}, true, nil
	}
	var hits []toolsearch.Hit
	if h, ok := cat.search.index.Lookup(*args.Query, fresh); ok {
		hits = []toolsearch.Hit{h}
	} else {
		hits = toolsearch.Cut(cat.search.index.SearchAs(s.profile, *args.Query, s.search.history(), limit, fresh), toolsearch.DefaultCut)
	}
	encoded := make([]json.RawMessage, 0, len(hits))
	names := make([]string, 0, len(hits))
	for _, h := range hits {
		d, ok := cat.search.defs[h.Name]
		if !ok {
			d.err = fmt.Errorf("gateway: %s: indexed tool %q has no definition", toolsearch.FindToolsName, h.Name)
		}
		if d.err != nil {
			call.Outcome = telemetry.OutcomeToolError
			return nil, true, d.err
		}
		encoded = append(encoded, d.raw)
		names = append(names, h.Name)
	}
	body := toolsearch.AnswerOf(encoded)
	s.search.noteReturned(names)
	call.Outcome = telemetry.OutcomeOK
	return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: body}}}, true, nil
}

// unwrapCallTool turns a call to call_tool into the call it carries; ok is
// false for any other tool, or when s is not served search. env is set
// when the carried call is malformed.
func (g *Gateway) unwrapCallTool(s *session, params *mcp.CallToolParamsRaw) (inner *mcp.CallToolParamsRaw, env *mcp.CallToolResult, ok bool) {
	if params.Name != toolsearch.CallToolName || !g.searchOffered(s.profile) {
		return nil, nil, false
	}
	var args struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if len(params.Arguments) > 0 {
		if err := json.Unmarshal(params.Arguments, &args); err != nil {
			return nil, invalidSearch(fmt.Sprintf("%s: \"name\" must be a string (%v)", toolsearch.CallToolName, err), callAction()), true
		}
	}
	if args.Name == nil || *args.Name == "" {
		return nil, invalidSearch(toolsearch.CallToolName+": missing \"name\"", callAction()), true
	}
	return &mcp.CallToolParamsRaw{Meta: params.Meta, Name: *args.Name, Arguments: args.Arguments}, nil, true
}

func findAction() string {
	return fmt.Sprintf("call %s with {\"query\": WORDS} and optionally \"limit\" from 1 to %d", toolsearch.FindToolsName, toolsearch.MaxLimit)
}

func callAction() string {
	return fmt.Sprintf("call %s with {\"name\": TOOL, \"arguments\": {...}}, TOOL a name %s returned", toolsearch.CallToolName, toolsearch.FindToolsName)
}

// invalidSearch is the invalid_arguments envelope of a find_tools or
// call_tool call.
func invalidSearch(msg, action string) *mcp.CallToolResult {
	return Envelope{Code: CodeInvalidArguments, Message: msg, Retryable: false, Category: CategoryValidation, SuggestedActions: []string{action}}.result()
}
