package toolsearch

import (
	"encoding/json"
	"slices"
)

// ParamNames returns the property names of a JSON Schema object (an input
// schema as decoded from JSON, or any value that marshals to one), sorted;
// nil when it has none.
func ParamNames(schema any) []string {
	if schema == nil {
		return nil
	}
	raw, ok := schema.(json.RawMessage)
	if !ok {
		b, err := json.Marshal(schema)
		if err != nil {
			return nil
		}
		raw = b
	}
	var s struct {
		Properties map[string]json.RawMessage `json:"properties"`
	}
	if json.Unmarshal(raw, &s) != nil || len(s.Properties) == 0 {
		return nil
	}
	out := make([]string, 0, len(s.Properties))
	for k := range s.Properties {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
