package toolsearch

import (
	"encoding/json"
	"fmt"
)

// Definition is what find_tools returns of one tool: what a model needs to
// call it, and no more. Its effect, output schema, annotations and title
// stay with the gateway, which still checks a call_tool call against the
// full definition; every token of an answer is conversation the model pays
// for in each later turn.
type Definition struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
	InputSchema any    `json:"inputSchema"`
}

// Answer is the text of find_tools' result: {"tools": [definitions]}, in
// rank order. The gateway serves it and profiler evaluate prices it, so the
// price is of what the model reads.
func Answer(defs []Definition) (string, error) {
	if defs == nil {
		defs = []Definition{}
	}
	b, err := json.Marshal(struct {
		Tools []Definition `json:"tools"`
	}{defs})
	if err != nil {
		return "", fmt.Errorf("%s answer: %w", FindToolsName, err)
	}
	return string(b), nil
}

// Encode is one definition as Answer writes it, for AnswerOf: a server
// encodes each tool once per catalog instead of once per search.
func Encode(d Definition) (json.RawMessage, error) {
	b, err := json.Marshal(d)
	if err != nil {
		return nil, fmt.Errorf("%s answer: tool %q: %w", FindToolsName, d.Name, err)
	}
	return b, nil
}

// AnswerOf is Answer of the definitions encoded (Encode), in rank order:
// the same bytes, without encoding them again.
func AnswerOf(encoded []json.RawMessage) string {
	n := len(`{"tools":[]}`)
	for _, e := range encoded {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, `{"tools":[`...)
	for i, e := range encoded {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	b = append(b, "]}"...)
	return string(b)
}
