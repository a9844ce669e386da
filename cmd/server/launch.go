package main

// Upstreams: every server of a launch document (--launch FILE
// [--persona NAME]), or the one command after --, started through
// upstream.Set so that all of them get restarts with backoff, per-upstream
// health and the full pass-through (progress, logs, elicitation, sampling,
// resource updates, tool list changes) relayed by the gateway.
//
// Exit status: a launch document that cannot be used (a missing or malformed
// file, an unknown persona, an "sse" entry, an unresolved ${VAR}) exits 1,
// like a bad profiles file: 2 is kept for a command line that is wrong in
// itself, and the cure for these is in the file or the environment, which
// the error names (file and line, server, field and variable), never a
// resolved value.

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"sync/atomic"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/otelmcp"
	"github.com/toolprof/toolprof/upstream"
)

// shorthandName is the server name of the upstream started by -- CMD ARGS.
const shorthandName = "upstream"

// gatewayRef lets the upstreams' callbacks, which exist before the gateway
// does, reach it once it is built. Until then what upstreams send is
// dropped: no downstream session exists to receive it.
type gatewayRef struct {
	g    atomic.Pointer[gateway.Gateway]
	otel *otelmcp.Exporter // traces what is sent upstream; nil: export off
}

func (r *gatewayRef) options(o upstream.Options) upstream.Options {
	if r.otel != nil {
		o.SendingMiddleware = r.otel.UpstreamMiddleware()
		o.OnRequestID = r.otel.UpstreamRequestID
	}
	o.OnProgress = func(ctx context.Context, server string, p *mcp.ProgressNotificationParams) {
		if g := r.g.Load(); g != nil {
			g.Progress(ctx, server, p)
		}
	}
	o.OnLog = func(ctx context.Context, server string, p *mcp.LoggingMessageParams) {
		if g := r.g.Load(); g != nil {
			g.Log(ctx, server, p)
		}
	}
	o.OnResourceUpdated = func(ctx context.Context, server string, p *mcp.ResourceUpdatedNotificationParams) {
		if g := r.g.Load(); g != nil {
			g.ResourceUpdated(ctx, server, p)
		}
	}
	o.OnElicit = func(ctx context.Context, server string, p *mcp.ElicitParams) (*mcp.ElicitResult, error) {
		g := r.g.Load()
		if g == nil {
			return nil, fmt.Errorf("elicitation from upstream %q before the gateway serves", server)
		}
		return g.Elicit(ctx, server, p)
	}
	o.OnCreateMessage = func(ctx context.Context, server string, p *mcp.CreateMessageParams) (*mcp.CreateMessageResult, error) {
		g := r.g.Load()
		if g == nil {
			return nil, fmt.Errorf("sampling request from upstream %q before the gateway serves", server)
		}
		return g.CreateMessage(ctx, server, p)
	}
	o.OnPromptsChanged = func(server string) {
		if g := r.g.Load(); g != nil {
			g.PromptsChanged(server)
		}
	}
	o.OnResourcesChanged = func(server string) {
		if g := r.g.Load(); g != nil {
			g.ResourcesChanged(server)
		}
	}
	o.OnReconnected = func(server string) {
		if g := r.g.Load(); g != nil {
			g.Reconnected(context.Background(), server)
		}
	}
	o.OnToolsChanged = func(server string) {
		if g := r.g.Load(); g != nil {
			g.ToolsChanged(context.Background(), server)
		}
	}
	return o
}

// launchDocument is the resolved launch document to start: the --launch
// file merged with its persona, or the -- CMD ARGS shorthand as a single
// stdio server.
func launchDocument(c *config) (*launch.Resolved, error) {
	if c.launchPath == "" {
		return &launch.Resolved{Version: launch.Version, Servers: []launch.ResolvedServer{{
			Name: shorthandName, Transport: launch.Stdio, Command: c.upstream[0], Args: c.upstream[1:],
		}}}, nil
	}
	doc, err := launch.Load(c.launchPath, c.persona)
	if err != nil {
		return nil, fmt.Errorf("--launch %s: %w", c.launchPath, err)
	}
	if len(doc.Servers) == 0 {
		return nil, fmt.Errorf("--launch %s: %w", c.launchPath, launch.ErrNoServers)
	}
	resolved, err := doc.Resolve(os.LookupEnv)
	if err != nil {
		return nil, fmt.Errorf("--launch %s: %w", c.launchPath, err)
	}
	return resolved, nil
}

// startUpstreams starts every upstream. A server that fails to start is
// reported on stderr (scrubbed) and keeps being retried while the others
// serve, unless --require-all; the single upstream of -- CMD ARGS must
// start, since nothing else could be served.
func startUpstreams(ctx context.Context, c *config, ref *gatewayRef, logger *slog.Logger, stderr io.Writer) (*upstream.Set, error) {
	doc, err := launchDocument(c)
	if err != nil {
		return nil, err
	}
	opts := upstream.SetOptions{
		Client: ref.options(upstream.Options{
			Implementation: &mcp.Implementation{Name: version.Name, Version: version.Version},
			// On 2026-07-28 an upstream may not send elicitation and
			// sampling requests at all (it returns input requests instead,
			// which pass through too).
			ProtocolVersion: upstream.ProtocolVersion,
			Stderr:          stderr,
			Logger:          logger,
		}),
		RequireAll: c.requireAll || c.launchPath == "",
	}
	if opts.Client, err = withOAuth(c, doc, opts.Client); err != nil {
		return nil, err
	}
	if c.launchPath == "" {
		// The command was typed on this command line, as to a shell: it
		// gets the whole environment. Servers of a launch document get only
		// upstream.DefaultInheritEnv and what their entry declares.
		opts.Client.InheritEnv = environNames()
	}
	set, err := upstream.StartSet(ctx, doc, opts)
	if err != nil {
		if c.launchPath == "" {
			return nil, fmt.Errorf("start upstream %q: %w", strings.Join(c.upstream, " "), err)
		}
		return nil, fmt.Errorf("--launch %s: %w", c.launchPath, err)
	}
	for _, h := range set.Health() {
		switch h.State {
		case upstream.StateConnecting:
			fmt.Fprintf(stderr, "server: upstream %q is still connecting; serving the others, its tools join when it is ready\n", h.Name)
		case upstream.StateReady:
		case upstream.StateNeedsLogin:
			fmt.Fprintf(stderr, "server: %s; serving the others, its tools join once tokens are stored\n", h.LastError)
		default:
			fmt.Fprintf(stderr, "server: upstream %q did not start (%s); serving the others and retrying it with backoff\n", h.Name, h.LastError)
		}
	}
	return set, nil
}

// environNames are the names of every variable in the environment.
func environNames() []string {
	names := []string{}
	for _, kv := range os.Environ() {
		if k, _, ok := strings.Cut(kv, "="); ok && k != "" {
			names = append(names, k)
		}
	}
	return names
}
