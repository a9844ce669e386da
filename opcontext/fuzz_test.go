package opcontext

import (
	"fmt"
	"strings"
	"testing"
)

// FuzzParse: any sidecar parses or fails with an error naming the file; a
// parsed one answers its section names without panicking.
func FuzzParse(f *testing.F) {
	f.Add([]byte(fmt.Sprintf(sidecar, "reject")))
	f.Add([]byte("version = 1\n"))
	f.Add([]byte("version = 1\n[registry]\nargument = \"workspace\"\nenforce = \"off\"\n"))
	f.Add([]byte("version = 1\nenforce = warn\n"))
	const name = "fuzz-oc.toml"
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := Parse(name, data)
		if err != nil {
			if !strings.Contains(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		file.SectionNames()
		file.validIDs()
	})
}
