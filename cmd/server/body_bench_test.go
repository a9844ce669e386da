package main

import "testing"

// BenchmarkInspectBody prices the one decode of a POST body, on a
// tools/call of a few hundred bytes.
func BenchmarkInspectBody(b *testing.B) {
	body := []byte(`{"jsonrpc":"2.0","id":42,"method":"tools/call","params":{"name":"search_issues","arguments":{"query":"label:bug state:open sort:updated","per_page":50,"repo":"toolprof/toolprof"},"_meta":{"progressToken":"p-42"}}}`)
	b.ReportAllocs()
	for b.Loop() {
		if _, code, _ := inspectBody(body); code != 0 {
			b.Fatal(code)
		}
	}
}
