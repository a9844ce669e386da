package launch

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
)

// ErrNoServers is the error of a launch document that declares no server:
// there is nothing to start or serve.
var ErrNoServers = errors.New(`declares no servers (want {"mcpServers": {"NAME": {...}}})`)

// Version is the launch document version this package produces.
const Version = 1

// Transport says how toolprof reaches a server.
type Transport string

// The transports toolprof speaks. SSE is refused at decode time.
const (
	Stdio          Transport = "stdio"
	StreamableHTTP Transport = "streamable_http"
)

// Server is one declared upstream with its values as written: ${NAME}
// references are still templates.
type Server struct {
	Name      string            `json:"name" toml:"name"`
	Transport Transport         `json:"transport" toml:"transport"`
	Command   string            `json:"command,omitempty" toml:"command,omitempty"`
	Args      []string          `json:"args,omitempty" toml:"args,omitempty"`
	Env       map[string]string `json:"env,omitempty" toml:"env,omitempty"`
	Cwd       string            `json:"cwd,omitempty" toml:"cwd,omitempty"`
	URL       string            `json:"url,omitempty" toml:"url,omitempty"`
	Headers   map[string]string `json:"headers,omitempty" toml:"headers,omitempty"`
	// OAuth, when set, has toolprof authorize itself to an HTTP server.
	OAuth *OAuth `json:"oauth,omitempty" toml:"oauth,omitempty"`
	// Source is FILE:LINE of the entry, so later errors can point at it.
	Source string `json:"source" toml:"source"`

	dir string // directory of the declaring file, for a relative cwd
}

// Document is the merged launch document: every server toolprof starts.
type Document struct {
	Version int `json:"version" toml:"version"`
	// Separator joins server and tool names when several servers are
	// served; "" means the default, "__".
	Separator string   `json:"separator,omitempty" toml:"separator,omitempty"`
	Servers   []Server `json:"servers" toml:"servers"`
}

// PersonaDir is the directory, beside the pack file, that holds persona
// files named NAME.mcp.json.
const PersonaDir = "personas"

const personaSuffix = ".mcp.json"

// isPersonaName reports whether name can be a persona: a server-name-like
// word not starting with '.', so it cannot leave the persona directory.
func isPersonaName(name string) bool {
	return isServerName(name) && name[0] != '.'
}

// Load reads the pack file and, when persona is not empty, the persona file
// personas/PERSONA.mcp.json beside it, and merges them; a separator the
// persona sets wins over the pack's.
func Load(packPath, persona string) (*Document, error) {
	pack, err := ReadFileAll(packPath)
	if err != nil {
		return nil, err
	}
	var over File
	if persona != "" {
		path, err := PersonaPath(packPath, persona)
		if err != nil {
			return nil, err
		}
		if over, err = ReadFileAll(path); err != nil {
			return nil, err
		}
	}
	doc := Merge(pack.Servers, over.Servers)
	doc.Separator = cmp.Or(over.Separator, pack.Separator)
	return &doc, nil
}

// PersonaPath returns the file of the named persona, or an error listing
// the personas that exist when it does not.
func PersonaPath(packPath, persona string) (string, error) {
	known, err := Personas(packPath)
	if err != nil {
		return "", err
	}
	if isPersonaName(persona) && slices.Contains(known, persona) {
		return filepath.Join(filepath.Dir(packPath), PersonaDir, persona+personaSuffix), nil
	}
	dir := filepath.Join(filepath.Dir(packPath), PersonaDir)
	if len(known) == 0 {
		return "", fmt.Errorf("unknown persona %q: %s holds no *%s files", persona, dir, personaSuffix)
	}
	return "", fmt.Errorf("unknown persona %q: known personas in %s: %s", persona, dir, strings.Join(known, ", "))
}

// Personas lists, sorted, the persona names available beside packPath.
func Personas(packPath string) ([]string, error) {
	dir := filepath.Join(filepath.Dir(packPath), PersonaDir)
	entries, err := os.ReadDir(dir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list personas: %w", err)
	}
	var names []string
	for _, e := range entries {
		name, ok := strings.CutSuffix(e.Name(), personaSuffix)
		if ok && !e.IsDir() && isPersonaName(name) {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names, nil
}

// Merge lays persona servers over pack servers: a persona entry replaces the
// pack entry of the same name entirely. The result is sorted by name.
func Merge(pack, persona []Server) Document {
	byName := make(map[string]Server, len(pack)+len(persona))
	for _, s := range pack {
		byName[s.Name] = s
	}
	for _, s := range persona {
		byName[s.Name] = s
	}
	servers := make([]Server, 0, len(byName))
	for _, s := range byName {
		servers = append(servers, s)
	}
	slices.SortFunc(servers, func(a, b Server) int { return strings.Compare(a.Name, b.Name) })
	return Document{Version: Version, Servers: servers}
}
