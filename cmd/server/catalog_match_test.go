package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/testupstream"
)

// TestCatalogMatchesServedTools: profiler catalog records exactly the tools
// the gateway serves from the same launch document. The TypeScript
// everything-server (pinned in e2e/, skipped when not installed) lists its
// sampling and elicitation tools only to a client that declares those
// capabilities: the catalog must be taken as the gateway connects.
func TestCatalogMatchesServedTools(t *testing.T) {
	profiler := filepath.Join(t.TempDir(), "profiler")
	if err := testupstream.Build("github.com/toolprof/toolprof/cmd/profiler", profiler); err != nil {
		t.Fatal(err)
	}
	servers := map[string]map[string]any{"go everything-server": {"command": bins.everything}}
	npmBin, _ := filepath.Abs(filepath.Join("..", "..", "e2e", "node_modules", ".bin", "mcp-server-everything"))
	if _, err := os.Stat(npmBin); err == nil {
		servers["npm server-everything"] = map[string]any{"command": npmBin}
	} else {
		t.Logf("npm server-everything not installed (make e2e-deps): checking the Go one only: %v", err)
	}
	for name, entry := range servers {
		t.Run(name, func(t *testing.T) {
			pack := writeLaunch(t, map[string]any{"everything": entry})
			out, err := exec.Command(profiler, "catalog", "--launch", pack).Output()
			if err != nil {
				t.Fatalf("profiler catalog: %v", err)
			}
			cat, err := catalog.Decode(bytes.NewReader(out))
			if err != nil {
				t.Fatal(err)
			}
			recorded := cat.Names()
			slices.Sort(recorded)

			cmd := exec.Command(bins.server, append(launchArgs(t, filepath.Join(t.TempDir(), "tel")), "--launch", pack)...)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "catalog-match", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer cs.Close()
			// The upstream joins when it is ready (a slow one after the
			// gateway is serving): wait for its tools.
			served := listedNames(t, cs)
			for len(served) == 0 && ctx.Err() == nil {
				time.Sleep(100 * time.Millisecond)
				served = listedNames(t, cs)
			}
			slices.Sort(served)
			if len(served) == 0 || !slices.Equal(recorded, served) {
				b, _ := json.Marshal(map[string][]string{"catalog": recorded, "served": served})
				t.Errorf("catalog records %d tools, the gateway serves %d: %s", len(recorded), len(served), b)
			}
		})
	}
}
