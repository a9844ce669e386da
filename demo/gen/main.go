// Command gen writes demo/trace.jsonl: a deterministic, realistic session
// trace for the demo's three upstreams (demo/servers.mcp.json): the
// filesystem server over demo/workspace ("fs__" tools), the memory server
// ("memory__") and the go-sdk conformance everything-server ("everything__").
// Every call carries arguments that succeed. Run it from the repository root:
//
//	go run ./demo/gen > demo/trace.jsonl
//
// The workload is skewed like real agent traffic: reading files in most
// sessions, a handful of workflows (recall, remember, write notes, explore,
// content, forms) and a long tail of rarely used tools, one of which always
// fails, so the demo can show a tool_error. Tools that need sampling,
// elicitation or roots from the client, or that change the tool list, are
// never called; writes go to a file of the session's own.
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
const sessions = 200

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

// workflow builds the calls of one kind of session; n is the session's
// number, for names that must not collide across sessions.
type workflow struct {
	name   string
	weight int
	calls  func(r *rand.Rand, n int) []call
}

func plain(tool string) call { return call{Tool: tool} }

func withArgs(tool string, args any) call {
	b, err := json.Marshal(args)
	if err != nil {
		panic(err)
	}
	return call{Tool: tool, Arguments: b}
}

func one[T any](r *rand.Rand, items []T) T { return items[r.IntN(len(items))] }

// The workspace's files (demo/workspace) and directories, relative to it.
var (
	files    = []string{"README.md", "notes/todo.md", "notes/2026-11-03-planning.md", "src/invoice.py", "src/export.py", "data/customers.csv"}
	dirs     = []string{".", "src", "notes", "data"}
	patterns = []string{"*.py", "*.md", "todo*", "*.csv"}
	people   = []string{"Ada", "Grace", "Linus", "Barbara", "Ken", "Margaret"}
	topics   = []string{"export", "invoice", "retry", "vat", "customers"}
	regions  = []string{"eu-west-1", "us-east-1", "ap-south-1"}
)

func read(r *rand.Rand) call {
	return withArgs("fs__read_text_file", map[string]any{"path": one(r, files)})
}

// contact is a valid argument object for json_schema_2020_12_tool (its
// schema wants email or phone, matching contactMethod).
func contact(r *rand.Rand) call {
	name := one(r, people)
	if r.IntN(3) == 0 {
		return withArgs("everything__json_schema_2020_12_tool", map[string]any{"name": name, "contactMethod": "phone", "phone": fmt.Sprintf("+44 20 7946 %04d", r.IntN(10000))})
	}
	return withArgs("everything__json_schema_2020_12_tool", map[string]any{
		"name": name, "contactMethod": "email", "email": name + "@example.com",
		"address": map[string]any{"street": "1 Main St", "city": "London"},
	})
}

var workflows = []workflow{
	// Reading code and notes: what most sessions do.
	{"read", 35, func(r *rand.Rand, _ int) []call {
		var cs []call
		for range 1 + r.IntN(3) {
			cs = append(cs, read(r))
		}
		if r.IntN(5) < 3 {
			cs = append(cs, withArgs("fs__list_directory", map[string]any{"path": one(r, dirs)}))
		}
		if r.IntN(10) < 3 {
			cs = append(cs, withArgs("fs__search_files", map[string]any{"path": ".", "pattern": one(r, patterns)}))
		}
		return cs
	}},
	// Recalling what earlier sessions stored.
	{"recall", 15, func(r *rand.Rand, _ int) []call {
		cs := []call{withArgs("memory__search_nodes", map[string]any{"query": one(r, topics)})}
		if r.IntN(2) == 0 {
			cs = append(cs, withArgs("memory__open_nodes", map[string]any{"names": []string{"acme-billing", one(r, people)}}))
		}
		if r.IntN(5) < 2 {
			cs = append(cs, read(r))
		}
		return cs
	}},
	// Storing decisions in the knowledge graph.
	{"remember", 10, func(r *rand.Rand, n int) []call {
		person, topic := one(r, people), one(r, topics)
		cs := []call{withArgs("memory__create_entities", map[string]any{"entities": []map[string]any{
			{"name": "acme-billing", "entityType": "project", "observations": []string{"billing service"}},
			{"name": person, "entityType": "person", "observations": []string{"works on " + topic}},
		}})}
		if r.IntN(2) == 0 {
			cs = append(cs, withArgs("memory__add_observations", map[string]any{"observations": []map[string]any{
				{"entityName": "acme-billing", "contents": []string{fmt.Sprintf("decision %d: %s", n, topic)}},
			}}))
		}
		if r.IntN(10) < 3 {
			cs = append(cs, withArgs("memory__create_relations", map[string]any{"relations": []map[string]any{
				{"from": person, "to": "acme-billing", "relationType": "works on"},
			}}))
		}
		return cs
	}},
	// Taking notes: writes go to a file of the session's own.
	{"write", 8, func(r *rand.Rand, n int) []call {
		path := fmt.Sprintf("notes/scratch-%03d.md", n)
		cs := []call{
			withArgs("fs__read_text_file", map[string]any{"path": "notes/todo.md"}),
			withArgs("fs__write_file", map[string]any{"path": path, "content": "# Scratch\n\n- look at " + one(r, topics) + "\n"}),
		}
		if r.IntN(5) < 2 {
			cs = append(cs, withArgs("fs__edit_file", map[string]any{"path": path, "edits": []map[string]any{{"oldText": "# Scratch", "newText": "# Scratch (reviewed)"}}}))
		}
		return cs
	}},
	// Finding one's way around the workspace.
	{"explore", 10, func(r *rand.Rand, _ int) []call {
		cs := []call{
			withArgs("fs__directory_tree", map[string]any{"path": "."}),
			withArgs("fs__get_file_info", map[string]any{"path": one(r, files)}),
		}
		if r.IntN(10) < 3 {
			cs = append([]call{plain("fs__list_allowed_directories")}, cs...)
		}
		return cs
	}},
	// Content of every type from the everything-server.
	{"media", 8, func(r *rand.Rand, _ int) []call {
		cs := []call{plain("everything__test_simple_text"), plain("everything__test_image_content")}
		if r.IntN(10) < 3 {
			cs = append(cs, plain("everything__test_audio_content"))
		}
		return cs
	}},
	// Structured input: a form and a header-mirrored argument.
	{"forms", 6, func(r *rand.Rand, _ int) []call {
		return []call{contact(r), withArgs("everything__test_x_mcp_header", map[string]any{"region": one(r, regions), "level": 1 + r.IntN(3)})}
	}},
	// The long tail: one rarely used tool after a common one.
	{"tail", 8, func(r *rand.Rand, _ int) []call {
		tail := []call{
			plain("everything__test_multiple_content_types"), plain("everything__test_tool_with_progress"),
			plain("everything__test_reconnection"), plain("everything__test_embedded_resource"),
			plain("everything__test_logging_tool"), plain("everything__test_streaming_elicitation"),
			plain("everything__test_error_handling"), plain("memory__read_graph"),
			withArgs("fs__read_multiple_files", map[string]any{"paths": []string{"README.md", "notes/todo.md"}}),
			withArgs("fs__list_directory_with_sizes", map[string]any{"path": "src"}),
		}
		return []call{read(r), one(r, tail)}
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
			Calls:   wf.calls(r, i+1),
		}
		if err := enc.Encode(s); err != nil {
			return err
		}
	}
	return w.Flush()
}
