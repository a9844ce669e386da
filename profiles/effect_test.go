package profiles

import (
	"fmt"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func ptr[T any](v T) *T { return &v }

func TestEffectOfAnnotations(t *testing.T) {
	tr, fa := ptr(true), ptr(false)
	tests := []struct {
		ann  *mcp.ToolAnnotations
		want Effect
	}{
		{nil, Effect{KindMutate, false}},
		{&mcp.ToolAnnotations{}, Effect{KindMutate, false}}, // absent hints: only an explicit true counts
		{&mcp.ToolAnnotations{OpenWorldHint: tr}, Effect{KindMutate, true}},
		{&mcp.ToolAnnotations{OpenWorldHint: fa}, Effect{KindMutate, false}},
		{&mcp.ToolAnnotations{DestructiveHint: tr}, Effect{KindDestructive, false}},
		{&mcp.ToolAnnotations{DestructiveHint: tr, OpenWorldHint: tr}, Effect{KindDestructive, true}},
		{&mcp.ToolAnnotations{DestructiveHint: tr, OpenWorldHint: fa}, Effect{KindDestructive, false}},
		{&mcp.ToolAnnotations{DestructiveHint: fa}, Effect{KindMutate, false}},
		{&mcp.ToolAnnotations{DestructiveHint: fa, OpenWorldHint: tr}, Effect{KindMutate, true}},
		{&mcp.ToolAnnotations{DestructiveHint: fa, OpenWorldHint: fa}, Effect{KindMutate, false}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true}, Effect{KindRead, false}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: tr}, Effect{KindRead, true}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: fa}, Effect{KindRead, false}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: tr}, Effect{KindRead, false}}, // destructiveHint means nothing for a read-only tool
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: tr, OpenWorldHint: tr}, Effect{KindRead, true}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: tr, OpenWorldHint: fa}, Effect{KindRead, false}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: fa}, Effect{KindRead, false}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: fa, OpenWorldHint: tr}, Effect{KindRead, true}},
		{&mcp.ToolAnnotations{ReadOnlyHint: true, DestructiveHint: fa, OpenWorldHint: fa}, Effect{KindRead, false}},
	}
	show := func(b *bool) string {
		if b == nil {
			return "unset"
		}
		return fmt.Sprint(*b)
	}
	for _, tt := range tests {
		name := "nil"
		if a := tt.ann; a != nil {
			name = fmt.Sprintf("ro=%v,destr=%s,open=%s", a.ReadOnlyHint, show(a.DestructiveHint), show(a.OpenWorldHint))
		}
		t.Run(name, func(t *testing.T) {
			tool := &mcp.Tool{Name: "t", Annotations: tt.ann}
			if got := EffectOf(tool, nil); got != tt.want {
				t.Errorf("EffectOf = %+v, want %+v", got, tt.want)
			}
			// An empty policy changes nothing.
			if got := EffectOf(tool, &Policy{Version: 1}); got != tt.want {
				t.Errorf("EffectOf with empty policy = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestEffectOfOverrides(t *testing.T) {
	tr, fa := ptr(true), ptr(false)
	readOpen := &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: tr}
	destr := &mcp.ToolAnnotations{DestructiveHint: tr}
	tests := []struct {
		name   string
		tool   string
		ann    *mcp.ToolAnnotations
		policy Policy
		want   Effect
	}{
		{name: "exact kind", tool: "q", ann: readOpen, policy: Policy{Effects: []EffectRule{{Tool: "q", Kind: "evaluate"}}}, want: Effect{KindEvaluate, true}},
		{name: "exact external only keeps kind", tool: "q", ann: readOpen, policy: Policy{Effects: []EffectRule{{Tool: "q", External: fa}}}, want: Effect{KindRead, false}},
		{name: "pattern kind", tool: "drop_table", policy: Policy{Effects: []EffectRule{{Tool: "drop_*", Kind: "destructive"}}}, want: Effect{KindDestructive, false}},
		{name: "pattern does not match", tool: "list_tables", policy: Policy{Effects: []EffectRule{{Tool: "drop_*", Kind: "destructive"}}}, want: Effect{KindMutate, false}},
		{name: "override corrects a wrong destructive hint", tool: "archive", ann: destr, policy: Policy{Effects: []EffectRule{{Tool: "archive", Kind: "mutate"}}}, want: Effect{KindMutate, false}},
		{name: "exact beats pattern written later", tool: "get_x", policy: Policy{Effects: []EffectRule{{Tool: "get_x", Kind: "evaluate"}, {Tool: "get_*", Kind: "read"}}}, want: Effect{KindEvaluate, false}},
		{name: "exact beats pattern written earlier", tool: "get_x", policy: Policy{Effects: []EffectRule{{Tool: "get_*", Kind: "read"}, {Tool: "get_x", Kind: "evaluate"}}}, want: Effect{KindEvaluate, false}},
		{name: "later pattern wins", tool: "get_x", policy: Policy{Effects: []EffectRule{{Tool: "*", Kind: "mutate"}, {Tool: "get_*", Kind: "read"}}}, want: Effect{KindRead, false}},
		{name: "later pattern wins reversed", tool: "get_x", policy: Policy{Effects: []EffectRule{{Tool: "get_*", Kind: "read"}, {Tool: "*", Kind: "mutate"}}}, want: Effect{KindMutate, false}},
		{name: "fields decided independently", tool: "get_x", ann: readOpen, policy: Policy{Effects: []EffectRule{{Tool: "*", External: fa}, {Tool: "get_x", Kind: "evaluate"}}}, want: Effect{KindEvaluate, false}},
		{name: "pattern sets external", tool: "web_fetch", policy: Policy{Effects: []EffectRule{{Tool: "web_*", External: tr}}}, want: Effect{KindMutate, true}},
		{name: "destructive list exact", tool: "wipe", ann: readOpen, policy: Policy{Destructive: []string{"wipe"}}, want: Effect{KindDestructive, true}},
		{name: "destructive list pattern", tool: "delete_repo", policy: Policy{Destructive: []string{"delete_*"}}, want: Effect{KindDestructive, false}},
		{name: "destructive list beats effect pattern", tool: "delete_repo", policy: Policy{Destructive: []string{"delete_*"}, Effects: []EffectRule{{Tool: "*", Kind: "read"}}}, want: Effect{KindDestructive, false}},
		{name: "middle star", tool: "github.delete_repo", policy: Policy{Destructive: []string{"github.*_repo"}}, want: Effect{KindDestructive, false}},
		{name: "star is not path.Match", tool: "a[b]", policy: Policy{Effects: []EffectRule{{Tool: "a[*", Kind: "read"}}}, want: Effect{KindRead, false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := EffectOf(&mcp.Tool{Name: tt.tool, Annotations: tt.ann}, &tt.policy)
			if got != tt.want {
				t.Errorf("EffectOf = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestMatchName(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"a", "a", true}, {"a", "ab", false}, {"*", "", true}, {"*", "x", true},
		{"a*", "a", true}, {"a*", "ba", false}, {"*a", "ba", true}, {"*a", "ab", false},
		{"a*b*c", "abc", true}, {"a*b*c", "axxbyyc", true}, {"a*b*c", "acb", false},
		{"ab*ba", "aba", false}, {"ab*ba", "abba", true}, {"x?y*", "x?yz", true}, {"x?y*", "xay", false},
	}
	for _, tt := range tests {
		if got := matchName(tt.pattern, tt.name); got != tt.want {
			t.Errorf("matchName(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
		}
	}
}
