package toolsearch_test

import (
	"reflect"
	"testing"

	"github.com/toolprof/toolprof/toolsearch"
)

func TestNames(t *testing.T) {
	ix := toolsearch.New(docs, nil, toolsearch.Weights{})
	for _, tc := range []struct {
		name  string
		allow func(string) bool
		want  []string
	}{
		{"every tool, by name", nil, []string{"fs.cat", "fs.ls", "fs.mv", "mail.listInbox", "mail.send_message"}},
		{"those allowed", func(n string) bool { return n != "fs.ls" && n != "mail.listInbox" }, []string{"fs.cat", "fs.mv", "mail.send_message"}},
		{"none allowed", func(string) bool { return false }, []string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := ix.Names(tc.allow); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Names = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestLookup(t *testing.T) {
	ix := toolsearch.New(docs, nil, toolsearch.Weights{})
	noLs := func(n string) bool { return n != "fs.ls" }
	for _, tc := range []struct {
		query string
		allow func(string) bool
		want  bool
	}{
		{"fs.cat", nil, true},
		{"fs.cat", noLs, true},
		{"fs.ls", noLs, false},       // filtered out
		{"FS.CAT", nil, false},       // names are exact
		{"print a file", nil, false}, // words rank, they look nothing up
		{toolsearch.ListQuery, nil, false},
	} {
		h, ok := ix.Lookup(tc.query, tc.allow)
		if ok != tc.want || ok && h.Name != tc.query {
			t.Errorf("Lookup(%q) = %v, %v; want ok %v", tc.query, h, ok, tc.want)
		}
	}
}

func TestNamesAnswer(t *testing.T) {
	for _, tc := range []struct {
		names []string
		want  string
	}{
		{nil, `{"names":[]}`},
		{[]string{"fs.cat", "mail.send_message"}, `{"names":["fs.cat","mail.send_message"]}`},
	} {
		got, err := toolsearch.NamesAnswer(tc.names)
		if err != nil || got != tc.want {
			t.Errorf("NamesAnswer(%q) = %s, %v; want %s", tc.names, got, err, tc.want)
		}
	}
}
