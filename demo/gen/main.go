// Command gen writes demo/trace.jsonl: a deterministic, realistic session
// trace for the go-sdk conformance everything-server, whose calls carry
// arguments that succeed. Run it from the repository root:
//
//	go run ./demo/gen > demo/trace.jsonl
//
// The workload is skewed like real agent traffic: a few tools that most
// sessions use, a handful of workflows that pair them, and a long tail of
// rarely used tools (including one that always fails, so the demo shows a
// tool_error). Tools that need sampling, elicitation or roots from the
// client, or that change the tool list, are never called.
package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"time"
)

// sessions is how many lines the trace has.
const sessions = 160

// call is one call in the trace format.
type call struct {
	Tool      string          `json:"tool"`
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// session is one line in the trace format.
type session struct {
	Session string    `json:"session"`
	Client  client    `json:"client"`
	Started time.Time `json:"started"`
	Calls   []call    `json:"calls"`
}

type client struct {
	Name    string `json:"name"`
	Version string `json:"version"`
}

// clients and their share of sessions.
type weightedClient struct {
	c      client
	weight int
}

var clients = []weightedClient{
	{client{"claude-code", "2.0.14"}, 45},
	{client{"claude-ai", "0.1.0"}, 25},
	{client{"cursor-vscode", "1.0.0"}, 15},
	{client{"Visual Studio Code", "1.104.2"}, 10},
	{client{"zed", "0.205.5"}, 5},
}

// workflow builds the calls of one kind of session.
type workflow struct {
	name   string
	weight int
	calls  func(r *rand.Rand) []call
}

func plain(tool string) call { return call{Tool: tool} }

func withArgs(tool string, args any) call {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return call{Tool: tool, Arguments: b}
}

func repeat(r *rand.Rand, c call, lo, hi int) []call {
	out := make([]call, lo+r.IntN(hi-lo+1))
	for i := range out {
		out[i] = c
	}
	return out
}

var people = []string{"Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret"}
var regions = []string{"eu-west-1", "us-east-1", "ap-south-1"}

// contact is a valid argument object for json_schema_2020_12_tool (its
// schema wants email or phone, matching contactMethod).
func contact(r *rand.Rand) call {
	name := people[r.IntN(len(people))]
	if r.IntN(3) == 0 {
		return withArgs("json_schema_2020_12_tool", map[string]any{"name": name, "contactMethod": "phone", "phone": fmt.Sprintf("+44 20 7946 %04d", r.IntN(10000))})
	}
	return withArgs("json_schema_2020_12_tool", map[string]any{
		"name": name, "contactMethod": "email", "email": fmt.Sprintf("%s@example.com", name),
		"address": map[string]any{"street": "1 Main St", "city": "London"},
	})
}

func header(r *rand.Rand) call {
	return withArgs("test_x_mcp_header", map[string]any{"region": regions[r.IntN(len(regions))], "level": 1 + r.IntN(3)})
}

var workflows = []workflow{
	{"read", 45, func(r *rand.Rand) []call {
		cs := repeat(r, plain("test_simple_text"), 1, 3)
		if r.IntN(4) != 0 {
			cs = append(cs, plain("test_embedded_resource"))
		}
		return cs
	}},
	{"media", 20, func(r *rand.Rand) []call {
		cs := []call{plain("test_simple_text"), plain("test_image_content")}
		if r.IntN(3) == 0 {
			cs = append(cs, plain("test_audio_content"))
		}
		return cs
	}},
	{"forms", 15, func(r *rand.Rand) []call {
		cs := []call{contact(r), header(r)}
		if r.IntN(2) == 0 {
			cs = append(cs, plain("test_simple_text"))
		}
		return cs
	}},
	{"diagnostics", 10, func(r *rand.Rand) []call {
		cs := []call{plain("test_simple_text"), plain("test_logging_tool"), plain("test_streaming_elicitation")}
		if r.IntN(3) == 0 {
			cs = append(cs, plain("test_tool_with_logging"))
		}
		return cs
	}},
	{"tail", 10, func(r *rand.Rand) []call {
		tail := []string{"test_multiple_content_types", "test_tool_with_progress", "test_reconnection", "test_trigger_prompt_change", "test_error_handling"}
		return []call{plain("test_simple_text"), plain(tail[r.IntN(len(tail))])}
	}},
}

func pick[T any](r *rand.Rand, items []T, weight func(T) int) T {
	total := 0
	for _, it := range items {
		total += weight(it)
	}
	n := r.IntN(total)
	for _, it := range items {
		if n -= weight(it); n < 0 {
			return it
		}
	}
	return items[len(items)-1]
}

func main() {
	if err := generate(os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "gen:", err)
		os.Exit(1)
	}
}

// generate writes the trace: the same bytes on every run.
func generate(out io.Writer) error {
	r := rand.New(rand.NewPCG(2026, 11))
	start := time.Date(2026, 11, 2, 8, 0, 0, 0, time.UTC)
	w := bufio.NewWriter(out)
	enc := json.NewEncoder(w)
	at := start
	for i := range sessions {
		// About five sessions a day over a month, in working hours.
		at = at.Add(time.Duration(60+r.IntN(180)) * time.Minute)
		if h := at.Hour(); h >= 19 {
			at = time.Date(at.Year(), at.Month(), at.Day()+1, 8, r.IntN(60), 0, 0, time.UTC)
		}
		wf := pick(r, workflows, func(w workflow) int { return w.weight })
		c := pick(r, clients, func(c weightedClient) int { return c.weight })
		s := session{
			Session: fmt.Sprintf("demo-%03d-%s", i+1, wf.name),
			Client:  c.c,
			Started: at,
			Calls:   wf.calls(r),
		}
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return w.Flush()
}
