package profiles

import (
	"bytes"
	"fmt"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// largeFile is a generated file the size of a big deployment: 500 tools in
// 4 nested profiles.
func largeFile() (*File, []*mcp.Tool) {
	var tools []*mcp.Tool
	var names []string
	for i := range 500 {
		n := fmt.Sprintf("server%02d__tool_%03d", i%70, i)
		names = append(names, n)
		tools = append(tools, &mcp.Tool{Name: n, Annotations: &mcp.ToolAnnotations{ReadOnlyHint: i%3 == 0}})
	}
	f := &File{Version: 1, Default: "p1"}
	for k, size := range []int{20, 60, 150, 400} {
		f.Profiles = append(f.Profiles, Profile{Name: fmt.Sprintf("p%d", k), Tools: names[:size],
			Instructions: strings.Repeat("Use the tools well.\n", 10), Measured: &Measured{Sessions: 1000, Coverage: ptr(0.8)}})
	}
	return f, tools
}

// BenchmarkDecode compares the strict decoder against a plain toml.Decode
// into the same type (the baseline: no schema, line or semantic checks).
func BenchmarkDecode(b *testing.B) {
	f, _ := largeFile()
	var buf bytes.Buffer
	if err := Encode(&buf, f); err != nil {
		b.Fatal(err)
	}
	src := buf.String()
	b.Run("baseline-toml.Decode", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			var out File
			if _, err := toml.Decode(src, &out); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("strict", func(b *testing.B) {
		b.SetBytes(int64(len(src)))
		for b.Loop() {
			if _, err := DecodeFile(strings.NewReader(src), "bench"); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchmarkAllowed compares the per-call gate (binary search in the sorted
// tool list) against a map lookup baseline.
func BenchmarkAllowed(b *testing.B) {
	f, tools := largeFile()
	r, err := (&Set{File: f}).Resolve(tools)
	if err != nil {
		b.Fatal(err)
	}
	probe := make([]string, 64)
	for i := range probe {
		probe[i] = tools[(i*37)%len(tools)].Name
	}
	set := map[string]bool{}
	for _, t := range r.Profiles["p2"].Tools {
		set[t] = true
	}
	b.Run("baseline-map", func(b *testing.B) {
		n := 0
		for i := 0; b.Loop(); i++ {
			if set[probe[i%len(probe)]] {
				n++
			}
		}
		_ = n
	})
	b.Run("Allowed", func(b *testing.B) {
		n := 0
		for i := 0; b.Loop(); i++ {
			if r.Allowed("p2", probe[i%len(probe)]) {
				n++
			}
		}
		_ = n
	})
}

func BenchmarkResolve(b *testing.B) {
	f, tools := largeFile()
	s := &Set{File: f, Policy: &Policy{Effects: []EffectRule{{Tool: "server01__*", Kind: "read"}}, Destructive: []string{"*_499"}}}
	for b.Loop() {
		if _, err := s.Resolve(tools); err != nil {
			b.Fatal(err)
		}
	}
}
