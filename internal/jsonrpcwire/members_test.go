package jsonrpcwire

import (
	"strings"
	"testing"
)

func TestMembers(t *testing.T) {
	names := []string{"name", "arguments", "_meta"}
	for _, tt := range []struct {
		data string
		want string // the values, or "refused"
	}{
		{`{"name":"t","arguments":{"a":[1,"}"]}}`, `"t" {"a":[1,"}"]} -`},
		{` { "_meta" : {} , "name" : "x\"y" } `, `"x\"y" - {}`},
		{`{}`, `- - -`},
		{`{"name":"a","name":"b"}`, "refused"},
		{`{"Name":"a"}`, "refused"},
		{`{"n\u0061me":"a"}`, "refused"},
		{`{"name":"a","extra":1}`, "refused"},
		{`{"name":"a"} x`, "refused"},
		{`["name"]`, "refused"},
		{`"name"`, "refused"},
		{``, "refused"},
		{`{"name":`, "refused"},
	} {
		v, ok := Members([]byte(tt.data), names...)
		got := "refused"
		if ok {
			parts := make([]string, len(v))
			for i, m := range v {
				parts[i] = "-" // absent
				if m != nil {
					parts[i] = string(m)
				}
			}
			got = strings.Join(parts, " ")
		}
		if got != tt.want {
			t.Errorf("Members(%s) = %s, want %s", tt.data, got, tt.want)
		}
	}
}
