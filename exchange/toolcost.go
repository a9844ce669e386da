package exchange

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/price"
)

// ToolCost is what one tool's own entry in a tools/list result costs: its
// compact JSON exactly as the server encodes it, without the separating comma.
type ToolCost struct {
	Name   string         `json:"name"`
	Bytes  int            `json:"bytes"`
	Tokens map[string]int `json:"tokens"`
	// Model is the o200k_base tokens of the entry in each family's model
	// measure (price.EncodeTool): what derive sums and minimises.
	Model map[price.Family]int `json:"model_o200k"`
}

// ToolCosts returns the cost of each tool's entry, in the order given.
func ToolCosts(tools []*mcp.Tool, c *price.Counter) ([]ToolCost, error) {
	costs := make([]ToolCost, 0, len(tools))
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("tool cost: tools[%d] is nil", i)
		}
		b, err := EncodeAsServed(t)
		if err != nil {
			return nil, fmt.Errorf("tool cost %q: encode: %w", t.Name, err)
		}
		tokens, err := c.Count(string(b))
		if err != nil {
			return nil, fmt.Errorf("tool cost %q: %w", t.Name, err)
		}
		costs = append(costs, ToolCost{Name: t.Name, Bytes: len(b), Tokens: tokens})
	}
	return costs, nil
}

// EncodeAsServed encodes v as the go-sdk's JSON-RPC layer encodes results:
// compact, without HTML escaping, so the bytes are the entry as it travels.
func EncodeAsServed(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte{'\n'}), nil
}

// ServedToolCosts prices the tools srv lists to a client in one tools/list
// without cursor, entry by entry as served: with whatever the
// server adds to the upstream's tools, such as the gateway's effect _meta.
// The derivation should price profiles on these, not on the raw catalog.
func ServedToolCosts(ctx context.Context, srv *mcp.Server, c *price.Counter) ([]ToolCost, error) {
	ex, err := Measure(ctx, srv, Options{Counter: c})
	if err != nil {
		return nil, fmt.Errorf("served tool costs: %w", err)
	}
	if ex.NextCursor != "" {
		return nil, fmt.Errorf("served tool costs: the server paged its listing (cursor %q); serve the full set to one request without cursor", ex.NextCursor)
	}
	costs, err := listedCosts(ex, c)
	if err != nil {
		return nil, fmt.Errorf("served tool costs: %w", err)
	}
	mt, err := ModelTools(ex)
	if err != nil {
		return nil, fmt.Errorf("served tool costs: %w", err)
	}
	if err := addModelCosts(costs, mt, c); err != nil {
		return nil, fmt.Errorf("served tool costs: %w", err)
	}
	return costs, nil
}

// ServedModelCosts is ServedToolCosts with only what derive minimises:
// each entry's bytes as served and its o200k_base tokens in family f's
// model measure (Model holds f alone, Tokens stays nil). It tokenizes each
// entry once, where ServedToolCosts tokenizes the listing, each entry and
// each family's measure with every tokenizer.
func ServedModelCosts(ctx context.Context, srv *mcp.Server, c *price.Counter, f price.Family) ([]ToolCost, error) {
	if c == nil {
		return nil, errors.New("served model costs: no token counter")
	}
	ex, err := measure(ctx, srv, Options{})
	if err != nil {
		return nil, fmt.Errorf("served model costs: %w", err)
	}
	if ex.NextCursor != "" {
		return nil, fmt.Errorf("served model costs: the server paged its listing (cursor %q); serve the full set to one request without cursor", ex.NextCursor)
	}
	entries, err := listedEntries(ex)
	if err != nil {
		return nil, fmt.Errorf("served model costs: %w", err)
	}
	mt, err := ModelTools(ex)
	if err != nil {
		return nil, fmt.Errorf("served model costs: %w", err)
	}
	if len(entries) != len(ex.Tools) || len(mt) != len(ex.Tools) {
		return nil, fmt.Errorf("served model costs: %d tools/list entries and %d model tools recorded for %d tools listed", len(entries), len(mt), len(ex.Tools))
	}
	costs := make([]ToolCost, len(entries))
	for i, raw := range entries {
		if mt[i].Name != ex.Tools[i].Name {
			return nil, fmt.Errorf("served model costs: entry %d is tool %q, the model measure's is %q", i, ex.Tools[i].Name, mt[i].Name)
		}
		n, err := price.ToolTokens(c, f, mt[i:i+1])
		if err != nil {
			return nil, fmt.Errorf("served model costs: %w", err)
		}
		costs[i] = ToolCost{Name: ex.Tools[i].Name, Bytes: len(raw), Model: map[price.Family]int{f: n[0]}}
	}
	return costs, nil
}

// listedCosts prices each tools/list entry of ex from its bytes as they
// travelled. Re-encoding the decoded tools would not give them: a server
// (the gateway serving a stdio upstream's own definitions) may send
// escapes such as \u00e9 or \u003c, and members *mcp.Tool does not hold.
func listedCosts(ex *Exchange, c *price.Counter) ([]ToolCost, error) {
	entries, err := listedEntries(ex)
	if err != nil {
		return nil, err
	}
	if len(entries) != len(ex.Tools) {
		return nil, fmt.Errorf("%d tools/list entries recorded for %d tools listed", len(entries), len(ex.Tools))
	}
	costs := make([]ToolCost, 0, len(entries))
	for i, raw := range entries {
		tokens, err := c.Count(string(raw))
		if err != nil {
			return nil, fmt.Errorf("tool cost %q: %w", ex.Tools[i].Name, err)
		}
		costs = append(costs, ToolCost{Name: ex.Tools[i].Name, Bytes: len(raw), Tokens: tokens})
	}
	return costs, nil
}

// addModelCosts sets each cost's model figures from the tool of the same
// name in tools.
func addModelCosts(costs []ToolCost, tools []price.Tool, c *price.Counter) error {
	byName := make(map[string]price.Tool, len(tools))
	for _, t := range tools {
		byName[t.Name] = t
	}
	for i := range costs {
		t, ok := byName[costs[i].Name]
		if !ok {
			return fmt.Errorf("model cost of %q: not among the tools listed", costs[i].Name)
		}
		costs[i].Model = map[price.Family]int{}
		for _, f := range price.Families() {
			n, err := price.ToolTokens(c, f, []price.Tool{t})
			if err != nil {
				return err
			}
			costs[i].Model[f] = n[0]
		}
	}
	return nil
}

// ModelToolCosts is ToolCosts with each entry's model figures, from the
// tools as given.
func ModelToolCosts(tools []*mcp.Tool, c *price.Counter) ([]ToolCost, error) {
	costs, err := ToolCosts(tools, c)
	if err != nil {
		return nil, err
	}
	mt, err := modelToolsOf(tools)
	if err != nil {
		return nil, fmt.Errorf("tool cost: %w", err)
	}
	if err := addModelCosts(costs, mt, c); err != nil {
		return nil, fmt.Errorf("tool cost: %w", err)
	}
	return costs, nil
}

// ListedToolCosts is ModelToolCosts of tools, except that the figures of a
// tool ex listed are those of its entry as it travelled (its bytes, the
// schema's key order), as ServedToolCosts prices it; ex may be nil.
func ListedToolCosts(tools []*mcp.Tool, ex *Exchange, c *price.Counter) ([]ToolCost, error) {
	costs, err := ToolCosts(tools, c)
	if err != nil {
		return nil, err
	}
	mt, err := modelToolsOf(tools)
	if err != nil {
		return nil, fmt.Errorf("tool cost: %w", err)
	}
	if ex != nil {
		listed, err := ModelTools(ex)
		if err != nil {
			return nil, fmt.Errorf("tool cost: %w", err)
		}
		mt = append(mt, listed...)
		var travelled []ToolCost
		if len(ex.Messages) > 0 { // else an exchange built by hand: its tools as given
			if travelled, err = listedCosts(ex, c); err != nil {
				return nil, fmt.Errorf("tool cost: %w", err)
			}
		}
		byName := make(map[string]ToolCost, len(travelled))
		for _, t := range travelled {
			byName[t.Name] = t
		}
		for i := range costs {
			if t, ok := byName[costs[i].Name]; ok {
				costs[i] = t
			}
		}
	}
	if err := addModelCosts(costs, mt, c); err != nil {
		return nil, fmt.Errorf("tool cost: %w", err)
	}
	return costs, nil
}
