package launch

import (
	"strings"
	"testing"
)

// FuzzDecode: any launch document either decodes into servers that resolve
// (or fail to, with an error) or fails with an error naming the file; it
// never panics.
func FuzzDecode(f *testing.F) {
	f.Add([]byte(packJSON))
	f.Add([]byte(`{"mcpServers": {"s": {"type": "http", "url": "https://x.example/mcp", "headers": {"Authorization": "Bearer ${TOKEN}"}}}}`))
	f.Add([]byte(`{"mcpServers": {"s": {"type": "sse", "url": "http://x"}}}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "c", "env": {"K": "${HOME:-x}"}, "cwd": "sub"}}, "extra": 1}`))
	f.Add([]byte(`{"mcpServers": {"a": {"command": "c"}, "a": {"command": "d"}}}`))
	const name = "fuzz.mcp.json"
	f.Fuzz(func(t *testing.T, data []byte) {
		servers, err := Decode(name, data)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		doc := Merge(servers, nil)
		lookup := func(v string) (string, bool) { return "value-of-" + v, v != "UNSET" }
		if _, err := doc.Resolve(lookup); err != nil && err.Error() == "" {
			t.Fatal("empty resolve error")
		}
	})
}
