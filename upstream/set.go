package upstream

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/launch"
)

// DefaultSeparator joins a server's name and a tool or prompt name.
const DefaultSeparator = "__"

// SetOptions configure a Set.
type SetOptions struct {
	// Client configures every Client of the Set.
	Client Options
	// Separator joins server and tool names; "" means the launch
	// document's, else DefaultSeparator.
	Separator string
	// RequireAll makes StartSet fail when any server fails to start;
	// otherwise the others serve and the failed one keeps retrying.
	RequireAll bool
	// StartWait is how long StartSet waits for the first connection
	// attempts before it returns with the slower servers still
	// connecting (default 1s); they join when ready, through
	// Options.OnToolsChanged. With RequireAll StartSet waits for every
	// attempt.
	StartWait time.Duration
}

// Set is many upstreams served as one: it implements the gateway's Upstream
// interface (ListTools, CallTool).
type Set struct {
	clients    []*Client // sorted by server name
	sep        string
	namespaced bool

	mu             sync.Mutex
	shadowed       map[string][]string // server -> its tool names hidden by a collision
	listErrs       map[string]string   // server -> why its last tools/list failed while it was up
	resourceOwners map[string]*Client  // URI -> server, from the last ListResources
}

// StartSet connects every server of doc concurrently. A server that fails
// to start is reported in Health and retried in the background, unless
// opts.RequireAll, when StartSet closes everything and returns the errors.
// Without RequireAll it returns once every first attempt ended or after
// opts.StartWait, whichever comes first: a server hanging in initialize
// holds up neither the others nor the caller, and shows as connecting.
func StartSet(ctx context.Context, doc *launch.Resolved, opts SetOptions) (*Set, error) {
	if opts.StartWait <= 0 {
		opts.StartWait = time.Second
	}
	opts.Separator = cmp.Or(opts.Separator, doc.Separator, DefaultSeparator)
	servers := slices.Clone(doc.Servers)
	slices.SortFunc(servers, func(a, b launch.ResolvedServer) int { return strings.Compare(a.Name, b.Name) })
	s := &Set{sep: opts.Separator, namespaced: len(servers) > 1, shadowed: map[string][]string{}}
	for _, srv := range servers {
		s.clients = append(s.clients, NewClient(srv, opts.Client))
	}
	errs := make([]error, len(s.clients))
	var wg sync.WaitGroup
	attempt := ctx
	if !opts.RequireAll {
		// The first attempts may outlast this call: they end with Close
		// (or ConnectTimeout), not with the caller's context.
		attempt = context.WithoutCancel(ctx)
	}
	for i, c := range s.clients {
		wg.Go(func() { errs[i] = c.Start(attempt) })
	}
	if opts.RequireAll {
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			s.Close()
			return nil, fmt.Errorf("start upstreams (all required): %w", err)
		}
		return s, nil
	}
	started := make(chan struct{})
	go func() {
		wg.Wait()
		close(started)
	}()
	wait := time.NewTimer(opts.StartWait)
	defer wait.Stop()
	select {
	case <-started:
	case <-wait.C:
	case <-ctx.Done():
	}
	for _, c := range s.clients {
		c.announce.Store(true)
	}
	return s, nil
}

// Namespaced reports whether names carry their server's prefix.
func (s *Set) Namespaced() bool { return s.namespaced }

// Client returns the named server's Client, for the pass-through of
// resources and prompts.
func (s *Set) Client(name string) (*Client, bool) {
	for _, c := range s.clients {
		if c.Name() == name {
			return c, true
		}
	}
	return nil, false
}

// Clients returns the Clients sorted by server name.
func (s *Set) Clients() []*Client { return slices.Clone(s.clients) }

// Name is the name a server's tool or prompt is served under.
func (s *Set) Name(server, name string) string {
	if !s.namespaced {
		return name
	}
	return server + s.sep + name
}

// ListTools lists every upstream's tools under their served names. An
// upstream that is down, or that does not answer within its
// Options.ConnectTimeout, contributes the tools it last listed, so that
// calling them answers upstream_unavailable instead of the tools vanishing;
// one that never listed contributes none. A listing that failed while its
// upstream was up shows in Health (ListError) until one succeeds. It fails
// only when no upstream could be listed and none has listed before.
func (s *Set) ListTools(ctx context.Context) ([]*mcp.Tool, error) {
	l, err := s.List(ctx)
	if err != nil {
		return nil, err
	}
	return l.Tools, nil
}

// Listing is one listing of a Set's tools (List).
type Listing struct {
	Tools []*mcp.Tool // as ListTools returns them
	// Connections maps each server whose tools Tools holds to the session
	// they were listed on (Health.Connection): its current one when they
	// were listed now, an earlier one when its tools are those it last
	// listed. A server that contributes none is absent.
	Connections map[string]uint64
}

// List is ListTools saying which session of each server the tools come
// from: a server whose current session is not the one listed has tools
// the listing may not hold.
func (s *Set) List(ctx context.Context) (*Listing, error) {
	// Ask every upstream at once: a slow one delays the list by its own
	// time only, and no more than its ConnectTimeout. Merging below is in
	// name order, so the result is not.
	lists := make([][]*mcp.Tool, len(s.clients))
	conns := make([]uint64, len(s.clients))
	errs := make([]error, len(s.clients))
	var wg sync.WaitGroup
	for i, c := range s.clients {
		wg.Go(func() {
			lctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
			defer cancel()
			lists[i], conns[i], errs[i] = c.listTools(lctx)
			if errs[i] != nil && ctx.Err() == nil && errors.Is(lctx.Err(), context.DeadlineExceeded) {
				errs[i] = fmt.Errorf("upstream %q: tools/list not answered within %v (its connect timeout): %w", c.Name(), c.opts.ConnectTimeout, context.DeadlineExceeded)
			}
		})
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	var out []*mcp.Tool
	seen := map[string]bool{}
	shadowed := map[string][]string{}
	listErrs := map[string]string{}
	connections := map[string]uint64{}
	for i, c := range s.clients {
		tools, conn := lists[i], conns[i]
		if errs[i] != nil {
			// Unavailable on the session still open (a transient HTTP
			// status) is a listing failed while up, which the gateway
			// retries: it sends no tools/list_changed for it.
			if !errors.Is(errs[i], ErrUnavailable) || c.stillOn(conn) {
				listErrs[c.Name()] = errs[i].Error() // scrubbed by the Client
			}
			var ok bool
			if tools, conn, ok = c.knownTools(); !ok {
				continue
			}
		}
		connections[c.Name()] = conn
		for _, t := range tools {
			name := s.Name(c.Name(), t.Name)
			if seen[name] {
				shadowed[c.Name()] = append(shadowed[c.Name()], t.Name)
				continue
			}
			seen[name] = true
			if name != t.Name {
				renamed := *t
				renamed.Name = name
				t = &renamed
			}
			out = append(out, t)
		}
	}
	s.mu.Lock()
	s.shadowed, s.listErrs = shadowed, listErrs
	s.mu.Unlock()
	if len(connections) == 0 && len(s.clients) > 0 {
		return nil, errors.Join(errs...)
	}
	slices.SortFunc(out, func(a, b *mcp.Tool) int { return strings.Compare(a.Name, b.Name) })
	return &Listing{Tools: out, Connections: connections}, nil
}

// route finds the Client and upstream name behind a served name: the first
// server, in name order, whose prefix matches and that lists the tool, or
// else the first whose prefix matches (which then answers for itself).
func (s *Set) route(name string, has func(*Client, string) bool) (*Client, string, bool) {
	if !s.namespaced {
		if len(s.clients) == 0 {
			return nil, "", false
		}
		return s.clients[0], name, true
	}
	var fallback *Client
	var fallbackName string
	for _, c := range s.clients {
		rest, ok := strings.CutPrefix(name, c.Name()+s.sep)
		if !ok || rest == "" {
			continue
		}
		if has(c, rest) {
			return c, rest, true
		}
		if fallback == nil {
			fallback, fallbackName = c, rest
		}
	}
	return fallback, fallbackName, fallback != nil
}

func knowsTool(c *Client, name string) bool {
	tools, _ := c.KnownTools()
	return slices.ContainsFunc(tools, func(t *mcp.Tool) bool { return t.Name == name })
}

// Unavailable tells why a tool name that no listing holds cannot be
// called: the declared server that would own it (by its prefix, or the
// only server when names carry none) is not ready, and the error, which
// wraps ErrUnavailable, names it and its state. It is nil when no declared
// server can own the name or the owner is ready: the name is then unknown.
func (s *Set) Unavailable(tool string) error {
	c, _, ok := s.route(tool, knowsTool)
	if !ok {
		return nil
	}
	_, err := c.live()
	return err
}

// CallTool routes a call by its served name and forwards it with its raw
// arguments. Only the owning upstream's state matters: a crashed server
// fails its own tools with ErrUnavailable and no one else's. A name no
// server can own is the JSON-RPC invalid-params error an MCP server gives
// for an unknown tool.
func (s *Set) CallTool(ctx context.Context, params *mcp.CallToolParamsRaw) (*mcp.CallToolResult, error) {
	c, name, ok := s.route(params.Name, knowsTool)
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown tool %q", params.Name)}
	}
	p := *params
	p.Name = name
	return c.CallTool(ctx, &p)
}

// ListPrompts lists every upstream's prompts (all pages) under served
// names; an upstream that is down is skipped.
func (s *Set) ListPrompts(ctx context.Context) ([]*mcp.Prompt, error) {
	var out []*mcp.Prompt
	seen := map[string]bool{}
	err := eachListing(ctx, s.clients, func(c *Client, cursor string) ([]*mcp.Prompt, string, error) {
		res, err := c.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Prompts, res.NextCursor, nil
	}, func(c *Client, p *mcp.Prompt) {
		name := s.Name(c.Name(), p.Name)
		if seen[name] {
			return
		}
		seen[name] = true
		if name != p.Name {
			renamed := *p
			renamed.Name = name
			p = &renamed
		}
		out = append(out, p)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ListResources lists every upstream's resources (all pages). URIs are not
// namespaced: they are the upstream's own identifiers, also quoted inside
// tool results. When two servers list the same URI the one whose name sorts
// first serves it; an upstream that is down is skipped.
func (s *Set) ListResources(ctx context.Context) ([]*mcp.Resource, error) {
	var out []*mcp.Resource
	owners := map[string]*Client{}
	err := eachListing(ctx, s.clients, func(c *Client, cursor string) ([]*mcp.Resource, string, error) {
		res, err := c.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.Resources, res.NextCursor, nil
	}, func(c *Client, r *mcp.Resource) {
		if _, taken := owners[r.URI]; !taken {
			owners[r.URI] = c
			out = append(out, r)
		}
	})
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	s.resourceOwners = owners
	s.mu.Unlock()
	return out, nil
}

// ListResourceTemplates lists every upstream's resource templates (all
// pages), the first server in name order keeping a duplicated template.
func (s *Set) ListResourceTemplates(ctx context.Context) ([]*mcp.ResourceTemplate, error) {
	var out []*mcp.ResourceTemplate
	seen := map[string]bool{}
	err := eachListing(ctx, s.clients, func(c *Client, cursor string) ([]*mcp.ResourceTemplate, string, error) {
		res, err := c.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
		if err != nil {
			return nil, "", err
		}
		return res.ResourceTemplates, res.NextCursor, nil
	}, func(_ *Client, t *mcp.ResourceTemplate) {
		if !seen[t.URITemplate] {
			seen[t.URITemplate] = true
			out = append(out, t)
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachListing lists every page of each client's items in client (name)
// order and hands each item to keep. A client whose listing fails (it is
// down) is skipped; only the caller's context ending stops the whole.
func eachListing[T any](ctx context.Context, clients []*Client, page func(c *Client, cursor string) ([]T, string, error), keep func(*Client, T)) error {
	for _, c := range clients {
		items, err := allPages(ctx, func(cursor string) ([]T, string, error) { return page(c, cursor) })
		if err != nil {
			if ctx.Err() != nil {
				return err
			}
			continue
		}
		for _, it := range items {
			keep(c, it)
		}
	}
	return nil
}

// ReadResource reads a URI from the server that listed it in the last
// ListResources; a URI no listing had (one made from a template, say) is
// tried on each server in name order and the first answer wins. If none
// answers, the first server's error is returned.
func (s *Set) ReadResource(ctx context.Context, params *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	s.mu.Lock()
	owner := s.resourceOwners[params.URI]
	s.mu.Unlock()
	if owner != nil {
		return owner.ReadResource(ctx, params)
	}
	res, tried, err := firstAnswer(ctx, s.clients, nil, func(c *Client) (*mcp.ReadResourceResult, error) { return c.ReadResource(ctx, params) })
	if !tried {
		err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown resource %q", params.URI)}
	}
	return res, err
}

// firstAnswer asks each client that takes part (all when takesPart is
// nil), in order, and returns the first success. Otherwise it returns the
// first error, or the error that came as the caller's context ended; tried
// is false when no client was asked.
func firstAnswer[R any](ctx context.Context, clients []*Client, takesPart func(*Client) bool, ask func(*Client) (R, error)) (res R, tried bool, err error) {
	var first error
	for _, c := range clients {
		if takesPart != nil && !takesPart(c) {
			continue
		}
		tried = true
		r, err := ask(c)
		if err == nil {
			return r, true, nil
		}
		if ctx.Err() != nil {
			return res, true, err
		}
		if first == nil {
			first = err
		}
	}
	return res, tried, first
}

// GetPrompt routes prompts/get by served name.
func (s *Set) GetPrompt(ctx context.Context, params *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	c, name, ok := s.route(params.Name, func(*Client, string) bool { return true })
	if !ok {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", params.Name)}
	}
	p := *params
	p.Name = name
	return c.GetPrompt(ctx, &p)
}

func allPages[T any](ctx context.Context, page func(cursor string) ([]T, string, error)) ([]T, error) {
	var out []T
	cursor := ""
	// Every cursor seen, not only the last: an upstream whose cursors cycle
	// (a -> b -> a) would otherwise be paged forever, the list growing.
	seen := map[string]bool{"": true}
	for {
		items, next, err := page(cursor)
		if err != nil {
			return nil, err
		}
		out = append(out, items...)
		if next == "" {
			return out, nil
		}
		if seen[next] {
			return nil, fmt.Errorf("upstream repeated cursor %q", next)
		}
		seen[next] = true
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		cursor = next
	}
}

// Health reports every upstream, sorted by name, with the tools the last
// ListTools hid because of a name collision.
func (s *Set) Health() []Health {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]Health, 0, len(s.clients))
	for _, c := range s.clients {
		h := c.Health()
		h.Shadowed = slices.Clone(s.shadowed[c.Name()])
		h.ListError = s.listErrs[c.Name()]
		out = append(out, h)
	}
	return out
}

// Close closes every upstream.
func (s *Set) Close() error {
	errs := make([]error, len(s.clients))
	var wg sync.WaitGroup
	for i, c := range s.clients {
		wg.Go(func() { errs[i] = c.Close() })
	}
	wg.Wait()
	return errors.Join(errs...)
}
