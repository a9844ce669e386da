package upstream

// The pass-through of what upstreams offer beyond tools and prompts lists:
// subscriptions, completion, logging levels and the capabilities the gateway
// advertises on their behalf.

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Capabilities is what the server advertised in its initialize result; nil
// when it has never connected.
func (c *Client) Capabilities() *mcp.ServerCapabilities {
	c.mu.Lock()
	cs := c.session
	c.mu.Unlock()
	if cs == nil {
		return nil
	}
	if r := cs.InitializeResult(); r != nil {
		return r.Capabilities
	}
	return nil
}

// Subscribe passes resources/subscribe through.
func (c *Client) Subscribe(ctx context.Context, params *mcp.SubscribeParams) error {
	_, err := pass(c, ctx, "resources/subscribe", func(cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Subscribe(ctx, forwardParams(params))
	})
	return err
}

// Unsubscribe passes resources/unsubscribe through.
func (c *Client) Unsubscribe(ctx context.Context, params *mcp.UnsubscribeParams) error {
	_, err := pass(c, ctx, "resources/unsubscribe", func(cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.Unsubscribe(ctx, forwardParams(params))
	})
	return err
}

// SetLoggingLevel passes logging/setLevel through.
func (c *Client) SetLoggingLevel(ctx context.Context, params *mcp.SetLoggingLevelParams) error {
	_, err := pass(c, ctx, "logging/setLevel", func(cs *mcp.ClientSession) (struct{}, error) {
		return struct{}{}, cs.SetLoggingLevel(ctx, forwardParams(params))
	})
	return err
}

// Capabilities is the union of the connected upstreams' capabilities: a
// feature is advertised when any upstream offers it (list_changed and
// subscribe when any offers them). Tools are always advertised, with
// list_changed, because the gateway serves tools and relays changes.
func (s *Set) Capabilities() *mcp.ServerCapabilities {
	out := &mcp.ServerCapabilities{Tools: &mcp.ToolCapabilities{ListChanged: true}}
	for _, c := range s.clients {
		caps := c.Capabilities()
		if caps == nil {
			continue
		}
		if caps.Logging != nil {
			out.Logging = &mcp.LoggingCapabilities{}
		}
		if caps.Completions != nil {
			out.Completions = &mcp.CompletionCapabilities{}
		}
		if p := caps.Prompts; p != nil {
			if out.Prompts == nil {
				out.Prompts = &mcp.PromptCapabilities{}
			}
			out.Prompts.ListChanged = out.Prompts.ListChanged || p.ListChanged
		}
		if r := caps.Resources; r != nil {
			if out.Resources == nil {
				out.Resources = &mcp.ResourceCapabilities{}
			}
			out.Resources.ListChanged = out.Resources.ListChanged || r.ListChanged
			out.Resources.Subscribe = out.Resources.Subscribe || r.Subscribe
		}
		if len(caps.Experimental) > 0 {
			if out.Experimental == nil {
				out.Experimental = map[string]any{}
			}
			for k, v := range caps.Experimental {
				if _, ok := out.Experimental[k]; !ok {
					out.Experimental[k] = v
				}
			}
		}
		if len(caps.Extensions) > 0 {
			if out.Extensions == nil {
				out.Extensions = map[string]any{}
			}
			maps.Copy(out.Extensions, caps.Extensions)
		}
	}
	return out
}

// ServerOf names the server a served tool name routes to ("" when none).
func (s *Set) ServerOf(tool string) string {
	c, _, ok := s.route(tool, knowsTool)
	if !ok {
		return ""
	}
	return c.Name()
}

// resourceClients are the servers to ask about uri: the one that listed it,
// else every server in name order.
func (s *Set) resourceClients(uri string) []*Client {
	s.mu.Lock()
	owner := s.resourceOwners[uri]
	s.mu.Unlock()
	if owner != nil {
		return []*Client{owner}
	}
	return s.clients
}

// Subscribe subscribes to uri at the server that lists it; for a URI no
// listing had, at every server that offers subscriptions, succeeding when
// one accepts. The server then sends updates through OnResourceUpdated.
func (s *Set) Subscribe(ctx context.Context, params *mcp.SubscribeParams) error {
	return s.eachResourceServer(ctx, params.URI, func(c *Client) error { return c.Subscribe(ctx, params) })
}

// Unsubscribe is Subscribe's inverse, sent to the same servers.
func (s *Set) Unsubscribe(ctx context.Context, params *mcp.UnsubscribeParams) error {
	return s.eachResourceServer(ctx, params.URI, func(c *Client) error { return c.Unsubscribe(ctx, params) })
}

func (s *Set) eachResourceServer(ctx context.Context, uri string, f func(*Client) error) error {
	var errs []error
	accepted := false
	for _, c := range s.resourceClients(uri) {
		if caps := c.Capabilities(); caps == nil || caps.Resources == nil || !caps.Resources.Subscribe {
			continue
		}
		if err := f(c); err != nil {
			if ctx.Err() != nil {
				return err
			}
			errs = append(errs, err)
			continue
		}
		accepted = true
	}
	if accepted {
		return nil
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no upstream offers subscriptions to %q", uri)}
}

// Complete routes completion/complete: a prompt reference by the prompt's
// served name, a resource template reference to each server offering
// completions in name order, the first answer winning.
func (s *Set) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if params == nil || params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete: missing ref"}
	}
	if params.Ref.Type == "ref/prompt" {
		c, name, ok := s.route(params.Ref.Name, func(*Client, string) bool { return true })
		if !ok {
			return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", params.Ref.Name)}
		}
		p := *params
		ref := *params.Ref
		ref.Name = name
		p.Ref = &ref
		return c.Complete(ctx, &p)
	}
	offers := func(c *Client) bool { caps := c.Capabilities(); return caps != nil && caps.Completions != nil }
	res, tried, err := firstAnswer(ctx, s.clients, offers, func(c *Client) (*mcp.CompleteResult, error) { return c.Complete(ctx, params) })
	if !tried {
		err = &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("no upstream completes %s %q", params.Ref.Type, strings.TrimSpace(params.Ref.URI+params.Ref.Name))}
	}
	return res, err
}

// SetLoggingLevel sets the level at every connected server that offers
// logging; it fails only when some server offers logging and none accepted.
func (s *Set) SetLoggingLevel(ctx context.Context, params *mcp.SetLoggingLevelParams) error {
	var errs []error
	accepted := false
	for _, c := range s.clients {
		if caps := c.Capabilities(); caps == nil || caps.Logging == nil {
			continue
		}
		if err := c.SetLoggingLevel(ctx, params); err != nil {
			errs = append(errs, err)
			continue
		}
		accepted = true
	}
	if accepted {
		return nil
	}
	return errors.Join(errs...)
}
