package main

import (
	"bytes"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/telemetry"
)

var update = flag.Bool("update", false, "rewrite ../trace.jsonl from the generator")

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
	if *update {
		if err := os.WriteFile(committed, a.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := os.ReadFile(committed)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, a.Bytes()) {
		t.Errorf("%s differs from the generator's output; run go test ./demo/gen -update", committed)
	}
}

// callable are the everything-server's tools that answer without asking the
// client for sampling, elicitation or roots and leave its tool list alone.
var callable = []string{
	"json_schema_2020_12_tool", "test_audio_content", "test_embedded_resource", "test_error_handling",
	"test_image_content", "test_logging_tool", "test_multiple_content_types", "test_reconnection",
	"test_simple_text", "test_streaming_elicitation", "test_tool_with_logging", "test_tool_with_progress",
	"test_trigger_prompt_change", "test_x_mcp_header",
}

// TestTraceShape: the trace decodes, calls only callable tools of the
// everything-server, carries arguments where the schema needs them, spans
// days, names several clients, and is skewed (one tool in most sessions, a
// long tail).
func TestTraceShape(t *testing.T) {
	for _, name := range callable {
		if !slices.Contains(testupstream.EverythingTools, name) {
			t.Fatalf("%s is not an everything-server tool", name)
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
		seen := map[string]bool{}
		for _, c := range s.Calls {
			if !slices.Contains(callable, c.Tool) {
				t.Errorf("session %s calls %s, which needs client features or changes the tool list", s.Session, c.Tool)
			}
			if (c.Tool == "json_schema_2020_12_tool" || c.Tool == "test_x_mcp_header") && len(c.Arguments) == 0 {
				t.Errorf("session %s calls %s without arguments", s.Session, c.Tool)
			}
			if c.Tool == "json_schema_2020_12_tool" && !strings.Contains(string(c.Arguments), `"contactMethod"`) {
				t.Errorf("session %s: %s arguments %s lack contactMethod", s.Session, c.Tool, c.Arguments)
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
	if len(perTool) < 10 {
		t.Errorf("%d distinct tools, want a long tail of at least 10", len(perTool))
	}
	if top := perTool["test_simple_text"]; top*10 < sessions*8 {
		t.Errorf("test_simple_text in %d of %d sessions, want most (80%%+)", top, sessions)
	}
	rare := 0
	for _, n := range perTool {
		if n*20 < sessions {
			rare++
		}
	}
	if rare < 3 {
		t.Errorf("%d tools in under 5%% of sessions, want a tail of at least 3", rare)
	}
}
