// Package catalog loads and fingerprints tool catalogs: the result object of
// an MCP tools/list call, {"tools": [...]}, as recorded from a live server,
// optionally with the servers' instructions beside it ("instructions").
//
// A catalog stands in for a server that is not running: derive, bench and
// check work from the file (the gateway's CatalogUpstream lists it and runs
// nothing), so their answers do not depend on a live upstream. Hash is the
// fingerprint the gateway records with every session and derive writes into
// a generated profile file, tying figures to the tools they were measured
// against; it ignores tool order, which tools/list does not fix.
package catalog

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Catalog is an ordered list of tools, and what the servers that offer them
// say about themselves.
type Catalog struct {
	Tools []*mcp.Tool `json:"tools"`
	// Instructions are the servers' own instructions (their initialize
	// results'), in launch-document order; only servers that sent some.
	// A key beside "tools" that a plain tools/list result lacks: older
	// catalogs have none and read as servers without instructions. The
	// Hash covers the tools only.
	Instructions []ServerInstructions `json:"instructions,omitempty"`

	// raw holds, by name, tools' definitions as the file or the server
	// holds them: mcp.Tool drops what it does not know (execution) and
	// fills in annotation defaults, and a catalog prices what is served,
	// which is the server's own definition.
	raw map[string]json.RawMessage
}

// file is a catalog as encoded: the tools as raw definitions.
type file struct {
	Tools        []json.RawMessage    `json:"tools"`
	Instructions []ServerInstructions `json:"instructions,omitempty"`
}

// ServerInstructions are one server's instructions.
type ServerInstructions struct {
	Server       string `json:"server"` // its name in the launch document
	Instructions string `json:"instructions"`
}

// Load reads a catalog file.
func Load(path string) (*Catalog, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("open catalog: %w", err)
	}
	defer f.Close()
	c, err := Decode(f)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", path, err)
	}
	return c, nil
}

// Decode reads a catalog from r. Every tool must have a name, and no name may
// appear twice.
func Decode(r io.Reader) (*Catalog, error) {
	dec := json.NewDecoder(r)
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf(`decode: %w (want a tools/list result: {"tools": [...]})`, err)
	}
	if f.Tools == nil {
		return nil, fmt.Errorf(`no "tools" array (want a tools/list result: {"tools": [...]})`)
	}
	c := &Catalog{Tools: make([]*mcp.Tool, len(f.Tools)), Instructions: f.Instructions, raw: make(map[string]json.RawMessage, len(f.Tools))}
	seen := make(map[string]int, len(f.Tools))
	for i, raw := range f.Tools {
		var t *mcp.Tool
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tools[%d]: %w", i, err)
		}
		if t == nil || t.Name == "" {
			return nil, fmt.Errorf("tools[%d]: missing name", i)
		}
		if j, dup := seen[t.Name]; dup {
			return nil, fmt.Errorf("tools[%d]: name %q already used by tools[%d]", i, t.Name, j)
		}
		seen[t.Name] = i
		c.Tools[i] = t
		c.raw[t.Name] = raw
	}
	return c, nil
}

// RawTool is the definition of the tool called name as the catalog file
// (or the server it was recorded from) holds it.
func (c *Catalog) RawTool(name string) (json.RawMessage, bool) {
	raw, ok := c.raw[name]
	return raw, ok
}

// SetRawTool records raw, the server's own definition of t, to be written
// in t's place: with t's name (a catalog may name tools as a gateway
// serves them, server__tool), and only when it is the definition t was
// parsed from, so the file reads back as the same tools.
func (c *Catalog) SetRawTool(t *mcp.Tool, raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	var err error
	if obj["name"], err = json.Marshal(t.Name); err != nil {
		return err
	}
	named, err := json.Marshal(obj)
	if err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	var parsed mcp.Tool
	if err := json.Unmarshal(named, &parsed); err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	a, errA := json.Marshal(&parsed)
	b, errB := json.Marshal(t)
	if err := errors.Join(errA, errB); err != nil {
		return fmt.Errorf("tool %q: %w", t.Name, err)
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("tool %q: the definition given is not the one listed", t.Name)
	}
	if c.raw == nil {
		c.raw = make(map[string]json.RawMessage)
	}
	c.raw[t.Name] = named
	return nil
}

// Write encodes c as indented JSON, tools in the order given.
// A tool whose own definition is known (RawTool) is written as that
// definition.
func (c *Catalog) Write(w io.Writer) error {
	f := file{Tools: make([]json.RawMessage, len(c.Tools)), Instructions: c.Instructions}
	for i, t := range c.Tools {
		if raw, ok := c.raw[t.Name]; ok {
			f.Tools[i] = raw
			continue
		}
		b, err := json.Marshal(t)
		if err != nil {
			return fmt.Errorf("encode tool %q: %w", t.Name, err)
		}
		f.Tools[i] = b
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	return enc.Encode(f)
}

// Names returns the tool names in catalog order.
func (c *Catalog) Names() []string {
	names := make([]string, len(c.Tools))
	for i, t := range c.Tools {
		names[i] = t.Name
	}
	return names
}

// LoadNames returns the tool names of the catalogs at paths, as a set.
func LoadNames(paths []string) (map[string]bool, error) {
	known := map[string]bool{}
	for _, path := range paths {
		c, err := Load(path)
		if err != nil {
			return nil, err
		}
		for _, t := range c.Tools {
			known[t.Name] = true
		}
	}
	return known, nil
}

// Tool returns the tool called name, or nil.
func (c *Catalog) Tool(name string) *mcp.Tool {
	for _, t := range c.Tools {
		if t.Name == name {
			return t
		}
	}
	return nil
}

// Hash returns a fingerprint of the catalog that does not depend on tool
// order: "sha256:" and the hex digest of the tools' compact JSON, sorted by name.
func (c *Catalog) Hash() (string, error) {
	tools := slices.Clone(c.Tools)
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	h := sha256.New()
	for _, t := range tools {
		b, err := json.Marshal(t)
		if err != nil {
			return "", fmt.Errorf("hash tool %q: %w", t.Name, err)
		}
		h.Write(b)
		h.Write([]byte{'\n'})
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)), nil
}

// Equal reports whether two catalogs hold the same tools, in any order.
func Equal(a, b *Catalog) bool {
	ha, errA := a.Hash()
	hb, errB := b.Hash()
	return errA == nil && errB == nil && bytes.Equal([]byte(ha), []byte(hb))
}

// CheckReplace reports whether a catalog may be written to path: nothing
// is there, or a catalog is (Load reads it). Anything else, such as the
// launch document named as the output by a slip, would be lost.
func CheckReplace(path string) error {
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	defer f.Close()
	if _, err := Decode(f); err != nil {
		return fmt.Errorf("%s exists and is no catalog (%v), which writing would replace: remove it or name another file", path, err)
	}
	return nil
}
