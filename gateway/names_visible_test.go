package gateway

import (
	"context"
	"strings"
	"testing"
	"unicode"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/visible"
	"github.com/toolprof/toolprof/telemetry"
)

// TestClientNamesStoredVisible: a client whose name, version and an
// unknown tool it calls hold terminal escapes, a carriage return and a
// bidirectional override is recorded, in a real telemetry segment, with
// those characters as escapes: no reader of the telemetry is handed them.
func TestClientNamesStoredVisible(t *testing.T) {
	const hostile = "\x1b]52;c;aGk=\x07\r\u202e"
	dir := t.TempDir()
	rec, err := telemetry.OpenRecorder(dir, telemetry.RecorderOptions{Replica: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(everythingCatalog()), Recorder: rec})
	s, err := g.Server(FullProfile)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	client := &mcp.Implementation{Name: "cl" + hostile, Version: "1" + hostile}
	cs, err := mcp.NewClient(client, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.ListTools(ctx, nil); err != nil { // recorded with the client's identity
		t.Fatal(err)
	}
	cs.CallTool(ctx, &mcp.CallToolParams{Name: "tool" + hostile}) // unknown: refused, recorded
	cs.Close()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	sessions, calls, err := telemetry.ReadAll(ctx, []string{dir}, telemetry.Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || len(calls) != 1 {
		t.Fatalf("read %d sessions and %d calls, want 1 and 1", len(sessions), len(calls))
	}
	for _, f := range []struct{ what, got, want string }{
		{"client name", sessions[0].ClientName, "cl" + visible.String(hostile)},
		{"client version", sessions[0].ClientVersion, "1" + visible.String(hostile)},
		{"tool", calls[0].Tool, "tool" + visible.String(hostile)},
	} {
		if f.got != f.want || strings.IndexFunc(f.got, func(r rune) bool { return unicode.IsControl(r) || unicode.Is(unicode.Cf, r) }) >= 0 {
			t.Errorf("%s stored as %q, want %q", f.what, f.got, f.want)
		}
	}
}
