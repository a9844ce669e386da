package gateway

import (
	"bufio"
	"context"
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/syncbuf"
)

// toolsListResults returns the result objects of the tools/list responses
// in a LoggingTransport's log of the server's side, as sent.
func toolsListResults(t *testing.T, log string) []map[string]json.RawMessage {
	t.Helper()
	var out []map[string]json.RawMessage
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line, ok := strings.CutPrefix(sc.Text(), "write: ")
		if !ok {
			continue
		}
		var msg struct {
			Result map[string]json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &msg); err != nil {
			t.Fatalf("%v in %s", err, line)
		}
		if _, ok := msg.Result["tools"]; ok {
			out = append(out, msg.Result)
		}
	}
	return out
}

// A go-sdk client lists every tool, in one request and paged, in each
// protocol version; the cache fields of 2026-07-28 (ttlMs, cacheScope) are
// sent only to a 2026-07-28 client, with a cacheScope the protocol allows.
func TestToolsListCacheFieldsByProtocol(t *testing.T) {
	cat := everythingCatalog()
	var want []string
	for _, tool := range cat.Tools {
		want = append(want, tool.Name)
	}
	slices.Sort(want)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), PageSize: 10})
	tests := []struct {
		protocol  string
		wantCache bool
	}{
		{"2024-11-05", false},
		{"2025-11-25", false},
		{"2026-07-28", true},
	}
	for _, tt := range tests {
		t.Run(tt.protocol, func(t *testing.T) {
			ctx := context.Background()
			s, err := g.Server(FullProfile)
			if err != nil {
				t.Fatal(err)
			}
			var log syncbuf.Buffer
			st, ct := mcp.NewInMemoryTransports()
			ss, err := s.Connect(ctx, &mcp.LoggingTransport{Transport: st, Writer: &log}, nil)
			if err != nil {
				t.Fatal(err)
			}
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "cache-test", Version: "0"}, nil).
				Connect(ctx, ct, &mcp.ClientSessionOptions{ProtocolVersion: tt.protocol})
			if err != nil {
				t.Fatal(err)
			}
			if got := cs.InitializeResult().ProtocolVersion; got != tt.protocol {
				t.Fatalf("negotiated %s, want %s", got, tt.protocol)
			}

			whole, err := cs.ListTools(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, tool := range whole.Tools {
				got = append(got, tool.Name)
			}
			if !slices.Equal(got, want) || whole.NextCursor != "" {
				t.Errorf("one request listed %v (cursor %q), want %v", got, whole.NextCursor, want)
			}
			got = nil
			pages := 0
			for cursor := StartCursor; ; {
				res, err := cs.ListTools(ctx, &mcp.ListToolsParams{Cursor: cursor})
				if err != nil {
					t.Fatalf("page %d: %v", pages+1, err)
				}
				pages++
				for _, tool := range res.Tools {
					got = append(got, tool.Name)
				}
				if res.NextCursor == "" {
					break
				}
				cursor = res.NextCursor
			}
			if !slices.Equal(got, want) || pages != 3 {
				t.Errorf("paging listed %v in %d pages, want %v in 3", got, pages, want)
			}
			cs.Close()
			ss.Wait()

			results := toolsListResults(t, log.String())
			if len(results) != 1+pages {
				t.Fatalf("%d tools/list results sent, want %d", len(results), 1+pages)
			}
			for i, r := range results {
				ttl, hasTTL := r["ttlMs"]
				scope, hasScope := r["cacheScope"]
				switch {
				case !tt.wantCache && (hasTTL || hasScope):
					t.Errorf("result %d: ttlMs %s, cacheScope %s sent to a %s client", i, ttl, scope, tt.protocol)
				case tt.wantCache && (string(ttl) != "0" || string(scope) != `"public"`):
					// public: without --explore every 2026-07-28 caller is listed the same tools
					t.Errorf("result %d: ttlMs %s, cacheScope %s; want 0 and \"public\"", i, ttl, scope)
				}
			}
		})
	}
}
