package toolsearch_test

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"pgregory.net/rapid"

	"github.com/toolprof/toolprof/toolsearch"
)

func TestAnswer(t *testing.T) {
	for _, tc := range []struct {
		name string
		defs []toolsearch.Definition
		want string
	}{
		{"none found", nil, `{"tools":[]}`},
		{"in rank order", []toolsearch.Definition{
			{Name: "b", Description: "Second.", InputSchema: json.RawMessage(`{"type":"object"}`)},
			{Name: "a", InputSchema: map[string]any{"type": "object"}},
		}, `{"tools":[{"name":"b","description":"Second.","inputSchema":{"type":"object"}},{"name":"a","inputSchema":{"type":"object"}}]}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := toolsearch.Answer(tc.defs)
			if err != nil || got != tc.want {
				t.Fatalf("Answer = %s, %v; want %s", got, err, tc.want)
			}
		})
	}
}

// TestAnswerOfMatchesAnswer checks that definitions encoded once and
// joined give Answer's bytes, for random definitions in random order.
func TestAnswerOfMatchesAnswer(t *testing.T) {
	text := rapid.SampledFrom([]string{"", "a", "é", "<&>", "\u2028", `q"uote`, `back\slash`, "tab\there", "\x00", "\xff"})
	schemas := []any{
		nil,
		map[string]any{"type": "object"},
		map[string]any{"type": "object", "properties": map[string]any{"z": map[string]any{"type": "string"}, "a<b": map[string]any{"enum": []any{1.5, 1e21, "x&y"}}}},
		json.RawMessage(`{ "type" : "object",  "properties": {"q": {"type": "string", "description": "<html>"}} }`),
		json.RawMessage(`{"type":"object"}`),
		struct {
			Type string `json:"type"`
		}{"object"},
	}
	rapid.Check(t, func(t *rapid.T) {
		var defs []toolsearch.Definition
		var encoded []json.RawMessage
		for i := range rapid.IntRange(0, 6).Draw(t, "definitions") {
			d := toolsearch.Definition{
				Name:        text.Draw(t, "name") + fmt.Sprint(i),
				Description: text.Draw(t, "description"),
				InputSchema: rapid.SampledFrom(schemas).Draw(t, "schema"),
			}
			e, err := toolsearch.Encode(d)
			if err != nil {
				t.Fatalf("Encode(%+v): %v", d, err)
			}
			defs = append(defs, d)
			encoded = append(encoded, e)
		}
		want, err := toolsearch.Answer(defs)
		if err != nil {
			t.Fatal(err)
		}
		if got := toolsearch.AnswerOf(encoded); got != want {
			t.Fatalf("AnswerOf = %s; want Answer's %s", got, want)
		}
	})
}

func TestEncodeRefusesWhatAnswerRefuses(t *testing.T) {
	d := toolsearch.Definition{Name: "bad", InputSchema: map[string]any{"x": math.NaN()}}
	if _, err := toolsearch.Answer([]toolsearch.Definition{d}); err == nil {
		t.Fatal("Answer of a NaN schema: no error")
	}
	if _, err := toolsearch.Encode(d); err == nil || !strings.Contains(err.Error(), `"bad"`) {
		t.Fatalf("Encode of a NaN schema: %v; want an error naming the tool", err)
	}
}
