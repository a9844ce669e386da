package profiles

import (
	"os"
	"strings"
	"testing"
)

// Reload is Load, but a profiles.toml that the set in force was loaded
// with may not vanish: its removal is an error naming it until it is back.
func TestReload(t *testing.T) {
	gen := "version = 1\ndefault = \"core\"\n[[profile]]\nname = \"core\"\ntools = [\"read_file\"]\n"
	policy := "version = 1\n[[profile]]\nname = \"core\"\ndeny = [\"read_file\"]\n"
	path := writeFiles(t, gen, policy)
	withPolicy, err := Load(path)
	if err != nil || withPolicy.Policy == nil {
		t.Fatalf("load: %+v %v", withPolicy, err)
	}
	if err := os.Remove(PolicyPathFor(path)); err != nil {
		t.Fatal(err)
	}
	withoutPolicy, err := Load(path)
	if err != nil || withoutPolicy.Policy != nil {
		t.Fatalf("load without profiles.toml: %+v %v", withoutPolicy, err)
	}
	for _, tc := range []struct {
		name    string
		last    *Set
		present bool // profiles.toml on disk
		wantErr bool
	}{
		{"removed after being served", withPolicy, false, true},
		{"absent, never served", withoutPolicy, false, false},
		{"absent, no set served yet", nil, false, false},
		{"back after its removal", withPolicy, true, false},
		{"appears", withoutPolicy, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pp := PolicyPathFor(path)
			os.Remove(pp)
			if tc.present {
				if err := os.WriteFile(pp, []byte(policy), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			s, err := Reload(path, tc.last)
			if tc.wantErr {
				if s != nil || err == nil || !strings.Contains(err.Error(), pp+" was removed") || !strings.Contains(err.Error(), `write "version = 1"`) {
					t.Fatalf("Reload = %+v, %v; want an error naming %s", s, err, pp)
				}
				return
			}
			if err != nil || s == nil || (s.Policy != nil) != tc.present {
				t.Fatalf("Reload = %+v, %v; want the set, profiles.toml loaded: %v", s, err, tc.present)
			}
		})
	}
	// The generated file's errors are Load's.
	os.Remove(path)
	if _, err := Reload(path, withPolicy); err == nil || !strings.Contains(err.Error(), path) {
		t.Errorf("generated file missing: %v", err)
	}
}
