package gateway

import (
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
)

// TestUpstreamInstructionsServed: a session's instructions are its
// profile's, then the operating context's summary, then each upstream's
// under a heading naming the server, in launch-document order; profiles.toml
// upstream_instructions drops or replaces them, per profile or for all.
func TestUpstreamInstructionsServed(t *testing.T) {
	const generated = `version = 1
default = "work"

[[profile]]
name = "work"
tools = ["lookup"]
instructions = "Work profile."

[[profile]]
name = "quiet"
tools = ["lookup"]
instructions = "Quiet profile."

[[profile]]
name = "brief"
tools = ["lookup"]
`
	const policy = `version = 1

[[profile]]
name = "quiet"
upstream_instructions = "drop"

[[profile]]
name = "brief"
[profile.upstream_instructions]
alpha = "drop"
beta = "Beta, briefly."
`
	cat := effectTools()
	cat.Instructions = []catalog.ServerInstructions{
		{Server: "alpha", Instructions: "Alpha says hello.\n"},
		{Server: "beta", Instructions: "Beta says hello."},
	}
	r := writeProfiles(t, cat.Tools, generated, policy)
	oc, _ := contextSidecar(t, rejectSidecar)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: r, OperatingContext: oc})
	alpha := "## Instructions of MCP server \"alpha\"\n\nAlpha says hello."
	beta := "## Instructions of MCP server \"beta\"\n\nBeta says hello."
	cases := []struct {
		profile string
		want    string
	}{
		{"work", strings.Join([]string{"Work profile.", "Context summary.", alpha, beta}, "\n\n")},
		{"quiet", "Quiet profile.\n\nContext summary."},
		{"brief", strings.Join([]string{"Context summary.", "## Instructions of MCP server \"beta\"\n\nBeta, briefly."}, "\n\n")},
		{FullProfile, strings.Join([]string{"Context summary.", alpha, beta}, "\n\n")},
	}
	for _, c := range cases {
		t.Run(c.profile, func(t *testing.T) {
			if got := connect(t, g, c.profile).InitializeResult().Instructions; got != c.want {
				t.Errorf("instructions:\n%q\nwant:\n%q", got, c.want)
			}
		})
	}
}
