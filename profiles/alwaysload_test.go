package profiles

import (
	"errors"
	"slices"
	"strings"
	"testing"
)

// TestAlwaysLoad: a profile with always_load lists every offered tool its
// rules allow and names the profile loaded up front; one that names no
// other profile (or one that itself defers) fails with the file, line and
// key at Load, and at Resolve for a set built by hand.
func TestAlwaysLoad(t *testing.T) {
	gen := "version = 1\ndefault = \"core\"\n[[profile]]\nname = \"core\"\ntools = [\"read_file\"]\n"
	path := writeFiles(t, gen, "version = 1\n[[profile]]\nname = \"deferred\"\nalways_load = \"core\"\ndeny = [\"list_dir\"]\n")
	s, err := Load(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := s.Resolve(offered())
	if err != nil {
		t.Fatal(err)
	}
	d := r.Profiles["deferred"]
	var want []string
	for _, tool := range r.Tools {
		if tool != "list_dir" && r.effects[tool].Kind != KindDestructive {
			want = append(want, tool)
		}
	}
	if d.AlwaysLoad != "core" || !slices.Equal(d.Tools, want) || len(d.Removed) > 0 {
		t.Fatalf("deferred = %+v, want always_load core and tools %v (denied and destructive left out, unwarned)", d, want)
	}
	for _, tc := range []struct{ name, policy string }{
		{"unknown profile", "version = 1\n[[profile]]\nname = \"deferred\"\nalways_load = \"cor\"\n"},
		{"itself", "version = 1\n[[profile]]\nname = \"deferred\"\nalways_load = \"deferred\"\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := writeFiles(t, gen, tc.policy)
			_, err := Load(path)
			var e *Error
			if !errors.As(err, &e) || e.Line != 4 || e.Key != "profile[0].always_load" || !strings.Contains(e.Msg, "valid profiles: core, deferred, full") {
				t.Fatalf("err = %v", err)
			}
			f, _ := LoadFile(path)
			p, _ := LoadPolicy(PolicyPathFor(path))
			if _, err := (&Set{File: f, Policy: p}).Resolve(offered()); err == nil || !strings.Contains(err.Error(), "always_load") {
				t.Fatalf("Resolve of a set built by hand: %v", err)
			}
		})
	}
	t.Run("chain", func(t *testing.T) {
		path := writeFiles(t, gen, "version = 1\n[[profile]]\nname = \"a\"\nalways_load = \"b\"\n[[profile]]\nname = \"b\"\nalways_load = \"core\"\n")
		f, _ := LoadFile(path)
		p, _ := LoadPolicy(PolicyPathFor(path))
		if _, err := (&Set{File: f, Policy: p}).Resolve(offered()); err == nil || !strings.Contains(err.Error(), "without always_load") {
			t.Fatalf("always_load of a profile that defers: %v", err)
		}
	})
}
