package gateway

import (
	"context"
	"net/http/httptest"
	"os/exec"
	"slices"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// searchGroupsGenerated serves one profile with both search and groups.
const searchGroupsGenerated = `version = 1
default = "both"

[[profile]]
name = "both"
tools = ["test_simple_text"]
search = true
groups = ["media"]

[[group]]
name = "media"
description = "audio and image content tools"
tools = ["test_audio_content", "test_image_content"]
`

// TestSearchWithGroupsPerProtocol: a profile with search = true and
// groups, served over HTTP in front of the everything-server, lists a
// 2026-07-28 client find_tools and call_tool and no enable_tools, and a
// 2025-11-25 session all three; each reaches a group's tool its own way,
// and find_tools works in both.
func TestSearchWithGroupsPerProtocol(t *testing.T) {
	ctx := context.Background()
	up, err := NewClientUpstream(ctx, &mcp.CommandTransport{Command: exec.Command(testupstream.EverythingServer(t))})
	if err != nil {
		t.Fatal(err)
	}
	g := newGateway(t, Options{Upstream: up, Profiles: writeProfiles(t, everythingCatalog().Tools, searchGroupsGenerated, "version = 1\n")})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close)
	call := func(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil {
			t.Fatalf("%s %v: %v", name, args, err)
		}
		return res
	}
	for _, tc := range []struct {
		protocol string
		listed   []string
		groups   bool // enable_tools offered and switching media on
	}{
		{"2026-07-28", []string{toolsearch.FindToolsName, toolsearch.CallToolName, "test_simple_text"}, false},
		{"2025-11-25", []string{profiles.EnableToolsName, toolsearch.FindToolsName, toolsearch.CallToolName, "test_simple_text"}, true},
	} {
		t.Run(tc.protocol, func(t *testing.T) {
			cs := httpClient(t, srv.URL+"/mcp/both", "both-client", "", tc.protocol)
			if names, _ := listAll(t, cs); !slices.Equal(names, tc.listed) {
				t.Fatalf("listed %v, want %v", names, tc.listed)
			}
			if got := findNames(t, cs, map[string]any{"query": "embedded resource", "limit": 1}); !slices.Equal(got, []string{"test_embedded_resource"}) {
				t.Fatalf("find_tools returned %v, want test_embedded_resource", got)
			}
			if res := call(t, cs, toolsearch.CallToolName, map[string]any{"name": "test_embedded_resource", "arguments": map[string]any{}}); res.IsError {
				t.Fatalf("call_tool of a found tool: %+v", res.Content)
			}
			if !tc.groups {
				if _, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: profiles.EnableToolsName, Arguments: map[string]any{"group": "media"}}); err == nil {
					t.Fatal("enable_tools answered a 2026-07-28 client")
				}
				// A group's tool is found and run through search instead.
				if got := findNames(t, cs, map[string]any{"query": "audio content", "limit": 1}); !slices.Equal(got, []string{"test_audio_content"}) {
					t.Fatalf("find_tools returned %v, want test_audio_content", got)
				}
				if res := call(t, cs, toolsearch.CallToolName, map[string]any{"name": "test_audio_content", "arguments": map[string]any{}}); res.IsError {
					t.Fatalf("call_tool of a group's tool: %+v", res.Content)
				}
				return
			}
			if res := call(t, cs, profiles.EnableToolsName, map[string]any{"group": "media"}); res.IsError {
				t.Fatalf("enable_tools media: %+v", res.Content)
			}
			want := append(slices.Clone(tc.listed), "test_audio_content", "test_image_content")
			if names, _ := listAll(t, cs); !slices.Equal(names, want) {
				t.Fatalf("after enable_tools listed %v, want %v", names, want)
			}
			if res := call(t, cs, "test_audio_content", nil); res.IsError {
				t.Fatalf("a switched-on tool: %+v", res.Content)
			}
		})
	}
}
