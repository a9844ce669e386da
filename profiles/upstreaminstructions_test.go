package profiles

import (
	"strings"
	"testing"
)

// TestUpstreamInstructions: what each profile serves of each server's
// instructions, from profiles.toml's top-level and per-profile
// upstream_instructions.
func TestUpstreamInstructions(t *testing.T) {
	const policy = `version = 1
[upstream_instructions]
github = "drop"
[[profile]]
name = "core"
upstream_instructions = "drop"
[[profile]]
name = "standard"
[profile.upstream_instructions]
everything = "Use the test_* tools."
github = "GitHub, briefly."
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
		profile, server, want string
	}{
		{"core", "everything", ""},
		{"core", "github", ""},
		{"standard", "everything", "Use the test_* tools."},
		{"standard", "github", "GitHub, briefly."},
		{"standard", "memory", "sent"},
		{"full", "github", ""}, // the top level's drop
		{"full", "everything", "sent"},
	}
	for _, c := range cases {
		if got := r.Profiles[c.profile].UpstreamInstructions.For(c.server, "sent"); got != c.want {
			t.Errorf("profile %q, server %q: %q, want %q", c.profile, c.server, got, c.want)
		}
	}
	if got := Full(offered()).Profiles[FullProfile].UpstreamInstructions.For("github", "sent"); got != "sent" {
		t.Errorf("without profiles files: %q, want the upstream's own", got)
	}
}
