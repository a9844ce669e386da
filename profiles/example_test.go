package profiles_test

import (
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/profiles"
)

// Load reads the generated file and the profiles.toml beside it; Resolve
// applies both to the tools the upstream offers. Here the policy pins a tool
// into core and denies one, and the destructive tool stays only in full.
func ExampleLoad() {
	dir, err := os.MkdirTemp("", "profiles-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	generated := `version = 1
default = "core"

[[profile]]
name = "core"
tools = ["read_file", "search"]

[[profile]]
name = "standard"
tools = ["delete_file", "read_file", "search", "write_file"]
`
	policy := `version = 1

[[profile]]
name = "core"
pin = ["list_dir"]
deny = ["search"]
`
	path := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(path, []byte(generated), 0o644); err != nil {
		log.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, profiles.PolicyFile), []byte(policy), 0o644); err != nil {
		log.Fatal(err)
	}

	set, err := profiles.Load(path)
	if err != nil {
		log.Fatal(err)
	}
	obj := map[string]any{"type": "object"}
	read := &mcp.ToolAnnotations{ReadOnlyHint: true}
	r, err := set.Resolve([]*mcp.Tool{
		{Name: "read_file", InputSchema: obj, Annotations: read},
		{Name: "list_dir", InputSchema: obj, Annotations: read},
		{Name: "search", InputSchema: obj, Annotations: read},
		{Name: "write_file", InputSchema: obj},
		{Name: "delete_file", InputSchema: obj, Annotations: &mcp.ToolAnnotations{DestructiveHint: new(true)}},
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("default:", r.Default)
	for _, name := range r.Order {
		fmt.Printf("%s: %s\n", name, strings.Join(r.Profiles[name].Tools, ", "))
	}
	for _, w := range r.Warnings { // they name the policy file; trim its temporary directory
		fmt.Println("warning:", strings.ReplaceAll(w, dir+string(os.PathSeparator), ""))
	}
	// Output:
	// default: core
	// core: list_dir, read_file
	// standard: read_file, search, write_file
	// full: delete_file, list_dir, read_file, search, write_file
	// warning: profile "standard" serves 3 of the 4 offered tools it names: the destructive rule removed delete_file (set allow_destructive = true under [[profile]] name = "standard" in profiles.toml to serve them)
}

// DecodeFile decodes strictly: an unknown key is an error naming the file,
// the line and the key.
func ExampleDecodeFile() {
	_, err := profiles.DecodeFile(strings.NewReader(`version = 1
default = "core"

[[profile]]
name = "core"
tool = ["read_file"]
`), "profiles.generated.toml")
	fmt.Println(err)
	// Output:
	// profiles.generated.toml:6: profile[0].tool: unknown key "tool" in profile[0]; valid keys: name, tools, instructions, groups, read_only, search, searchable, measured
}
