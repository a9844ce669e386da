package evaluate

import (
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/toolsearch"
)

// Docs are what search indexes of tools.
func Docs(tools []*mcp.Tool) []toolsearch.Doc {
	out := make([]toolsearch.Doc, 0, len(tools))
	for _, t := range tools {
		out = append(out, toolsearch.Doc{Name: t.Name, Description: t.Description, Params: toolsearch.ParamNames(t.InputSchema)})
	}
	return out
}

// LearnPriors learns search priors from sessions (the training part only:
// the caller splits).
func LearnPriors(sessions []Session) toolsearch.Learned {
	sets := make([][]string, len(sessions))
	for i, s := range sessions {
		sets[i] = s.Tools()
	}
	return toolsearch.Learn(sets, 0)
}
