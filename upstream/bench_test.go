package upstream

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/testupstream"
)

// BenchmarkCallToolOverhead measures a call through a namespaced Set against
// the same call on a bare SDK session to an identical server, in the same
// run; it reports both and their ratio.
func BenchmarkCallToolOverhead(b *testing.B) {
	bin := testupstream.EverythingServer(b)
	ctx := context.Background()
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "bench"}, nil).Connect(ctx, &mcp.CommandTransport{Command: exec.Command(bin)}, nil)
	if err != nil {
		b.Fatal(err)
	}
	defer direct.Close()
	s, err := StartSet(ctx, resolve(b, `{"mcpServers": {"a": `+stdioEntry(bin, nil)+`, "b": `+stdioEntry(bin, nil)+`}}`, nil), SetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	defer s.Close()
	if _, err := s.ListTools(ctx); err != nil {
		b.Fatal(err)
	}
	viaSet := &mcp.CallToolParamsRaw{Name: "b__test_simple_text"}
	bare := &mcp.CallToolParams{Name: "test_simple_text"}
	var tDirect, tSet time.Duration
	b.ResetTimer()
	for b.Loop() {
		t0 := time.Now()
		if _, err := direct.CallTool(ctx, bare); err != nil {
			b.Fatal(err)
		}
		t1 := time.Now()
		if _, err := s.CallTool(ctx, viaSet); err != nil {
			b.Fatal(err)
		}
		tSet += time.Since(t1)
		tDirect += t1.Sub(t0)
	}
	b.ReportMetric(float64(tDirect.Nanoseconds())/float64(b.N), "direct-ns/call")
	b.ReportMetric(float64(tSet.Nanoseconds())/float64(b.N), "set-ns/call")
	b.ReportMetric(float64(tSet)/float64(tDirect), "set/direct")
}
