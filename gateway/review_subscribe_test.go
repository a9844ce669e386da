package gateway

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// subscribeFake is a fake upstream (named as one: the ordering below needs
// an upstream whose unsubscribe can be held mid-flight) that offers tools
// from a recorded catalog and resource subscriptions, and records whether
// the upstream is subscribed to each URI.
type subscribeFake struct {
	*CatalogUpstream
	mu         sync.Mutex
	subscribed map[string]bool
	unsubHeld  chan struct{} // closed by the test to let an Unsubscribe finish
	unsubBegun chan struct{} // receives when an Unsubscribe has begun
}

func (f *subscribeFake) Capabilities() *mcp.ServerCapabilities {
	return &mcp.ServerCapabilities{Resources: &mcp.ResourceCapabilities{Subscribe: true}}
}
func (f *subscribeFake) ListResources(context.Context) ([]*mcp.Resource, error) { return nil, nil }
func (f *subscribeFake) ListResourceTemplates(context.Context) ([]*mcp.ResourceTemplate, error) {
	return nil, nil
}
func (f *subscribeFake) ReadResource(context.Context, *mcp.ReadResourceParams) (*mcp.ReadResourceResult, error) {
	return &mcp.ReadResourceResult{}, nil
}
func (f *subscribeFake) Subscribe(_ context.Context, p *mcp.SubscribeParams) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribed[p.URI] = true
	return nil
}
func (f *subscribeFake) Unsubscribe(_ context.Context, p *mcp.UnsubscribeParams) error {
	f.unsubBegun <- struct{}{}
	<-f.unsubHeld
	f.mu.Lock()
	defer f.mu.Unlock()
	f.subscribed[p.URI] = false
	return nil
}
func (f *subscribeFake) ListPrompts(context.Context) ([]*mcp.Prompt, error) { return nil, nil }
func (f *subscribeFake) GetPrompt(context.Context, *mcp.GetPromptParams) (*mcp.GetPromptResult, error) {
	return &mcp.GetPromptResult{}, nil
}
func (f *subscribeFake) Complete(context.Context, *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	return &mcp.CompleteResult{}, nil
}
func (f *subscribeFake) SetLoggingLevel(context.Context, *mcp.SetLoggingLevelParams) error {
	return nil
}

// A session that subscribes to a URI while the last other subscriber's
// unsubscribe is still on its way upstream must end up subscribed
// upstream: otherwise it never hears of the resource's updates.
func TestSubscribeDuringLastUnsubscribe(t *testing.T) {
	f := &subscribeFake{
		CatalogUpstream: NewCatalogUpstream(everythingCatalog()),
		subscribed:      map[string]bool{},
		unsubHeld:       make(chan struct{}),
		unsubBegun:      make(chan struct{}, 1),
	}
	g := newGateway(t, Options{Upstream: f})
	a, b := connectProtocol(t, g, "", "2025-11-25", nil), connectProtocol(t, g, "", "2025-11-25", nil)
	ctx := context.Background()
	const uri = "test://r"
	if err := a.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}); err != nil {
		t.Fatal(err)
	}
	unsubDone := make(chan error, 1)
	go func() { unsubDone <- a.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri}) }()
	<-f.unsubBegun // a's unsubscribe is upstream now
	subDone := make(chan error, 1)
	go func() { subDone <- b.Subscribe(ctx, &mcp.SubscribeParams{URI: uri}) }()
	// Either b's subscribe waits for the unsubscribe (the fix), or it
	// completes now, before it (the defect); give it the chance to.
	select {
	case err := <-subDone:
		subDone <- err
	case <-time.After(200 * time.Millisecond):
	}
	close(f.unsubHeld)
	if err := <-unsubDone; err != nil {
		t.Fatal(err)
	}
	if err := <-subDone; err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.subscribed[uri] {
		t.Errorf("upstream not subscribed to %s while session b is", uri)
	}
}
