package profiles

import (
	"strings"
	"testing"
)

// TestIcons: each profile's icons key reaches its resolved profile, full
// included, and decides with the server's setting whether icons are
// dropped: the key wins, and a profile that does not say follows the
// server.
func TestIcons(t *testing.T) {
	const policy = `version = 1
[[profile]]
name = "core"
icons = "drop"
[[profile]]
name = "full"
icons = "keep"
`
	pol, err := DecodePolicy(strings.NewReader(policy), "profiles.toml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := (&Set{File: baseFile(), Policy: pol}).Resolve(offered())
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		profile       string
		serverDrops   bool
		want          bool
		wantKeyInFile string
	}{
		{"core", false, true, IconsDrop},
		{"core", true, true, IconsDrop},
		{"full", false, false, IconsKeep},
		{"full", true, false, IconsKeep},
		{"standard", false, false, ""},
		{"standard", true, true, ""},
	}
	for _, c := range cases {
		rp := r.Profiles[c.profile]
		if rp.Icons != c.wantKeyInFile {
			t.Errorf("profile %q: icons %q, want %q", c.profile, rp.Icons, c.wantKeyInFile)
		}
		if got := DropsIcons(rp.Icons, c.serverDrops); got != c.want {
			t.Errorf("profile %q, server drops %v: drops %v, want %v", c.profile, c.serverDrops, got, c.want)
		}
	}
}
