package testupstream

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Execution is the "execution" member ListWithExecution adds to every
// tool: a member of the specification (2025-11-25 tasks) that the go-sdk's
// mcp.Tool does not hold, so that a client decoding into it loses it.
const Execution = `{"taskSupport":"optional"}`

// listedTools is a tools/list result whose tools are raw JSON.
type listedTools struct {
	mcp.ResultBase
	Tools      []json.RawMessage `json:"tools"`
	NextCursor string            `json:"nextCursor,omitempty"`
}

// ListWithExecution makes s list every tool with an "execution" member
// (Execution), as servers built on SDKs that know it do.
func ListWithExecution(s *mcp.Server) {
	s.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			list, ok := res.(*mcp.ListToolsResult)
			if err != nil || method != "tools/list" || !ok {
				return res, err
			}
			out := &listedTools{NextCursor: list.NextCursor}
			for _, t := range list.Tools {
				b, err := json.Marshal(t)
				if err != nil {
					return nil, err
				}
				var obj map[string]json.RawMessage
				if err := json.Unmarshal(b, &obj); err != nil {
					return nil, err
				}
				obj["execution"] = json.RawMessage(Execution)
				if b, err = json.Marshal(obj); err != nil {
					return nil, err
				}
				out.Tools = append(out.Tools, b)
			}
			return out, nil
		}
	})
}
