package gateway

// The served catalog and its refresh: when an upstream's tools
// change (its notifications/tools/list_changed, or a reconnection), the
// gateway lists the tools again, resolves the profiles against the new list
// (Options.Resolve) and replaces the whole catalog at once, so that a request
// sees one listing or the other, never a mix. Connected downstream sessions
// are then sent notifications/tools/list_changed.
//
// Two locks order this. One listing runs at a time (Gateway.listing, given
// up when the caller's context ends), and the listing is the only part that
// waits on upstreams. Resolving and swapping (Gateway.swapMu) never waits
// on an upstream: a profile reload (ProfilesChanged) resolves against the
// tools last listed and takes effect at once, even while a listing waits on
// an upstream that does not answer. Since resolving reads the profiles in
// force at that moment, a listing that ends after a reload resolves with
// the reloaded profiles.
//
// Sending it: the SDK's *mcp.Server sends list_changed only when its own
// tool set changes (AddTool, RemoveTools), and offers no public way to send
// it otherwise. The gateway registers no tools with the SDK (the middleware
// answers tools/list and tools/call), so it adds and at once removes one
// placeholder tool (listChangedProbe): the SDK debounces the two changes into
// one notification to every session, through its own routing (a legacy
// session's stream, or a 2026-07-28 session's subscriptions/listen). The
// placeholder never appears in tools/list and can never be called, since
// neither method reaches the SDK's tool table.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// catalogState is what one listing of the upstream's tools resolves to.
// It is never modified once stored.
type catalogState struct {
	resolved *profiles.Resolved
	list     []*mcp.Tool          // the upstream tools served, as listed: what a profile reload resolves against
	refused  []string             // why listed tools were left out (names.go), sorted: health warnings
	tools    map[string]*mcp.Tool // every upstream tool served, by name
	served   map[string]*mcp.Tool // the same as listed: with the effect in _meta
	listed   map[string][]string  // per profile, the tools listed and callable (sorted)
	hash     string
	explore  string // the profile exploration sessions get

	// servedRaw holds, for the tools whose server's own definition is
	// known (RawToolsUpstream), that definition as listed (rawtools.go).
	servedRaw map[string]json.RawMessage
	// rawWithoutIcons holds, for the tools of servedRaw with an "icons"
	// member, their definition without it (icons.go).
	rawWithoutIcons map[string]json.RawMessage
	search          *searchState // nil when no profile serves search (search.go)

	// joined maps each server of an upstream.Set whose tools list holds
	// to the session they were listed on (upstream.Listing.Connections);
	// health reports a ready server whose current session it is not as
	// joining. Held here so that it is swapped with the tools it describes.
	joined map[string]uint64
}

// connectionLister is an upstream of declared servers (upstream.Set)
// whose listing says which session of each server it holds the tools of.
type connectionLister interface {
	List(ctx context.Context) (*upstream.Listing, error)
}

// listUpstream lists u's tools and, for a connectionLister, the sessions
// they were listed on (nil otherwise).
func listUpstream(ctx context.Context, u Upstream) ([]*mcp.Tool, map[string]uint64, error) {
	if l, ok := u.(connectionLister); ok {
		listing, err := l.List(ctx)
		if err != nil {
			return nil, nil, err
		}
		return listing.Tools, listing.Connections, nil
	}
	list, err := u.ListTools(ctx)
	return list, nil, err
}

// cat is the current catalog.
func (g *Gateway) cat() *catalogState { return g.catalog.Load() }

// newCatalog resolves list, whose tools servableTools kept (refused says
// why it left out others) and which joined describes, into a catalog. The derived parts are computed
// by the Gateway's own methods on a scratch Gateway holding the partial
// catalog, so that they are the same code whether at start or on refresh.
func newCatalog(opts Options, logger *slog.Logger, list []*mcp.Tool, refused []string, resolved *profiles.Resolved, joined map[string]uint64) (*catalogState, error) {
	hash, err := (&catalog.Catalog{Tools: list}).Hash()
	if err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	st := &catalogState{resolved: resolved, list: list, refused: refused, tools: make(map[string]*mcp.Tool, len(list)), hash: hash, joined: joined}
	for _, t := range list {
		st.tools[t.Name] = t
	}
	st.served = servedTools(list, resolved)
	st.servedRaw = servedRaw(opts.Upstream, list, st.served)
	if st.rawWithoutIcons, err = rawWithoutIcons(st.servedRaw); err != nil {
		return nil, fmt.Errorf("gateway: %w", err)
	}
	if st.search, err = newSearchState(list, resolved); err != nil {
		return nil, err
	}
	scratch := &Gateway{opts: opts, logger: logger}
	scratch.catalog.Store(st)
	listed := scratch.listedTools()
	explore := scratch.explorationProfile()
	out := *st
	out.listed, out.explore = listed, explore
	return &out, nil
}

// listChangedProbe is the placeholder tool whose addition and removal make
// the SDK send notifications/tools/list_changed (see the file comment).
const listChangedProbe = "toolprof_list_changed_probe"

// ToolsChanged lists the upstream's tools again after server (a name in
// the launch document, for the log) said they changed, swaps in the
// re-resolved catalog and, when the served tools differ, notifies every
// connected session. A listing or resolution that fails, or a wait for an
// earlier listing that outlasts ctx, keeps the current catalog. A listing
// that leaves a ready upstream joining because its own listing failed is
// retried with backoff (relist.go).
func (g *Gateway) ToolsChanged(ctx context.Context, server string) {
	switch err := g.relistTools(ctx, server); {
	case errors.Is(err, errListingBusy):
		g.logger.Warn("tools changed but an earlier listing is still waiting on an upstream; serving the previous list", "server", server, "error", ctx.Err())
	case err != nil:
		g.logger.Warn("tools changed but could not be listed; serving the previous list", "server", server, "error", err)
	}
	g.relistLater()
}

// errListingBusy: the caller's context ended while an earlier listing held
// the listing token.
var errListingBusy = errors.New("an earlier listing is still waiting on an upstream")

// relistTools is ToolsChanged without its log and retry: the error says
// why the upstream was not listed (errListingBusy, or the listing's).
// Resolving and swapping log their own failures.
func (g *Gateway) relistTools(ctx context.Context, server string) error {
	select {
	case g.listing <- struct{}{}:
	case <-ctx.Done():
		return errListingBusy
	}
	defer func() { <-g.listing }()
	list, joined, err := listUpstream(ctx, g.opts.Upstream)
	if err != nil {
		return err
	}
	list, refused := servableTools(g.opts.Upstream, list)
	g.swapMu.Lock()
	defer g.swapMu.Unlock()
	g.swapCatalogLocked(server, list, refused, joined)
	return nil
}

// ProfilesChanged re-resolves the profiles (Options.Resolve) against the
// tools last listed, asking no upstream, and swaps the catalog as
// ToolsChanged does; source names what changed, for the log. A listing
// waiting on an upstream does not hold it up. The error says why the
// current catalog was kept: among others, Options.Profiles given without
// an Options.Resolve to resolve them again.
func (g *Gateway) ProfilesChanged(source string) error {
	g.swapMu.Lock()
	defer g.swapMu.Unlock()
	cat := g.cat()
	return g.swapCatalogLocked(source, cat.list, cat.refused, cat.joined)
}

// swapCatalogLocked resolves the profiles against list and swaps in the
// catalog, notifying sessions when what they are served changed; it keeps
// the current catalog, and says why, when that fails. Profiles given
// without a Resolve cannot be resolved again: serving every tool as "full"
// instead would serve what the profiles leave out, so the current catalog
// stays. It waits on no upstream; the caller holds swapMu.
func (g *Gateway) swapCatalogLocked(source string, list []*mcp.Tool, refused []string, joined map[string]uint64) error {
	var err error
	resolved := profiles.Full(list)
	switch {
	case g.opts.Resolve != nil:
		if resolved, err = g.opts.Resolve(list); err != nil {
			g.logger.Warn("tools changed but the profiles do not resolve against them; serving the previous list", "server", source, "error", err)
			return fmt.Errorf("gateway: %s: %w", source, err)
		}
	case g.opts.Profiles != nil:
		err := fmt.Errorf("gateway: %s changed, but Options.Profiles were given without an Options.Resolve to resolve them again; serving the previous list", source)
		g.logger.Warn("profiles cannot be resolved again; serving the previous list", "server", source, "error", err)
		return err
	}
	cat, err := newCatalog(g.opts, g.logger, list, refused, resolved, joined)
	if err != nil {
		g.logger.Warn("tools changed: serving the previous list", "server", source, "error", err)
		return err
	}
	old := g.catalog.Swap(cat)
	for _, w := range refused {
		if !slices.Contains(old.refused, w) {
			g.logger.Warn("upstream tool left out", "warning", w)
		}
	}
	if sameServed(old, cat) {
		return nil // a reconnection, or a reload, that serves the same tools
	}
	for _, w := range resolved.Warnings {
		if !slices.Contains(old.resolved.Warnings, w) {
			g.logger.Warn("profiles", "warning", w)
		}
	}
	g.notifyToolsChanged()
	return nil
}

// sameServed reports whether a and b list the same tools to every
// session: the same upstream tools, each profile listing the same names
// with the same effects, and the same groups offered. The hash alone is
// the upstream's listing: a profile reload changes what sessions list
// without changing it.
func sameServed(a, b *catalogState) bool {
	if a.hash != b.hash || !maps.EqualFunc(a.listed, b.listed, slices.Equal[[]string]) {
		return false
	}
	for name, t := range b.served {
		if at, ok := a.served[name]; !ok || at.Meta[MetaEffect] != t.Meta[MetaEffect] {
			return false
		}
	}
	for name, p := range b.resolved.Profiles {
		if ap, ok := a.resolved.Profiles[name]; !ok || !slices.Equal(ap.Groups, p.Groups) {
			return false
		}
	}
	if len(a.resolved.Groups) != len(b.resolved.Groups) {
		return false
	}
	for name, grp := range b.resolved.Groups {
		ag, ok := a.resolved.Groups[name]
		if !ok || ag.Description != grp.Description || !slices.Equal(ag.Tools, grp.Tools) {
			return false
		}
	}
	return true
}

// notifyToolsChanged sends notifications/tools/list_changed to every
// session of every server.
func (g *Gateway) notifyToolsChanged() {
	for _, s := range g.allServers() {
		s.AddTool(&mcp.Tool{Name: listChangedProbe, InputSchema: map[string]any{"type": "object"}},
			func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				return nil, fmt.Errorf("%s is not a tool", listChangedProbe)
			})
		s.RemoveTools(listChangedProbe)
	}
}

// The placeholders whose addition and removal make the SDK send
// prompts/list_changed and resources/list_changed (as listChangedProbe
// does for tools). prompts/list, resources/list and resources/read are
// answered by the middleware from the upstreams, so neither ever shows.
const (
	promptChangedProbe   = "toolprof_prompt_list_changed_probe"
	resourceChangedProbe = "toolprof:resource-list-changed-probe"
)

// PromptsChanged relays an upstream's notifications/prompts/list_changed to
// every connected session, when the gateway advertises prompts with
// listChanged (the union of the upstreams' capabilities at start).
func (g *Gateway) PromptsChanged(server string) {
	f, ok := g.features()
	if !ok {
		return
	}
	if caps := f.Capabilities(); caps == nil || caps.Prompts == nil || !caps.Prompts.ListChanged {
		return
	}
	for _, s := range g.allServers() {
		s.AddPrompt(&mcp.Prompt{Name: promptChangedProbe}, func(context.Context, *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
			return nil, fmt.Errorf("%s is not a prompt", promptChangedProbe)
		})
		s.RemovePrompts(promptChangedProbe)
	}
	g.logger.Debug("prompts changed", "server", server)
}

// ResourcesChanged is PromptsChanged for resources/list_changed.
func (g *Gateway) ResourcesChanged(server string) {
	f, ok := g.features()
	if !ok {
		return
	}
	if caps := f.Capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.ListChanged {
		return
	}
	for _, s := range g.allServers() {
		s.AddResource(&mcp.Resource{URI: resourceChangedProbe, Name: resourceChangedProbe}, func(context.Context, *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return nil, fmt.Errorf("%s is not a resource", resourceChangedProbe)
		})
		s.RemoveResources(resourceChangedProbe)
	}
	g.logger.Debug("resources changed", "server", server)
}

func (g *Gateway) allServers() []*mcp.Server {
	g.mu.Lock()
	defer g.mu.Unlock()
	servers := make([]*mcp.Server, 0, len(g.servers))
	for _, s := range g.servers {
		servers = append(servers, s)
	}
	return servers
}
