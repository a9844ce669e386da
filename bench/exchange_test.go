package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/internal/golden"
	"github.com/toolprof/toolprof/price"
)

// transcript renders an exchange as the stdio stream it was, one message a
// line, each prefixed with its direction.
func transcript(ex *exchange.Exchange) []byte {
	var b bytes.Buffer
	for _, m := range ex.Messages {
		fmt.Fprintf(&b, "%s %s\n", m.Direction, m.Raw)
	}
	return b.Bytes()
}

func TestMeasureExchangeSDKServerGolden(t *testing.T) {
	c := newTestCounter(t)
	cat := loadTiny(t)
	srv := newSDKServer(cat.Tools, &mcp.ServerOptions{Instructions: "Notes server."})
	ex, err := exchange.Measure(context.Background(), srv, exchange.Options{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	golden.Assert(t, filepath.Join("testdata", "exchange-sdk.golden"), transcript(ex))

	wantMethods := []struct {
		dir    exchange.Direction
		method string
	}{
		{exchange.ClientToServer, "initialize"},
		{exchange.ServerToClient, "initialize"},
		{exchange.ClientToServer, "notifications/initialized"},
		{exchange.ClientToServer, "tools/list"},
		{exchange.ServerToClient, "tools/list"},
	}
	if len(ex.Messages) != len(wantMethods) {
		t.Fatalf("captured %d messages, want %d:\n%s", len(ex.Messages), len(wantMethods), transcript(ex))
	}
	for i, w := range wantMethods {
		if m := ex.Messages[i]; m.Direction != w.dir || m.Method != w.method {
			t.Errorf("message %d = %s %s, want %s %s", i, m.Direction, m.Method, w.dir, w.method)
		}
	}
	var init struct {
		Params struct {
			ProtocolVersion string `json:"protocolVersion"`
		} `json:"params"`
	}
	if err := json.Unmarshal(ex.Messages[0].Raw, &init); err != nil || init.Params.ProtocolVersion != exchange.ProtocolVersion {
		t.Errorf("initialize protocolVersion = %q (%v), want %q", init.Params.ProtocolVersion, err, exchange.ProtocolVersion)
	}
	if ex.Instructions != "Notes server." {
		t.Errorf("Instructions = %q", ex.Instructions)
	}
	if ex.Pages != 1 || ex.NextCursor != "" || len(ex.Tools) != 3 {
		t.Errorf("pages %d, cursor %q, tools %d; want 1 page, no cursor, 3 tools", ex.Pages, ex.NextCursor, len(ex.Tools))
	}

	// Totals are the sums of the messages, each counted on its own.
	bytesSum, tokSum := 0, map[string]int{}
	for _, m := range ex.Messages {
		bytesSum += len(m.Raw)
		want, err := c.Count(string(m.Raw))
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if m.Tokens[k] != v {
				t.Errorf("message %s %s: %s tokens %d, want %d", m.Direction, m.Method, k, m.Tokens[k], v)
			}
			tokSum[k] += v
		}
	}
	if ex.Bytes != bytesSum || len(transcript(ex)) <= ex.Bytes {
		t.Errorf("Bytes = %d, want %d", ex.Bytes, bytesSum)
	}
	for _, name := range price.TokenizerNames() {
		if ex.Tokens[name] != tokSum[name] || tokSum[name] == 0 {
			t.Errorf("Tokens[%s] = %d, want %d (non-zero)", name, ex.Tokens[name], tokSum[name])
		}
	}
}

// TestToolCostsMatchServedEntries checks each tool's cost against the bytes
// of the tools/list result actually served: the entries, commas and the
// {"tools":[...]} wrapper add up to the result exactly.
func TestToolCostsMatchServedEntries(t *testing.T) {
	c := newTestCounter(t)
	cat := loadTiny(t)
	ex, err := exchange.Measure(context.Background(), newSDKServer(cat.Tools, nil), exchange.Options{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	costs, err := exchange.ToolCosts(ex.Tools, c)
	if err != nil {
		t.Fatal(err)
	}
	last := ex.Messages[len(ex.Messages)-1]
	var resp struct {
		Result struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(last.Raw, &resp); err != nil {
		t.Fatal(err)
	}
	sum := len(`[]`) + len(costs) - 1
	for i, tc := range costs {
		if tc.Name != ex.Tools[i].Name {
			t.Errorf("cost %d is %q, want %q (served order)", i, tc.Name, ex.Tools[i].Name)
		}
		sum += tc.Bytes
		for _, name := range price.TokenizerNames() {
			if tc.Tokens[name] <= 0 || tc.Tokens[name] > tc.Bytes {
				t.Errorf("%s: %s tokens = %d for %d bytes", tc.Name, name, tc.Tokens[name], tc.Bytes)
			}
		}
		entry, _ := exchange.EncodeAsServed(ex.Tools[i])
		if !bytes.Contains(resp.Result.Tools, entry) {
			t.Errorf("%s: entry %s not found in served result", tc.Name, entry)
		}
	}
	if sum != len(resp.Result.Tools) {
		t.Errorf("entries + separators = %d bytes, served tools array is %d bytes: %s", sum, len(resp.Result.Tools), resp.Result.Tools)
	}
	if _, err := exchange.ToolCosts([]*mcp.Tool{nil}, c); err == nil || !strings.Contains(err.Error(), "tools[0]") {
		t.Errorf("nil tool: err = %v, want one naming tools[0]", err)
	}
}

func TestMeasureExchangePagination(t *testing.T) {
	c := newTestCounter(t)
	cat := loadTiny(t)
	for _, tc := range []struct {
		name       string
		paginate   bool
		wantPages  int
		wantTools  int
		wantCursor bool
	}{
		{"one request without cursor", false, 1, 2, true},
		{"client pages", true, 2, 3, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newSDKServer(cat.Tools, &mcp.ServerOptions{PageSize: 2})
			ex, err := exchange.Measure(context.Background(), srv, exchange.Options{Counter: c, Paginate: tc.paginate})
			if err != nil {
				t.Fatal(err)
			}
			if ex.Pages != tc.wantPages || len(ex.Tools) != tc.wantTools || (ex.NextCursor != "") != tc.wantCursor {
				t.Errorf("pages %d tools %d cursor %q; want pages %d tools %d cursor left %v",
					ex.Pages, len(ex.Tools), ex.NextCursor, tc.wantPages, tc.wantTools, tc.wantCursor)
			}
			var lists, cursors int
			for _, m := range ex.Messages {
				if m.Method == "tools/list" && m.Direction == exchange.ClientToServer {
					lists++
					if bytes.Contains(m.Raw, []byte(`"cursor"`)) {
						cursors++
					}
				}
			}
			if lists != tc.wantPages || cursors != tc.wantPages-1 {
				t.Errorf("%d tools/list requests (%d with cursor), want %d (%d)", lists, cursors, tc.wantPages, tc.wantPages-1)
			}
		})
	}
}

func TestMeasureExchangeNeedsCounter(t *testing.T) {
	if _, err := exchange.Measure(context.Background(), newSDKServer(nil, nil), exchange.Options{}); err == nil {
		t.Error("no counter: want an error")
	}
}
