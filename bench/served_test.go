package bench

import (
	"context"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/bench/sessiongen"
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

// TestDeriveToolsEqualsServedCosts: DeriveTools, which tokenizes only the
// default family's model measure, prices every tool at exactly the bytes
// and tokens ServedCosts gives it, with and without effect rules, on
// entries with escapes and non-ASCII text and on a generated catalog.
func TestDeriveToolsEqualsServedCosts(t *testing.T) {
	var generated strings.Builder
	if err := sessiongen.WriteCatalog(&generated, sessiongen.ToolNames(40), 1); err != nil {
		t.Fatal(err)
	}
	policy, err := profiles.DecodePolicy(strings.NewReader("version = 1\n\n[[effect]]\ntool = \"read_note\"\nkind = \"read\"\n\n[[effect]]\ntool = \"wipe <all>\"\nkind = \"destructive\"\n"), "profiles.toml")
	if err != nil {
		t.Fatal(err)
	}
	counter, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ name, catalog string }{
		{"escapes", `{"tools": [
			{"name": "read_note", "description": "Reads a note <b>&amp;</b> its café — 数据 😊", "inputSchema": {"type": "object", "properties": {"z": {"type": "string"}, "a": {"type": "integer", "description": "\u00e9\u003c"}}}},
			{"name": "wipe <all>", "description": "deletes \"everything\"\n\tat once", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}]}`},
		{"generated", generated.String()},
	} {
		cat, err := catalog.Decode(strings.NewReader(tc.catalog))
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		for _, pol := range []*profiles.Policy{nil, policy} {
			served, err := ServedCosts(context.Background(), cat, pol, counter)
			if err != nil {
				t.Fatal(err)
			}
			tools, err := DeriveTools(context.Background(), cat, pol)
			if err != nil {
				t.Fatal(err)
			}
			if len(tools) != len(cat.Tools) {
				t.Fatalf("%s: %d tools priced, catalog has %d", tc.name, len(tools), len(cat.Tools))
			}
			for _, d := range tools {
				s := served[d.Name]
				if d.Bytes != s.Bytes || d.Tokens != s.Model[price.DefaultFamily] {
					t.Errorf("%s (policy %v) %q: DeriveTools %d bytes, %d tokens; ServedCosts %d bytes, %d %s tokens",
						tc.name, pol != nil, d.Name, d.Bytes, d.Tokens, s.Bytes, s.Model[price.DefaultFamily], price.DefaultFamily)
				}
			}
		}
	}
}
