package opcontext

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"testing"
	"time"
)

// BenchmarkCheck measures the per-call cost of the hard layer against the
// os.Stat every use pays, in the same run; compare the ns/op ratios.
// "racy" is a file modified within the last 2 s, which is re-read on every
// use until it ages.
func BenchmarkCheck(b *testing.B) {
	dir := b.TempDir()
	p := writeFile(b, dir, "oc.toml", fmt.Sprintf(sidecar, "warn"))
	old := time.Now().Add(-time.Hour)
	if err := os.Chtimes(p, old, old); err != nil {
		b.Fatal(err)
	}
	s := sourceAt(b, p, nil)
	ctx := context.Background()
	noArg := map[string]any{"properties": map[string]any{"q": map[string]any{}}}
	explicit := json.RawMessage(`{"query":"some text","project_id":"acme-app","limit":5}`)
	auto := json.RawMessage(`{"query":"some text","project_id":"@auto","limit":5}`)

	b.Run("baseline_stat", func(b *testing.B) {
		for b.Loop() {
			if _, err := os.Stat(p); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("tool_without_argument", func(b *testing.B) {
		for b.Loop() {
			s.Check(ctx, CallInfo{InputSchema: noArg, Arguments: explicit})
		}
	})
	b.Run("explicit_known", func(b *testing.B) {
		for b.Loop() {
			s.Check(ctx, CallInfo{InputSchema: readSchema, Arguments: explicit})
		}
	})
	b.Run("auto_rewrite", func(b *testing.B) {
		for b.Loop() {
			s.Check(ctx, CallInfo{InputSchema: readSchema, Arguments: auto, Client: "claude-code"})
		}
	})
	b.Run("instructions", func(b *testing.B) {
		for b.Loop() {
			s.Instructions("Profile.")
		}
	})
	racy := writeFile(b, b.TempDir(), "oc.toml", fmt.Sprintf(sidecar, "warn"))
	rs := sourceAt(b, racy, nil)
	b.Run("explicit_known_racy", func(b *testing.B) {
		for b.Loop() {
			rs.Check(ctx, CallInfo{InputSchema: readSchema, Arguments: explicit})
		}
	})
}
