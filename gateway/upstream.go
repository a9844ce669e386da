package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
)

// Upstream is what the gateway serves tools from. It is kept small so that a
// multiplexer over many upstream servers can implement it too.
type Upstream interface {
	// ListTools returns every tool the upstream offers (all pages).
	ListTools(ctx context.Context) ([]*mcp.Tool, error)
	// CallTool runs a tool with the arguments exactly as the client sent
	// them. An error that is a *jsonrpc.Error is the upstream's own JSON-RPC
	// error; any other error means the upstream could not be reached.
	CallTool(ctx context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error)
}

// unlistedOwner is implemented by an upstream of declared servers
// (upstream.Set): for a tool name the catalog lacks, whether a server that
// would own it is not ready, which makes the call upstream_unavailable
// rather than an unknown tool.
type unlistedOwner interface {
	Unavailable(tool string) error
}

// ClientUpstream is an upstream MCP server reached through an MCP client
// session.
type ClientUpstream struct {
	session *mcp.ClientSession
}

// NewClientUpstream connects to the MCP server at the other end of t (for a
// server started as a subprocess, an *mcp.CommandTransport).
func NewClientUpstream(ctx context.Context, t mcp.Transport) (*ClientUpstream, error) {
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "toolprof-gateway"}, nil).Connect(ctx, t, nil)
	if err != nil {
		return nil, fmt.Errorf("connect upstream: %w", err)
	}
	return &ClientUpstream{session: cs}, nil
}

// ListTools follows the upstream's tools/list pagination to the end.
func (u *ClientUpstream) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	var tools []*mcp.Tool
	for t, err := range u.session.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("list upstream tools: %w", err)
		}
		tools = append(tools, t)
	}
	return tools, nil
}

// CallTool forwards the call with its raw arguments; ctx is the client
// request's, so a cancelled request cancels the upstream call.
func (u *ClientUpstream) CallTool(ctx context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	var args any
	if len(params.Arguments) > 0 {
		args = params.Arguments // forwarded byte for byte
	}
	return u.session.CallTool(ctx, &mcp.CallToolParams{Name: params.Name, Arguments: args})
}

// ClientUpstreamName is the server name of a ClientUpstream's instructions.
const ClientUpstreamName = "upstream"

// Instructions are the server's instructions from its initialize result.
func (u *ClientUpstream) Instructions() []catalog.ServerInstructions {
	r := u.session.InitializeResult()
	if r == nil || r.Instructions == "" {
		return nil
	}
	return []catalog.ServerInstructions{{Server: ClientUpstreamName, Instructions: r.Instructions}}
}

// Close ends the session (and, for a command transport, the process).
func (u *ClientUpstream) Close() error {
	return u.session.Close()
}

// CatalogUpstream serves a recorded catalog: it lists the catalog's tools and
// cannot run any of them. The bench uses it to price catalogs with the same
// server code that serves live upstreams.
type CatalogUpstream struct {
	cat *catalog.Catalog
}

// NewCatalogUpstream serves cat.
func NewCatalogUpstream(cat *catalog.Catalog) *CatalogUpstream {
	return &CatalogUpstream{cat: cat}
}

// RawTool is the catalog's own definition of the tool called name, so a
// catalog is served as the server it was recorded from served it.
func (u *CatalogUpstream) RawTool(name string) (json.RawMessage, bool) {
	return u.cat.RawTool(name)
}

// ErrRecordedCatalog is returned by CatalogUpstream.CallTool.
var ErrRecordedCatalog = errors.New("upstream is a recorded catalog and cannot run tools")

// ListTools returns the catalog's tools, sorted by name as a live server
// would list them.
func (u *CatalogUpstream) ListTools(context.Context) ([]*mcp.Tool, error) {
	tools := slices.Clone(u.cat.Tools)
	slices.SortFunc(tools, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return tools, nil
}

// Instructions are the servers' instructions the catalog recorded.
func (u *CatalogUpstream) Instructions() []catalog.ServerInstructions {
	return slices.Clone(u.cat.Instructions)
}

// CallTool always fails with ErrRecordedCatalog, which the gateway answers
// with the upstream_unavailable envelope.
func (u *CatalogUpstream) CallTool(_ context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	return nil, fmt.Errorf("call %q: %w", params.Name, ErrRecordedCatalog)
}
