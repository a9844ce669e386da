package catalog

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

func TestLoadNames(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	a := write("a.json", `{"tools":[{"name":"read","inputSchema":{"type":"object"}},{"name":"write","inputSchema":{"type":"object"}}]}`)
	b := write("b.json", `{"tools":[{"name":"write","inputSchema":{"type":"object"}},{"name":"rm","inputSchema":{"type":"object"}}]}`)
	got, err := LoadNames([]string{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]bool{"read": true, "write": true, "rm": true}; !reflect.DeepEqual(got, want) {
		t.Errorf("LoadNames = %v, want %v", got, want)
	}
	if got, err := LoadNames(nil); err != nil || len(got) != 0 {
		t.Errorf("LoadNames(nil) = %v, %v; want an empty set", got, err)
	}
	if _, err := LoadNames([]string{a, filepath.Join(dir, "absent.json")}); err == nil {
		t.Error("LoadNames with a missing catalog: want an error")
	}
}
