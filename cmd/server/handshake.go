package main

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/price"
)

// handshakeBudget limits what the served profile's initialize + tools/list
// exchange may cost; 0 is no limit.
type handshakeBudget struct {
	tokens int // o200k_base tokens of the model measure (--max-handshake-tokens)
	bytes  int // bytes on the wire (--max-handshake-bytes)
}

func (b handshakeBudget) set() bool { return b.tokens > 0 || b.bytes > 0 }

// largestShown is how many of the largest tools an over-budget error names.
const largestShown = 5

// measureOnly hides the upstream's Close from the measuring gateway, whose
// Close would otherwise end the upstream the serving gateway still uses.
type measureOnly struct{ gateway.Upstream }

// checkHandshake measures the exchange a client of profile sees (the
// instructions, operating context summary included, and one tools/list
// without a cursor, as most clients send) through a second gateway built
// from opts that records nothing, with the measuring client of package exchange.
// Over budget it returns an error naming the figure, the budget and the
// largest tools by tokens; within it writes the headroom to stderr.
func checkHandshake(ctx context.Context, opts gateway.Options, profile string, b handshakeBudget, stderr io.Writer) error {
	opts.Recorder = nil
	opts.Explore = 0 // measure the profile itself, never the exploration one
	opts.Upstream = measureOnly{opts.Upstream}
	opts.Logger = nil // the serving gateway logs the profile warnings, once
	g, err := gateway.New(ctx, opts)
	if err != nil {
		return fmt.Errorf("measure handshake: %w", err)
	}
	defer g.Close()
	srv, err := g.Server(profile)
	if err != nil {
		return fmt.Errorf("measure handshake: %w", err)
	}
	counter, err := price.NewCounter()
	if err != nil {
		return fmt.Errorf("measure handshake: %w", err)
	}
	ex, err := exchange.Measure(ctx, srv, exchange.Options{Counter: counter})
	if err != nil {
		return fmt.Errorf("measure handshake of profile %q: %w", profile, err)
	}
	model, err := exchange.ModelMeasure(ex, counter)
	if err != nil {
		return fmt.Errorf("measure handshake of profile %q: %w", profile, err)
	}
	figures := []struct {
		flag, unit   string
		used, budget int
	}{
		{"--max-handshake-tokens", fmt.Sprintf("%s tokens in the model measure (%s; %d on the wire)", price.O200kBase, price.DefaultFamily, ex.Tokens[price.O200kBase]),
			model[price.DefaultFamily].Total[price.O200kBase], b.tokens},
		{"--max-handshake-bytes", "bytes", ex.Bytes, b.bytes},
	}
	var over []string
	for _, f := range figures {
		if f.budget > 0 && f.used > f.budget {
			over = append(over, fmt.Sprintf("%d %s, %d over the budget of %d (%s)", f.used, f.unit, f.used-f.budget, f.budget, f.flag))
		}
	}
	if len(over) > 0 {
		largest, err := largestTools(ex, counter)
		if err != nil {
			return err
		}
		return fmt.Errorf("handshake of profile %q (initialize + tools/list, %d tools) costs %s; largest tools by %s tokens: %s; serve a smaller profile (--profile) or raise the budget",
			profile, len(ex.Tools), strings.Join(over, " and "), price.O200kBase, largest)
	}
	for _, f := range figures {
		if f.budget > 0 {
			fmt.Fprintf(stderr, "server: handshake of profile %q costs %d %s of a budget of %d (%s): headroom %d\n",
				profile, f.used, f.unit, f.budget, f.flag, f.budget-f.used)
		}
	}
	return nil
}

// largestTools names the exchange's largest tool entries by o200k tokens,
// with their figures.
func largestTools(ex *exchange.Exchange, c *price.Counter) (string, error) {
	costs, err := exchange.ToolCosts(ex.Tools, c)
	if err != nil {
		return "", fmt.Errorf("measure handshake: %w", err)
	}
	slices.SortStableFunc(costs, func(a, b exchange.ToolCost) int {
		return cmp.Or(cmp.Compare(b.Tokens[price.O200kBase], a.Tokens[price.O200kBase]), strings.Compare(a.Name, b.Name))
	})
	var parts []string
	for _, c := range costs[:min(largestShown, len(costs))] {
		parts = append(parts, fmt.Sprintf("%s (%d)", c.Name, c.Tokens[price.O200kBase]))
	}
	if len(parts) == 0 {
		return "none (the profile lists no tools)", nil
	}
	return strings.Join(parts, ", "), nil
}
