package gateway

import (
	"context"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestAlwaysLoad: a profile with always_load = "core" lists every tool its
// rules allow within the ceiling, marks core's tools (and only them) with
// _meta "anthropic/alwaysLoad", and lets every listed tool be called,
// core's or not, while a tool beyond the ceiling is neither listed nor
// callable.
func TestAlwaysLoad(t *testing.T) {
	const generated = `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["read_file"]

[[profile]]
name = "ceiling"
tools = ["read_file", "list_dir", "write_file"]
`
	const policy = `version = 1

[[profile]]
name = "deferred"
always_load = "core"
`
	for _, tc := range []struct {
		name     string
		opts     Options
		listed   []string // sorted
		refused  string
		loadMeta []string
	}{
		// delete_file is destructive: the profile's rules leave it out.
		{"no ceiling", Options{}, []string{"list_dir", "read_file", "send_mail", "write_file"}, "delete_file", []string{"read_file"}},
		{"within the ceiling", Options{MaxProfile: "ceiling"}, []string{"list_dir", "read_file", "write_file"}, "send_mail", []string{"read_file"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			up := &recordingFakeUpstream{tools: searchCatalog()}
			opts := tc.opts
			opts.Upstream = up
			opts.Profiles = writeProfiles(t, up.tools, generated, policy)
			g := newGateway(t, opts)
			cs := connect(t, g, "deferred")
			res, err := cs.ListTools(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			var names, marked []string
			for _, tool := range res.Tools {
				names = append(names, tool.Name)
				if v, ok := tool.Meta[MetaAlwaysLoad]; ok {
					if v != true {
						t.Errorf("%s: %s = %v, want true", tool.Name, MetaAlwaysLoad, v)
					}
					marked = append(marked, tool.Name)
				}
				if tool.Meta[MetaEffect] == nil {
					t.Errorf("%s lost its effect _meta: %v", tool.Name, tool.Meta)
				}
			}
			slices.Sort(names)
			if !slices.Equal(names, tc.listed) || !slices.Equal(marked, tc.loadMeta) {
				t.Fatalf("listed %v (marked %v), want %v (marked %v)", names, marked, tc.listed, tc.loadMeta)
			}
			for _, tool := range tc.listed {
				if res := must(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool})); res.IsError {
					t.Errorf("listed %s refused: %+v", tool, res)
				}
			}
			if env, ok := envelopeFrom(must(cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tc.refused}))); !ok || env.Code != CodeToolNotInProfile {
				t.Errorf("%s, not listed, was not refused: %+v", tc.refused, env)
			}
			// core itself is served as before, unmarked.
			core := connect(t, g, "core")
			for _, tool := range mustListTools(t, core) {
				if _, ok := tool.Meta[MetaAlwaysLoad]; ok || tool.Name != "read_file" {
					t.Errorf("core lists %s with %v", tool.Name, tool.Meta)
				}
			}
		})
	}
}

func mustListTools(t *testing.T, cs *mcp.ClientSession) []*mcp.Tool {
	t.Helper()
	res, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	return res.Tools
}
