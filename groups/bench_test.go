package groups

import (
	"testing"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/telemetry"
)

// BenchmarkChoose measures choosing groups on the mixed workload; compare
// with BenchmarkDeriveBaseline (the static family on the same sessions) in
// the same run: go test -bench . ./groups/
func BenchmarkChoose(b *testing.B) {
	counter, err := price.NewCounter()
	if err != nil {
		b.Fatal(err)
	}
	catalog, sessions := mixedCatalog(), mixedSessions(2000, 1)
	for b.Loop() {
		if _, err := Choose(sessions, Config{Catalog: catalog, Counter: counter, Holdout: derive.DefaultHoldout}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDeriveBaseline(b *testing.B) {
	counter, err := price.NewCounter()
	if err != nil {
		b.Fatal(err)
	}
	catalog, sessions := mixedCatalog(), mixedSessions(2000, 1)
	costs, err := exchange.ModelToolCosts(catalog, counter)
	if err != nil {
		b.Fatal(err)
	}
	tools := make([]derive.Tool, len(costs))
	for i, c := range costs {
		tools[i] = derive.Tool{Name: c.Name, Bytes: c.Bytes, Tokens: c.Model[price.DefaultFamily]}
	}
	ds := make([]telemetry.Usage, len(sessions))
	for i, s := range sessions {
		ds[i] = telemetry.Usage{Tools: s.Tools, Calls: len(s.Tools), Session: telemetry.Session{Start: s.Session.Start}}
	}
	for b.Loop() {
		if _, err := derive.Derive(ds, derive.Config{Tools: tools, Specs: derive.DefaultSpecs(), Holdout: derive.DefaultHoldout, DefaultTarget: derive.DefaultTarget}); err != nil {
			b.Fatal(err)
		}
	}
}
