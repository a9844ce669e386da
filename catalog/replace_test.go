package catalog

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestCheckReplace: a catalog may replace nothing or an earlier catalog,
// never another file, such as the launch document it was recorded from.
func TestCheckReplace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	launch := write(".mcp.json", `{"mcpServers": {"files": {"command": "npx", "args": ["-y", "pkg"]}}}`)
	earlier := write("catalog.json", `{"tools": [{"name": "read_file", "inputSchema": {"type": "object"}}]}`)
	for _, c := range []struct {
		name, path, want string // want: "" for valid
	}{
		{"the launch document", launch, launch + " exists and is no catalog"},
		{"an earlier catalog", earlier, ""},
		{"nothing there", filepath.Join(dir, "new.json"), ""},
	} {
		err := CheckReplace(c.path)
		if (c.want == "") != (err == nil) || c.want != "" && !strings.HasPrefix(err.Error(), c.want) {
			t.Errorf("%s: CheckReplace = %v, want %q", c.name, err, c.want)
		}
	}
}
