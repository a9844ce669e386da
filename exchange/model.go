package exchange

import (
	"encoding/json"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/price"
)

// listedTool is what the model measure and the icons figure read of one
// tools/list entry as it travelled: the schema's raw JSON keeps its key
// order, which the decoded *mcp.Tool does not.
type listedTool struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	InputSchema json.RawMessage `json:"inputSchema"`
	Icons       json.RawMessage `json:"icons"`
}

// listed returns the tools of ex's tools/list results, in the order served,
// decoded from the entries as they travelled.
func listed(ex *Exchange) ([]listedTool, error) {
	entries, err := listedEntries(ex)
	if err != nil {
		return nil, err
	}
	out := make([]listedTool, len(entries))
	for i, e := range entries {
		if err := json.Unmarshal(e, &out[i]); err != nil {
			return nil, fmt.Errorf("tools/list entry %d: %w", i, err)
		}
	}
	return out, nil
}

// listedEntries returns the tool entries of ex's tools/list results, in
// the order served, each the entry's bytes exactly as they travelled.
func listedEntries(ex *Exchange) ([]json.RawMessage, error) {
	var out []json.RawMessage
	for i, m := range ex.Messages {
		if m.Direction != ServerToClient || m.Method != "tools/list" {
			continue
		}
		var res struct {
			Result struct {
				Tools []json.RawMessage `json:"tools"`
			} `json:"result"`
		}
		if err := json.Unmarshal(m.Raw, &res); err != nil {
			return nil, fmt.Errorf("message %d (tools/list result): %w", i, err)
		}
		out = append(out, res.Result.Tools...)
	}
	return out, nil
}

// ModelTools returns the tools of ex as the model measure reads them: from
// the tools/list results as they travelled, or, for an exchange without
// recorded messages, from its decoded tools.
func ModelTools(ex *Exchange) ([]price.Tool, error) {
	lt, err := listed(ex)
	if err != nil {
		return nil, fmt.Errorf("model tools: %w", err)
	}
	if len(lt) == 0 && len(ex.Tools) > 0 {
		return modelToolsOf(ex.Tools)
	}
	out := make([]price.Tool, len(lt))
	for i, t := range lt {
		out[i] = price.Tool{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	return out, nil
}

// modelToolsOf converts decoded tools for the model measure.
func modelToolsOf(tools []*mcp.Tool) ([]price.Tool, error) {
	out := make([]price.Tool, len(tools))
	for i, t := range tools {
		if t == nil {
			return nil, fmt.Errorf("model tools: tools[%d] is nil", i)
		}
		out[i] = price.Tool{Name: t.Name, Description: t.Description}
		if t.InputSchema != nil {
			b, err := EncodeAsServed(t.InputSchema)
			if err != nil {
				return nil, fmt.Errorf("model tools: %q: encode input schema: %w", t.Name, err)
			}
			out[i].InputSchema = b
		}
	}
	return out, nil
}

// ModelMeasure prices ex in the model measure of every family: the tools it
// listed and the instructions its initialize result carried.
func ModelMeasure(ex *Exchange, c *price.Counter) (map[price.Family]price.ModelCost, error) {
	tools, err := ModelTools(ex)
	if err != nil {
		return nil, err
	}
	out := make(map[price.Family]price.ModelCost, len(price.Families()))
	for _, f := range price.Families() {
		if out[f], err = price.Model(c, f, tools, ex.Instructions); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// IconTokens counts the tokens of the "icons" members of ex's tool entries
// ("icons": and its value, per tool), per tokenizer.
func IconTokens(ex *Exchange, c *price.Counter) (map[string]int, error) {
	lt, err := listed(ex)
	if err != nil {
		return nil, fmt.Errorf("icon tokens: %w", err)
	}
	out := map[string]int{}
	for _, t := range lt {
		if len(t.Icons) == 0 {
			continue
		}
		n, err := c.Count(`"icons":` + string(t.Icons))
		if err != nil {
			return nil, fmt.Errorf("icon tokens of %q: %w", t.Name, err)
		}
		addTokens(out, n)
	}
	return out, nil
}
