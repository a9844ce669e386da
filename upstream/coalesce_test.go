package upstream

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"go.uber.org/goleak"
)

// TestToolsChangedFloodIsMerged: a server sends notifications/tools/list_changed
// in a burst while the first refresh it caused is still running. The burst
// costs one more refresh, not one each, and no goroutine per notification
// waits meanwhile; Close waits for the refreshes and leaves none running.
func TestToolsChangedFloodIsMerged(t *testing.T) {
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		notes         int
		wantRefreshes int64
	}{
		{1, 1},
		{2, 2},
		{20000, 2},
	} {
		t.Run(fmt.Sprint(tt.notes), func(t *testing.T) {
			defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
			doc := resolve(t, `{"mcpServers": {"flood": `+stdioEntry(self, map[string]string{
				helperEnv: "1", "HELPER_FAKE_FLOOD": fmt.Sprint(tt.notes),
			})+`}}`, nil)
			// Refreshes hold until every notification was handled: the
			// server's "flood done" message is handled after them.
			done := make(chan struct{})
			var refreshes atomic.Int64
			base := runtime.NumGoroutine()
			var during int
			c := NewClient(doc.Servers[0], Options{
				OnToolsChanged: func(string) {
					refreshes.Add(1)
					<-done
				},
				OnLog: func(_ context.Context, _ string, p *mcp.LoggingMessageParams) {
					if p.Data == "flood done" {
						during = runtime.NumGoroutine() - base
						close(done)
					}
				},
			})
			if err := c.Start(context.Background()); err != nil {
				t.Fatal(err)
			}
			waitFor(t, "the flood handled", func() bool {
				select {
				case <-done:
					return true
				default:
					return false
				}
			})
			if err := c.Close(); err != nil {
				t.Fatal(err)
			}
			if n := refreshes.Load(); n != tt.wantRefreshes {
				t.Errorf("%d notifications caused %d refreshes, want %d", tt.notes, n, tt.wantRefreshes)
			}
			if during > 50 {
				t.Errorf("%d goroutines more than before the client while the flood was handled, want a few", during)
			}
		})
	}
}
