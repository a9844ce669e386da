package gateway

import (
	"context"
	"os"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/telemetry"
)

func TestBoundName(t *testing.T) {
	long := strings.Repeat("a", 200)
	cases := []struct {
		name, in string
		max      int
		wantLen  int // bytes of the result; 0: the input unchanged
	}{
		{"short kept", "test_simple_text", 128, 0},
		{"at the bound kept", strings.Repeat("x", 128), 128, 0},
		{"long cut", long, 128, 128 + len("…") + 16},
		{"cut at a rune boundary", strings.Repeat("é", 100), 128, 128 + len("…") + 16},
		{"odd bound before a rune", "a" + strings.Repeat("é", 100), 128, 127 + len("…") + 16},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := boundName(c.in, c.max)
			want := c.wantLen
			if want == 0 {
				want = len(c.in)
				if got != c.in {
					t.Errorf("boundName changed %q to %q", c.in, got)
				}
			}
			if len(got) != want || !utf8.ValidString(got) {
				t.Errorf("boundName(%d bytes) = %d bytes (valid UTF-8 %v), want %d", len(c.in), len(got), utf8.ValidString(got), want)
			}
		})
	}
	if boundName(long+"b", 128) == boundName(long+"c", 128) {
		t.Error("names differing after the cut are bounded to the same string")
	}
}

// TestHostileNamesBounded: 1,000 calls of tools no upstream offers, each
// named with 16 KiB, from a client whose name and version are 16 KiB each,
// grow a real telemetry segment by less than 64 KB; the names are stored
// bounded and the offered tool's name as it is.
func TestHostileNamesBounded(t *testing.T) {
	const calls, hostile = 1000, 16 << 10
	dir := t.TempDir()
	rec, err := telemetry.OpenRecorder(dir, telemetry.RecorderOptions{Replica: "test"})
	if err != nil {
		t.Fatal(err)
	}
	defer rec.Close()
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(everythingCatalog()), Recorder: rec})
	segment := rec.Health().Segment
	before, err := os.Stat(segment)
	if err != nil {
		t.Fatal(err)
	}

	s, err := g.Server(FullProfile)
	if err != nil {
		t.Fatal(err)
	}
	st, ct := mcp.NewInMemoryTransports()
	ctx := context.Background()
	if _, err := s.Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	client := &mcp.Implementation{Name: strings.Repeat("n", hostile), Version: strings.Repeat("v", hostile)}
	cs, err := mcp.NewClient(client, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	name := strings.Repeat("t", hostile)
	for i := range calls {
		tool := name
		if i == 0 {
			tool = "test_simple_text" // offered: stored as is
		}
		// Unknown tools are JSON-RPC errors; the offered one fails as a
		// recorded catalog cannot run it. Either way the call is recorded.
		cs.CallTool(ctx, &mcp.CallToolParams{Name: tool})
	}
	cs.Close()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	after, err := os.Stat(strings.TrimSuffix(segment, ".open.db") + ".db") // renamed when closed
	if err != nil {
		t.Fatal(err)
	}
	grew := after.Size() - before.Size()
	t.Logf("segment %d -> %d bytes", before.Size(), after.Size())
	if grew >= 64<<10 {
		t.Errorf("segment grew by %d bytes for %d calls, want less than 64 KiB", grew, calls)
	}

	sessions, recorded, err := telemetry.ReadAll(ctx, []string{dir}, telemetry.Window{})
	if err != nil {
		t.Fatal(err)
	}
	if len(sessions) != 1 || len(recorded) != calls {
		t.Fatalf("read %d sessions and %d calls, want 1 and %d", len(sessions), len(recorded), calls)
	}
	if n, v := len(sessions[0].ClientName), len(sessions[0].ClientVersion); n > maxClientField+32 || v > maxClientField+32 {
		t.Errorf("client name of %d bytes and version of %d stored, want at most %d and a hash", n, v, maxClientField)
	}
	for _, c := range recorded {
		want := boundName(name, maxUnknownToolName)
		if c.Seq == 1 {
			want = "test_simple_text"
		}
		if c.Tool != want {
			t.Fatalf("call %d recorded tool of %d bytes %.40q, want %.40q", c.Seq, len(c.Tool), c.Tool, want)
		}
	}
}
