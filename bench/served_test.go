package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// TestDeriveTools: every catalog tool is priced as the gateway lists it,
// with the effect _meta the gateway adds, not as the raw catalog entry; the
// policy's [[effect]] rules change that _meta and so the price; a tool the
// policy declares destructive is marked so.
func TestDeriveTools(t *testing.T) {
	cat, err := catalog.Decode(strings.NewReader(`{"tools": [
		{"name": "read", "description": "reads a file", "inputSchema": {"type": "object"}},
		{"name": "wipe", "description": "deletes everything", "inputSchema": {"type": "object"}}]}`))
	if err != nil {
		t.Fatal(err)
	}
	policy, err := profiles.DecodePolicy(strings.NewReader("version = 1\n\n[[effect]]\ntool = \"read\"\nkind = \"read\"\n\n[[effect]]\ntool = \"wipe\"\nkind = \"destructive\"\n"), "profiles.toml")
	if err != nil {
		t.Fatal(err)
	}
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exchange.ToolCosts(cat.Tools, counter)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := DeriveTools(context.Background(), cat, nil)
	if err != nil {
		t.Fatal(err)
	}
	ruled, err := DeriveTools(context.Background(), cat, policy)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range raw {
		p, q := plain[i], ruled[i]
		if p.Name != r.Name || q.Name != r.Name {
			t.Fatalf("tool %d named %q / %q, catalog %q", i, p.Name, q.Name, r.Name)
		}
		if p.Bytes == r.Bytes {
			t.Errorf("%s served costs %d bytes, as the raw entry: the gateway's _meta is not priced", r.Name, p.Bytes)
		}
		if q.Bytes == p.Bytes {
			t.Errorf("%s costs %d bytes with and without an effect rule: the rule's _meta is not priced", r.Name, q.Bytes)
		}
		if p.Destructive || q.Destructive != (r.Name == "wipe") {
			t.Errorf("%s destructive: %v without a policy, %v with it", r.Name, p.Destructive, q.Destructive)
		}
		// Unannotated tools mutate; the rule makes "read" read-only.
		if !p.Mutates || q.Mutates != (r.Name != "read") {
			t.Errorf("%s mutates: %v without a policy, %v with it", r.Name, p.Mutates, q.Mutates)
		}
	}
}
