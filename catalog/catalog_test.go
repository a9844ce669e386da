package catalog

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestDecode(t *testing.T) {
	tests := []struct {
		name, in, wantErr string
		want              []string
	}{
		{name: "ok", in: `{"tools":[{"name":"a","inputSchema":{"type":"object"}},{"name":"b","inputSchema":{"type":"object"}}]}`, want: []string{"a", "b"}},
		{name: "empty", in: `{"tools":[]}`, want: []string{}},
		{name: "no tools key", in: `{}`, wantErr: `no "tools" array`},
		{name: "not json", in: `[`, wantErr: "decode"},
		{name: "missing name", in: `{"tools":[{"description":"x"}]}`, wantErr: "tools[0]: missing name"},
		{name: "duplicate", in: `{"tools":[{"name":"a"},{"name":"a"}]}`, wantErr: `tools[1]: name "a" already used by tools[0]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := Decode(strings.NewReader(tt.in))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := c.Names(); strings.Join(got, ",") != strings.Join(tt.want, ",") {
				t.Errorf("names = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestHashIgnoresOrderButNotContent(t *testing.T) {
	a, _ := Decode(strings.NewReader(`{"tools":[{"name":"a","description":"x"},{"name":"b"}]}`))
	b, _ := Decode(strings.NewReader(`{"tools":[{"name":"b"},{"name":"a","description":"x"}]}`))
	c, _ := Decode(strings.NewReader(`{"tools":[{"name":"b"},{"name":"a","description":"y"}]}`))
	if !Equal(a, b) {
		t.Error("same tools in another order hash differently")
	}
	if Equal(a, c) {
		t.Error("different descriptions hash the same")
	}
	ha, _ := a.Hash()
	if !strings.HasPrefix(ha, "sha256:") || len(ha) != len("sha256:")+64 {
		t.Errorf("hash = %q", ha)
	}
}

func TestWriteRoundTrip(t *testing.T) {
	a, _ := Decode(strings.NewReader(`{"tools":[{"name":"a","description":"x","inputSchema":{"type":"object"}}]}`))
	var buf bytes.Buffer
	if err := a.Write(&buf); err != nil {
		t.Fatal(err)
	}
	b, err := Decode(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if !Equal(a, b) {
		t.Errorf("round trip changed the catalog: %s", buf.String())
	}
	if a.Tool("a") == nil || a.Tool("zz") != nil {
		t.Error("Tool lookup wrong")
	}
}

// TestInstructions: a catalog may carry its servers' instructions beside
// the tools; one without reads as servers without any, and the hash
// covers the tools only.
func TestInstructions(t *testing.T) {
	const tools = `"tools":[{"name":"a","inputSchema":{"type":"object"}}]`
	old, err := Decode(strings.NewReader(`{` + tools + `}`))
	if err != nil || old.Instructions != nil {
		t.Fatalf("catalog without instructions: %+v, %v", old, err)
	}
	c, err := Decode(strings.NewReader(`{` + tools + `,"instructions":[{"server":"github","instructions":"Use the tools."}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if want := []ServerInstructions{{Server: "github", Instructions: "Use the tools."}}; len(c.Instructions) != 1 || c.Instructions[0] != want[0] {
		t.Errorf("instructions %+v, want %+v", c.Instructions, want)
	}
	if !Equal(old, c) {
		t.Error("instructions change the catalog's hash")
	}
	var buf bytes.Buffer
	if err := c.Write(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := Decode(&buf)
	if err != nil || len(back.Instructions) != 1 || back.Instructions[0] != c.Instructions[0] {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	buf.Reset()
	if err := old.Write(&buf); err != nil || strings.Contains(buf.String(), "instructions") {
		t.Errorf("a catalog without instructions writes %q, want no instructions key (%v)", buf.String(), err)
	}
}

// A catalog keeps each tool's definition as its file (or server) holds it:
// what mcp.Tool cannot hold (execution) and annotations left out are
// written back as they were, and SetRawTool takes only the definition the
// tool was parsed from, under the tool's name.
func TestRawToolsKept(t *testing.T) {
	const in = `{"tools": [{"name": "a", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}, "annotations": {"readOnlyHint": true}}]}`
	c, err := Decode(strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	if err := c.Write(&out); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"execution"`, `"taskSupport": "optional"`} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("written catalog lacks %s:\n%s", want, out.String())
		}
	}
	if strings.Contains(out.String(), "destructiveHint") {
		t.Errorf("written catalog fills in annotation defaults:\n%s", out.String())
	}

	served := &mcp.Tool{Name: "srv__a", InputSchema: map[string]any{"type": "object"}}
	c2 := &Catalog{Tools: []*mcp.Tool{served}}
	if err := c2.SetRawTool(served, json.RawMessage(`{"name": "a", "inputSchema": {"type": "object"}, "execution": {"taskSupport": "optional"}}`)); err != nil {
		t.Fatal(err)
	}
	raw, ok := c2.RawTool("srv__a")
	if !ok || !strings.Contains(string(raw), `"name":"srv__a"`) || !strings.Contains(string(raw), "taskSupport") {
		t.Errorf("RawTool(srv__a) = %s, %v; want the definition under the served name", raw, ok)
	}
	if err := c2.SetRawTool(served, json.RawMessage(`{"name": "a", "description": "another listing", "inputSchema": {"type": "object"}}`)); err == nil {
		t.Error("SetRawTool took a definition the tool was not parsed from")
	}
}
