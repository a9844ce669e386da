package price

import (
	"slices"
	"strings"
	"sync"
	"testing"
)

// referenceIDs are token ids printed by OpenAI's tiktoken itself: the
// cookbook "How to count tokens with tiktoken" (compare_encodings) and
// tiktoken's own tests ("hello world"). Matching the ids, not only the counts,
// shows the vocabularies are the real ones.
var referenceIDs = []struct {
	text  string
	o200k []uint
	cl100 []uint
}{
	{"hello world", []uint{24912, 2375}, []uint{15339, 1917}},
	{"tiktoken is great!", []uint{83, 8251, 2488, 382, 2212, 0}, []uint{83, 1609, 5963, 374, 2294, 0}},
	{"antidisestablishmentarianism", []uint{493, 129901, 376, 160388, 21203, 2367}, []uint{519, 85342, 34500, 479, 8997, 2191}},
	{"2 + 2 = 4", []uint{17, 659, 220, 17, 314, 220, 19}, []uint{17, 489, 220, 17, 284, 220, 19}},
	{"お誕生日おめでとう", []uint{8930, 9697, 243, 128225, 8930, 17693, 4344, 48669}, []uint{33334, 45918, 243, 21990, 9080, 33334, 62004, 16556, 78699}},
	// cl100k_base ids published by third parties running Python tiktoken
	// (no o200k_base ids given): "Hello, how are you doing today?" in a
	// tiktoken guide (lzwjava.github.io, 2025-09-28), "China is great!" in a
	// tiktoken tutorial (blog.cachecha.com). Their " is", " great" and "!"
	// ids agree with the cookbook's "tiktoken is great!" above.
	{"Hello, how are you doing today?", nil, []uint{9906, 11, 1268, 527, 499, 3815, 3432, 30}},
	{"China is great!", nil, []uint{23078, 374, 2294, 0}},
}

func TestCounterMatchesTiktokenReference(t *testing.T) {
	c := newTestCounter(t)
	for _, ref := range referenceIDs {
		t.Run(ref.text, func(t *testing.T) {
			want := map[string][]uint{O200kBase: ref.o200k, Cl100kBase: ref.cl100}
			counts, err := c.Count(ref.text)
			if err != nil {
				t.Fatal(err)
			}
			for name, ids := range want {
				if ids == nil {
					continue // no published reference for this encoding
				}
				got, err := c.Encode(name, ref.text)
				if err != nil {
					t.Fatal(err)
				}
				if !slices.Equal(got, ids) {
					t.Errorf("%s ids = %v, want %v", name, got, ids)
				}
				if counts[name] != len(ids) {
					t.Errorf("%s count = %d, want %d", name, counts[name], len(ids))
				}
			}
		})
	}
}

// TestCounterRoundTrip checks counts by a second route: the ids decode back
// to the exact text, and each id decodes on its own to a non-empty piece, so
// the count is the number of pieces the text was cut into.
func TestCounterRoundTrip(t *testing.T) {
	c := newTestCounter(t)
	texts := []string{
		`{"jsonrpc":"2.0","id":1,"result":{"tools":[{"name":"search_code","description":"Search code | grep","inputSchema":{"type":"object"}}]}}`,
		"Ünïcödé — naïve café, 数据 and emoji 😊\n\ttabs",
		"<|endoftext|> is text here, not a special token",
		"",
	}
	for _, text := range texts {
		counts, err := c.Count(text)
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range TokenizerNames() {
			ids, err := c.Encode(name, text)
			if err != nil {
				t.Fatal(err)
			}
			if len(ids) != counts[name] {
				t.Errorf("%s: Encode gave %d ids, Count %d for %q", name, len(ids), counts[name], text)
			}
			if n, err := c.CountWith(name, text); err != nil || n != counts[name] {
				t.Errorf("%s: CountWith = %d, %v; Count gave %d for %q", name, n, err, counts[name], text)
			}
			back, err := c.Decode(name, ids)
			if err != nil {
				t.Fatal(err)
			}
			if back != text {
				t.Errorf("%s: round trip %q -> %q", name, text, back)
			}
			var joined []byte
			for _, id := range ids {
				piece, err := c.Decode(name, []uint{id})
				if err != nil {
					t.Fatal(err)
				}
				if piece == "" {
					t.Errorf("%s: id %d decodes to nothing", name, id)
				}
				joined = append(joined, piece...)
			}
			if string(joined) != text {
				t.Errorf("%s: pieces join to %q, want %q", name, joined, text)
			}
		}
	}
	// A special-token look-alike is ordinary text: more than one token.
	counts, err := c.Count("<|endoftext|>")
	if err != nil {
		t.Fatal(err)
	}
	for name, n := range counts {
		if n < 2 {
			t.Errorf("%s counts <|endoftext|> as %d token(s); want it counted as text", name, n)
		}
	}
}

func TestCounterUnknownTokenizer(t *testing.T) {
	c := newTestCounter(t)
	if _, err := c.Encode("p99k", "x"); err == nil || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("Encode with unknown tokenizer: err = %v, want one naming the valid ones", err)
	}
	if _, err := c.Decode("p99k", nil); err == nil || !strings.Contains(err.Error(), "cl100k_base") {
		t.Errorf("Decode with unknown tokenizer: err = %v, want one naming the valid ones", err)
	}
	if _, err := c.CountWith("p99k", "x"); err == nil || !strings.Contains(err.Error(), "o200k_base") {
		t.Errorf("CountWith with unknown tokenizer: err = %v, want one naming the valid ones", err)
	}
}

func TestEstimateTokens(t *testing.T) {
	for _, tc := range []struct{ bytes, want int }{{0, 0}, {1, 1}, {4, 1}, {5, 2}, {400, 100}} {
		if got := EstimateTokens(tc.bytes); got != tc.want {
			t.Errorf("EstimateTokens(%d) = %d, want %d", tc.bytes, got, tc.want)
		}
	}
}

func newTestCounter(t testing.TB) *Counter {
	t.Helper()
	c, err := NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestCounterConcurrent backs the doc comment's promise: one Counter may be
// shared by goroutines (run with -race).
func TestCounterConcurrent(t *testing.T) {
	c := newTestCounter(t)
	want, err := c.Count(referenceIDs[1].text)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				got, err := c.Count(referenceIDs[1].text)
				if err != nil || got[O200kBase] != want[O200kBase] || got[Cl100kBase] != want[Cl100kBase] {
					t.Errorf("concurrent Count = %v, %v; want %v", got, err, want)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestNewCounterOfLoadsOnlyThose(t *testing.T) {
	all := newTestCounter(t)
	one, err := NewCounterOf(O200kBase)
	if err != nil {
		t.Fatal(err)
	}
	for _, ref := range referenceIDs {
		want, err := all.CountWith(O200kBase, ref.text)
		if err != nil {
			t.Fatal(err)
		}
		got, err := one.CountWith(O200kBase, ref.text)
		if err != nil || got != want {
			t.Errorf("%q: %d tokens (%v), want %d as NewCounter counts", ref.text, got, err, want)
		}
		counts, err := one.Count(ref.text)
		if err != nil || len(counts) != 1 || counts[O200kBase] != want {
			t.Errorf("%q: Count %v (%v), want only %s: %d", ref.text, counts, err, O200kBase, want)
		}
	}
	if _, err := one.CountWith(Cl100kBase, "x"); err == nil {
		t.Errorf("CountWith(%s) on a counter of %s alone: no error", Cl100kBase, O200kBase)
	}
	if _, err := NewCounterOf("p50k_base"); err == nil || !strings.Contains(err.Error(), "unknown tokenizer") {
		t.Errorf("NewCounterOf(p50k_base): %v, want unknown tokenizer", err)
	}
}
