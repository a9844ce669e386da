package price

import (
	"bytes"
	"encoding/json"
	"path/filepath"
	"testing"

	"github.com/toolprof/toolprof/internal/golden"
)

// modelTools exercise the serialisation's corners: HTML characters left
// unescaped, non-ASCII text, a schema whose key order is not sorted (kept),
// whitespace in the schema (compacted), an empty description (left out) and
// no schema at all.
var modelTools = []Tool{
	{Name: "search_code", Description: "Search code for <pattern> & show hits — fast", InputSchema: json.RawMessage(`{"type": "object", "properties": {"query": {"type": "string"}, "limit": {"type": "integer"}}, "required": ["query"]}`)},
	{Name: "ping", InputSchema: json.RawMessage(`{"type":"object"}`)},
	{Name: "no_schema", Description: "Takes nothing."},
}

const modelInstructions = "Use search_code before reading files.\nNever \"guess\" paths."

func TestModelSerialisation(t *testing.T) {
	for _, f := range Families() {
		t.Run(string(f), func(t *testing.T) {
			tools, err := EncodeTools(f, modelTools)
			if err != nil {
				t.Fatal(err)
			}
			instr, err := EncodeInstructions(f, modelInstructions)
			if err != nil {
				t.Fatal(err)
			}
			var got bytes.Buffer
			got.WriteString("tools:\n")
			got.Write(tools)
			got.WriteString("\ninstructions:\n")
			got.Write(instr)
			got.WriteString("\n")
			golden.Assert(t, filepath.Join("testdata", "model."+string(f)+".golden"), got.Bytes())
			if !json.Valid(tools) || !json.Valid(instr) {
				t.Errorf("not valid JSON: %s / %s", tools, instr)
			}
		})
	}
}

func TestModelCounts(t *testing.T) {
	c, err := NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range Families() {
		m, err := Model(c, f, modelTools, modelInstructions)
		if err != nil {
			t.Fatal(err)
		}
		tools, _ := EncodeTools(f, modelTools)
		instr, _ := EncodeInstructions(f, modelInstructions)
		wantTools, _ := c.Count(string(tools))
		wantInstr, _ := c.Count(string(instr))
		for _, name := range TokenizerNames() {
			if m.Tools[name] != wantTools[name] || m.Instructions[name] != wantInstr[name] || m.Total[name] != wantTools[name]+wantInstr[name] {
				t.Errorf("%s %s: got %+v, want tools %d, instructions %d", f, name, m, wantTools[name], wantInstr[name])
			}
			if m.Instructions[name] == 0 {
				t.Errorf("%s %s: instructions priced at 0", f, name)
			}
		}
		none, err := Model(c, f, nil, "")
		if err != nil {
			t.Fatal(err)
		}
		if none.Instructions[O200kBase] != 0 {
			t.Errorf("%s: no instructions cost %d tokens, want 0", f, none.Instructions[O200kBase])
		}
	}
}

func TestModelRejects(t *testing.T) {
	if _, err := EncodeTool(Anthropic, Tool{Name: "x", InputSchema: json.RawMessage(`{"type":`)}); err == nil {
		t.Error("a broken schema was encoded")
	}
	if _, err := EncodeTool("gemini", Tool{Name: "x"}); err == nil {
		t.Error("an unknown family was encoded")
	}
	if _, err := ParseFamily("gemini"); err == nil {
		t.Error("ParseFamily accepted gemini")
	}
}
