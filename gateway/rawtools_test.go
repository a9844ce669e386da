package gateway

import (
	"encoding/json"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestRawServed: the served definition is the server's own, renamed as
// served, with the effect added to its _meta and the server's _meta keys
// kept; a definition that is not the one the tool was parsed from is
// refused (the parsed tool is served then).
func TestRawServed(t *testing.T) {
	parse := func(raw string) *mcp.Tool {
		var tool mcp.Tool
		if err := json.Unmarshal([]byte(raw), &tool); err != nil {
			t.Fatal(err)
		}
		return &tool
	}
	const def = `{"name":"read","inputSchema":{"type":"object"},"execution":{"taskSupport":"optional"},"annotations":{"readOnlyHint":true},"_meta":{"vendor/x":1}}`
	cases := []struct {
		name    string
		raw     string
		tool    *mcp.Tool
		served  string // the served name
		want    string
		wantErr bool
	}{
		{name: "as listed, _meta merged", raw: def, tool: parse(def), served: "read",
			want: `{"_meta":{"toolprof/effect":"read","vendor/x":1},"annotations":{"readOnlyHint":true},"execution":{"taskSupport":"optional"},"inputSchema":{"type":"object"},"name":"read"}`},
		{name: "renamed as served", raw: `{"name":"read","inputSchema":{"type":"object"}}`, tool: parse(`{"name":"read","inputSchema":{"type":"object"}}`), served: "fs__read",
			want: `{"_meta":{"toolprof/effect":"read"},"inputSchema":{"type":"object"},"name":"fs__read"}`},
		{name: "another listing's definition", raw: def, tool: parse(`{"name":"read","description":"changed","inputSchema":{"type":"object"}}`), served: "read", wantErr: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tool := *c.tool
			tool.Name = c.served
			got, err := rawServed(json.RawMessage(c.raw), &tool, "read")
			if (err != nil) != c.wantErr {
				t.Fatalf("err %v, want error %v", err, c.wantErr)
			}
			if !c.wantErr && string(got) != c.want {
				t.Errorf("served\n%s\nwant\n%s", got, c.want)
			}
		})
	}
}
