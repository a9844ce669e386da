package toolsearch

import (
	"encoding/json"
	"fmt"
)

// ListQuery is the find_tools query that asks for the names of the tools a
// search may still return instead of a ranking: a model whose search
// missed reads them and asks for the one it needs by name (Lookup), for a
// few hundred tokens instead of the whole catalog.
const ListQuery = "*"

// Names returns the indexed tools allow passes (nil: every tool), sorted
// by name: what find_tools answers to ListQuery (NamesAnswer).
func (ix *Index) Names(allow func(name string) bool) []string {
	out := make([]string, 0, len(ix.sorted))
	for _, n := range ix.sorted {
		if allow == nil || allow(n) {
			out = append(out, n)
		}
	}
	return out
}

// Lookup returns the hit of the tool named query, when the index holds it
// and allow (nil: every tool) passes it: a query that is a tool's name
// asks for that tool alone, as a model does after reading NamesAnswer.
func (ix *Index) Lookup(query string, allow func(name string) bool) (Hit, bool) {
	if !ix.Has(query) || allow != nil && !allow(query) {
		return Hit{}, false
	}
	return Hit{Name: query}, true
}

// NamesAnswer is the text of find_tools' answer to ListQuery:
// {"names": [names]}, names only, since every one is read in each later
// turn and a name is enough to ask for a definition.
func NamesAnswer(names []string) (string, error) {
	if names == nil {
		names = []string{}
	}
	b, err := json.Marshal(struct {
		Names []string `json:"names"`
	}{names})
	if err != nil {
		return "", fmt.Errorf("%s names answer: %w", FindToolsName, err)
	}
	return string(b), nil
}
