package jsonrpcwire

import (
	"encoding/json"
	"reflect"
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
		if json.Valid([]byte(tt.data)) { // ValidMembers, of what it is given, is Members
			if vv, vok := ValidMembers([]byte(tt.data), names...); vok != ok || !reflect.DeepEqual(vv, v) {
				t.Errorf("ValidMembers(%s) = %q %v, Members %q %v", tt.data, vv, vok, v, ok)
			}
		}
	}
}

// TestElementsIsEncodingJSONs: elements splits an array as encoding/json
// decodes it into []json.RawMessage.
func TestElementsIsEncodingJSONs(t *testing.T) {
	for _, data := range []string{`[]`, ` [ ] `, `[1]`, `[ 1 , "a,]" , {"b":[2,3]} , [[]] , null , true ]`, "[\n\t{}\r\n]", `["\"]"]`} {
		var want []json.RawMessage
		if err := json.Unmarshal([]byte(data), &want); err != nil {
			t.Fatal(err)
		}
		got, ok := elements([]byte(data))
		if !ok || !reflect.DeepEqual(got, want) {
			t.Errorf("elements(%s) = %q %v, encoding/json %q", data, got, ok, want)
		}
	}
	for _, data := range []string{`{}`, `"[]"`, `1`} {
		if got, ok := elements([]byte(data)); ok {
			t.Errorf("elements(%s) = %q, want it refused: not an array", data, got)
		}
	}
}
