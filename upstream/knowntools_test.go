package upstream

import (
	"context"
	"os"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestKnownToolsKeepsTheNewestListing: two tools/list in flight (one a
// reaction to list_changed) may finish in either order; the listing that
// began last is what KnownTools keeps, not the one that finished last.
func TestKnownToolsKeepsTheNewestListing(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	doc := resolve(t, `{"mcpServers": {"h": `+stdioEntry(self, map[string]string{
		helperEnv: "1", "HELPER_ID": "h", "HELPER_TOOLS": "a", "HELPER_FIRST_LIST_DELAY": "500ms",
	})+`}}`, nil)
	c := NewClient(doc.Servers[0], Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := c.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	first := make(chan []*mcp.Tool, 1)
	go func() { l, _ := c.ListTools(ctx); first <- l }()
	time.Sleep(100 * time.Millisecond) // the first listing is computed and held up
	if _, err := c.CallTool(ctx, &mcp.CallToolParamsRaw{Name: "grow"}); err != nil {
		t.Fatal(err)
	}
	second, err := c.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	old := <-first
	has := func(l []*mcp.Tool) bool {
		return slices.ContainsFunc(l, func(t *mcp.Tool) bool { return t.Name == "extra" })
	}
	if has(old) || !has(second) {
		t.Fatalf("setup: first listing has extra %v, second %v; want false, true", has(old), has(second))
	}
	if known, _ := c.KnownTools(); !has(known) {
		t.Errorf("KnownTools lacks the tool the newest listing returned: %d tools (the older listing overwrote it)", len(known))
	}
}
