package profiles

import (
	"bytes"
	"os"
	"strings"
	"testing"
)

// fuzzName labels the fuzzed input in errors; every error must name it.
const fuzzName = "fuzz.toml"

// FuzzDecodeFile: any input either decodes, and then encodes and decodes
// again to the same file, or fails with an error naming the file. It never
// panics.
func FuzzDecodeFile(f *testing.F) {
	for _, p := range []string{"testdata/example/profiles.generated.toml", "testdata/encode.golden.toml"} {
		if b, err := os.ReadFile(p); err == nil {
			f.Add(b)
		}
	}
	f.Add([]byte("version = 1\ndefault = \"core\"\n[[profile]]\nname = \"core\"\ntools = [\"a\"]\n"))
	f.Add([]byte("version = 99\n"))
	f.Add([]byte("version = 1\n[[profile]]\nname = \"\"\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		file, err := DecodeFile(bytes.NewReader(data), fuzzName)
		if err != nil {
			if !strings.Contains(err.Error(), fuzzName) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		var out bytes.Buffer
		if err := Encode(&out, file); err != nil {
			return // a value the encoder refuses (reported, not written)
		}
		again, err := DecodeFile(bytes.NewReader(out.Bytes()), fuzzName)
		if err != nil {
			t.Fatalf("re-encoded file does not decode: %v\n%s", err, out.Bytes())
		}
		var out2 bytes.Buffer
		if err := Encode(&out2, again); err != nil || !bytes.Equal(out.Bytes(), out2.Bytes()) {
			t.Fatalf("encoding is not stable (%v):\n%s\n---\n%s", err, out.Bytes(), out2.Bytes())
		}
	})
}

// FuzzDecodePolicy: any input decodes or fails with an error naming the
// file; it never panics.
func FuzzDecodePolicy(f *testing.F) {
	if b, err := os.ReadFile("testdata/example/profiles.toml"); err == nil {
		f.Add(b)
	}
	f.Add([]byte("version = 1\ndestructive = [\"delete_*\"]\n[[effect]]\ntool = \"*\"\nkind = \"read\"\n"))
	f.Add([]byte("version = 1\n[[profile]]\nname = \"x\"\npin = [\"a\"]\nread_only = true\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		if _, err := DecodePolicy(bytes.NewReader(data), fuzzName); err != nil && !strings.Contains(err.Error(), fuzzName) {
			t.Fatalf("error does not name the file: %v", err)
		}
	})
}
