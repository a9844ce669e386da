package gateway

import (
	"slices"
	"testing"
)

// A session connected to a read_only profile is never picked for
// exploration: exploration serves full (or the ceiling), which would let
// it list and call mutating and destructive tools the operator made that
// profile refuse. Explore 1 picks every other session.
func TestExplorationKeepsReadOnlyProfile(t *testing.T) {
	cat := effectTools()
	r := writeProfiles(t, cat.Tools, effectGenerated, effectPolicy)
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: r, Explore: 1})
	ro := connect(t, g, "review")
	if env := callEnvelope(t, ro, "wipe", nil); env.Code != CodeReadOnly && env.Code != CodeToolNotInProfile {
		t.Errorf("wipe from a session of read_only review: %+v, want it refused, never forwarded", env)
	}
	if got := listedNames(t, ro); slices.Contains(got, "wipe") {
		t.Errorf("read_only review lists %v, want no destructive tool", got)
	}
	// Any other profile's sessions still explore: work lacks wipe, full holds it, and the
	// call reaches the recorded catalog upstream (upstream_unavailable).
	other := connect(t, g, "work")
	if env := callEnvelope(t, other, "wipe", nil); env.Code != CodeUpstreamUnavailable {
		t.Errorf("wipe from an exploration session: %+v, want it forwarded", env)
	}
}
