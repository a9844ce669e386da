package opcontext

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// One long-lived streamable-HTTP server process, as the gateway runs it: an
// edit to the sidecar reaches the next new session's initialize
// instructions without a restart (the design's bug-252 froze them for the
// life of the process). The server is built the way the gateway builds its
// own: the SDK's static Instructions hold only the profile's text, and a
// receiving middleware composes the session's instructions on initialize.
func TestEditReachesNewHTTPSession(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dir := t.TempDir()
	p := writeFile(t, dir, "oc.toml", "version = 1\n[instructions]\nsummary = \"Context rev A.\"\n")
	src := sourceAt(t, p, nil)

	const profile = "Profile instructions."
	server := mcp.NewServer(&mcp.Implementation{Name: "opcontext-test", Version: "0"}, &mcp.ServerOptions{Instructions: profile})
	server.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			res, err := next(ctx, method, req)
			if r, ok := res.(*mcp.InitializeResult); ok && err == nil {
				r.Instructions = src.Instructions(profile)
			}
			return res, err
		}
	})
	httpSrv := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return server }, nil))
	defer httpSrv.Close()

	connect := func() *mcp.ClientSession {
		t.Helper()
		c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "0"}, nil)
		cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: httpSrv.URL}, nil)
		if err != nil {
			t.Fatal(err)
		}
		return cs
	}

	first := connect()
	defer first.Close()
	if got := first.InitializeResult().Instructions; got != profile+"\n\nContext rev A." {
		t.Fatalf("first session: %q", got)
	}

	writeFile(t, dir, "oc.toml", "version = 1\n[instructions]\nsummary = \"Context rev B, longer.\"\n")
	second := connect()
	defer second.Close()
	if got := second.InitializeResult().Instructions; got != profile+"\n\nContext rev B, longer." {
		t.Fatalf("a new session after the edit was served %q", got)
	}

	// Switching the file off (invalid) serves the profile's text alone.
	writeFile(t, dir, "oc.toml", "version = 1\nbad = 1\n")
	third := connect()
	defer third.Close()
	if got := third.InitializeResult().Instructions; got != profile {
		t.Fatalf("with an invalid file: %q", got)
	}
	if !strings.HasPrefix(first.InitializeResult().Instructions, profile) {
		t.Fatal("an open session's handshake changed")
	}
}
