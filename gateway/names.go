package gateway

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/visible"
)

// Bounds on what a client names that telemetry stores: a tool name no
// upstream offers, and the client's name and version from its handshake,
// are the client's own strings, stored with every call or session. A tool
// name an upstream offers is stored as is: servableTools bounds it when
// the catalog is built.
const (
	maxUnknownToolName = 128 // bytes of a tool name no upstream offers
	maxClientField     = 256 // bytes of clientInfo.name, clientInfo.version, protocolVersion
)

// maxToolName bounds, in bytes, the served name of an upstream's tool. The
// MCP specification recommends names of 1 to 128 characters; the rest is
// room for the server name and separator a launch document puts before it.
const maxToolName = 256

// shownToolName bounds, in bytes, how much of a refused name a warning quotes.
const shownToolName = 64

// toolNameProblem says why an upstream's tool name cannot be served, or
// returns "" when it can. A served name reaches span names, metric
// attributes, telemetry and the log: it must be bounded, valid UTF-8 and
// free of control characters (a terminal escape, a line break forging a
// log line) and of format characters (bidirectional overrides and
// zero-width characters, which make one name look like another). Other
// characters outside the specification's recommended [A-Za-z0-9_.-] are
// served, as the specification only recommends it.
func toolNameProblem(name string) string {
	switch {
	case name == "":
		return "it is empty"
	case len(name) > maxToolName:
		return fmt.Sprintf("it is %d bytes long, over the %d a name may have", len(name), maxToolName)
	case !utf8.ValidString(name):
		return "it is not valid UTF-8"
	}
	for _, r := range name {
		if unicode.IsControl(r) || unicode.Is(unicode.Cf, r) {
			return fmt.Sprintf("it holds the control or format character %U", r)
		}
	}
	return ""
}

// servableTools returns the tools of list whose names can be served
// (toolNameProblem), and, for each tool left out, a warning naming its
// upstream (when up tells it) and a quoted, cut form of its name. A name
// left out is unknown to the gateway: it is neither listed nor callable.
// list is returned as is when every name can be served.
func servableTools(up Upstream, list []*mcp.Tool) ([]*mcp.Tool, []string) {
	if !slices.ContainsFunc(list, func(t *mcp.Tool) bool { return toolNameProblem(t.Name) != "" }) {
		return list, nil
	}
	owner, _ := up.(interface{ ServerOf(tool string) string })
	kept := make([]*mcp.Tool, 0, len(list))
	var refused []string
	for _, t := range list {
		problem := toolNameProblem(t.Name)
		if problem == "" {
			kept = append(kept, t)
			continue
		}
		from := "the upstream"
		if owner != nil {
			if s := owner.ServerOf(t.Name); s != "" {
				from = fmt.Sprintf("upstream %q", s)
			}
		}
		refused = append(refused, fmt.Sprintf("%s offers a tool named %q, left out (neither listed nor callable): %s", from, boundName(t.Name, shownToolName), problem))
	}
	slices.Sort(refused)
	return kept, slices.Compact(refused)
}

// storedName is what telemetry and observers get of a name a client
// chose (a tool no upstream offers, clientInfo, the protocol version): its
// control and format characters written as escapes (visible.String), so
// that no reader (a terminal, a pull request, a dashboard) is handed an
// escape sequence or a carriage return, bounded as boundName bounds it.
func storedName(s string, max int) string { return boundName(visible.String(s), max) }

// ServableTools is servableTools for a caller that records what the
// gateway would serve (profiler catalog): the tools of list up's names
// allow serving, and a warning for each tool left out.
func ServableTools(up Upstream, list []*mcp.Tool) ([]*mcp.Tool, []string) {
	return servableTools(up, list)
}

// boundName returns s when it has at most max bytes. A longer s is cut to
// at most max bytes at a rune boundary and followed by "…" and 16 hex
// digits of the SHA-256 of the rest, so long names that differ after the
// cut stay apart in telemetry.
func boundName(s string, max int) string {
	if len(s) <= max {
		return s
	}
	cut := max
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	sum := sha256.Sum256([]byte(s[cut:]))
	return s[:cut] + "…" + hex.EncodeToString(sum[:8])
}
