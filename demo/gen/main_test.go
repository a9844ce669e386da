package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/golden"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/telemetry"
)

const committed = "../trace.jsonl"

// TestCommittedTraceIsGenerated: demo/trace.jsonl is exactly what the
// generator writes (refresh with go test ./demo/gen -update).
func TestCommittedTraceIsGenerated(t *testing.T) {
	var a, b bytes.Buffer
	if err := generate(&a); err != nil {
		t.Fatal(err)
	}
	if err := generate(&b); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(a.Bytes(), b.Bytes()) {
		t.Fatal("two runs of the generator differ")
	}
	golden.Assert(t, committed, a.Bytes())
}

// callable are the demo upstreams' tools that answer without asking the
// client for sampling, elicitation or roots and leave the tool list alone
// (names as the gateway serves them: server "__" tool).
var callable = []string{
	"everything__json_schema_2020_12_tool", "everything__test_audio_content", "everything__test_embedded_resource",
	"everything__test_error_handling", "everything__test_image_content", "everything__test_logging_tool",
	"everything__test_multiple_content_types", "everything__test_reconnection", "everything__test_simple_text",
	"everything__test_streaming_elicitation", "everything__test_tool_with_progress", "everything__test_x_mcp_header",
	"fs__directory_tree", "fs__edit_file", "fs__get_file_info", "fs__list_allowed_directories", "fs__list_directory",
	"fs__list_directory_with_sizes", "fs__read_multiple_files", "fs__read_text_file", "fs__search_files", "fs__write_file",
	"memory__add_observations", "memory__create_entities", "memory__create_relations", "memory__open_nodes",
	"memory__read_graph", "memory__search_nodes",
}

// TestTraceShape: the trace decodes, calls only callable tools, carries
// arguments where the tools need them (paths that exist in demo/workspace;
// writes only to a file of the session's own), spans days, names several
// clients, uses all three servers, and is skewed (one tool in most
// sessions, a long tail).
func TestTraceShape(t *testing.T) {
	for _, name := range callable {
		if tool, ok := strings.CutPrefix(name, "everything__"); ok && !slices.Contains(testupstream.EverythingTools, tool) {
			t.Fatalf("%s is not an everything-server tool", tool)
		}
	}
	var buf bytes.Buffer
	if err := generate(&buf); err != nil {
		t.Fatal(err)
	}
	ss, _, err := telemetry.DecodeTrace(&buf, "generated", false)
	if err != nil {
		t.Fatal(err)
	}
	if len(ss) != sessions {
		t.Fatalf("%d sessions, want %d", len(ss), sessions)
	}
	perTool := map[string]int{}
	servers := map[string]bool{}
	clientNames := map[string]bool{}
	first, last := *ss[0].Started, *ss[0].Started
	for _, s := range ss {
		if s.Client.Name == "" || s.Client.Version == "" || s.Started == nil || len(s.Calls) == 0 {
			t.Fatalf("session %s lacks a client, a start or calls: %+v", s.Session, s)
		}
		clientNames[s.Client.Name] = true
		if s.Started.Before(first) {
			first = *s.Started
		}
		if s.Started.After(last) {
			last = *s.Started
		}
		written := map[string]bool{}
		seen := map[string]bool{}
		for _, c := range s.Calls {
			if !slices.Contains(callable, c.Tool) {
				t.Errorf("session %s calls %s, which needs client features or changes the tool list", s.Session, c.Tool)
			}
			server, _, _ := strings.Cut(c.Tool, "__")
			servers[server] = true
			var args struct {
				Path          string   `json:"path"`
				Paths         []string `json:"paths"`
				ContactMethod string   `json:"contactMethod"`
				Region        string   `json:"region"`
			}
			if len(c.Arguments) > 0 {
				if err := json.Unmarshal(c.Arguments, &args); err != nil {
					t.Fatalf("session %s: %s arguments %s: %v", s.Session, c.Tool, c.Arguments, err)
				}
			}
			switch c.Tool {
			case "fs__write_file":
				if want := "notes/scratch-" + strings.Split(s.Session, "-")[1] + ".md"; args.Path != want {
					t.Errorf("session %s writes %q, want its own file %q", s.Session, args.Path, want)
				}
				written[args.Path] = true
			case "fs__edit_file":
				if !written[args.Path] {
					t.Errorf("session %s edits %q, which it did not write", s.Session, args.Path)
				}
			case "everything__json_schema_2020_12_tool":
				if args.ContactMethod == "" {
					t.Errorf("session %s: %s arguments %s lack contactMethod", s.Session, c.Tool, c.Arguments)
				}
			case "everything__test_x_mcp_header":
				if args.Region == "" {
					t.Errorf("session %s: %s arguments %s lack region", s.Session, c.Tool, c.Arguments)
				}
			default:
				for _, p := range append(args.Paths, args.Path) {
					if p == "" {
						continue
					}
					if _, err := os.Stat(filepath.Join("..", "workspace", p)); err != nil {
						t.Errorf("session %s: %s names %q, not in demo/workspace: %v", s.Session, c.Tool, p, err)
					}
				}
			}
			if strings.HasPrefix(c.Tool, "fs__") && c.Tool != "fs__list_allowed_directories" && args.Path == "" && len(args.Paths) == 0 {
				t.Errorf("session %s calls %s without a path", s.Session, c.Tool)
			}
			if !seen[c.Tool] {
				perTool[c.Tool]++
				seen[c.Tool] = true
			}
		}
	}
	if days := last.Sub(first).Hours() / 24; days < 7 {
		t.Errorf("trace spans %.1f days, want at least a week", days)
	}
	if len(clientNames) < 4 {
		t.Errorf("%d client names, want at least 4", len(clientNames))
	}
	if len(servers) != 3 {
		t.Errorf("servers used %v, want everything, fs and memory", servers)
	}
	if len(perTool) < 20 {
		t.Errorf("%d distinct tools, want a long tail of at least 20", len(perTool))
	}
	if top := perTool["fs__read_text_file"]; top*2 < sessions {
		t.Errorf("fs__read_text_file in %d of %d sessions, want most", top, sessions)
	}
	rare := 0
	for _, n := range perTool {
		if n*50 < sessions {
			rare++
		}
	}
	if rare < 5 {
		t.Errorf("%d tools in under 2%% of sessions, want a tail of at least 5", rare)
	}
}
