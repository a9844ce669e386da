package bench

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/price"
	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves a goroutine behind: every
// captured exchange must close both ends of its pipes.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// loadTiny loads the fixed three-tool catalog of the golden tests.
func loadTiny(t testing.TB) *catalog.Catalog {
	t.Helper()
	c, err := catalog.Load(filepath.Join("testdata", "tiny-catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// newSDKServer is the go-sdk's own server with tools added and nothing else:
// the baseline the gateway's listing is compared against.
func newSDKServer(tools []*mcp.Tool, opts *mcp.ServerOptions) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "sdk-baseline", Version: "1"}, opts)
	for _, t := range tools {
		s.AddTool(t, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	return s
}

func newTestCounter(t testing.TB) *price.Counter {
	t.Helper()
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	return c
}
