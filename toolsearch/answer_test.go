package toolsearch_test

import (
	"encoding/json"
	"testing"

	"github.com/toolprof/toolprof/toolsearch"
)

func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		defs []toolsearch.Definition
		want string
	}{
		{"none found", nil, `{"tools":[]}`},
		{"in rank order", []toolsearch.Definition{
			{Name: "b", Description: "Second.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "a", InputSchema: map[string]any{"type": "object"}},
		}, `{"tools":[{"name":"b","description":"Second.","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := toolsearch.Answer(tc.defs)
			if err != nil || got != tc.want {
				t.Fatalf("Answer = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}
