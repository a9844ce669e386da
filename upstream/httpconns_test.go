package upstream

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/launch"
)

// Calls in flight together to an HTTP upstream keep their connections:
// eight callers making 100 calls each (overlapping, the tool takes 2 ms)
// open about one new TCP connection each (at most two: the transport may
// dial for a call that an idle connection then takes), rather than one
// for many calls beyond the transport's default two idle connections per
// host.
func TestHTTPUpstreamReusesConnections(t *testing.T) {
	s := mcp.NewServer(&mcp.Implementation{Name: "conns"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "small"}, func(context.Context, *mcp.CallToolRequest, struct{}) (*mcp.CallToolResult, any, error) {
		time.Sleep(2 * time.Millisecond) // so that calls overlap; not a measure
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "small"}}}, nil, nil
	})
	var opened atomic.Int64
	ts := httptest.NewUnstartedServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil))
	ts.Config.ConnState = func(_ net.Conn, st http.ConnState) {
		if st == http.StateNew {
			opened.Add(1)
		}
	}
	ts.Start()
	t.Cleanup(ts.Close)
	doc := launch.Document{Servers: []launch.Server{{Name: "conns", Transport: launch.StreamableHTTP, URL: ts.URL, Source: "x.mcp.json:1"}}}
	r, err := doc.Resolve(func(string) (string, bool) { return "", false })
	if err != nil {
		t.Fatal(err)
	}
	c := NewClient(r.Servers[0], Options{ConnectTimeout: 5 * time.Second})
	t.Cleanup(func() { c.Close() })
	if err := c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	call := func() error {
		_, err := c.CallTool(context.Background(), &mcp.CallToolParamsRaw{Name: "small", Arguments: json.RawMessage(`{}`)})
		return err
	}
	if err := call(); err != nil {
		t.Fatal(err)
	}
	const callers = 8
	before := opened.Load()
	var wg sync.WaitGroup
	errs := make(chan error, callers)
	for range callers {
		wg.Go(func() {
			for range 100 {
				if err := call(); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if n := opened.Load() - before; n > 2*callers {
		t.Errorf("%d callers opened %d new connections, want at most %d", callers, n, 2*callers)
	}
}
