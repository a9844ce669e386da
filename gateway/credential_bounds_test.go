package gateway

import (
	"fmt"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/tokens"
	"github.com/toolprof/toolprof/toolsearch"
)

// tokenLines is a tokens file entry for token, bound by binding (TOML
// lines such as `profile = "core"`).
func tokenLines(token string, binding ...string) string {
	return fmt.Sprintf("[[token]]\nsha256 = %q\n%s\n", tokens.HashToken(token), strings.Join(binding, "\n"))
}

// checkCredentials fails t unless g accepts every entry of src, as the
// tokens file's loader would.
func checkCredentials(t *testing.T, g *Gateway, src *tokens.Source) {
	t.Helper()
	for _, e := range src.Current().Entries() {
		if err := g.CheckCredential(e); err != nil {
			t.Fatalf("CheckCredential(%+v): %v", e, err)
		}
	}
}

// beyondProfile returns the names of listed outside profile p of r,
// the gateway's own tools left out.
func beyondProfile(r *profiles.Resolved, p string, listed []string) []string {
	var out []string
	for _, n := range listed {
		own := n == profiles.EnableToolsName || n == toolsearch.FindToolsName || n == toolsearch.CallToolName
		if !own && !r.Profiles[p].Has(n) {
			out = append(out, n)
		}
	}
	return out
}

// A token bound to a profile or a ceiling is never explored, over either
// protocol: exploration would serve it full, beyond what the operator
// bound it to. A token bound to nothing, and a request to a gateway
// without a tokens file, are explored (Explore 1 explores every request
// that may be). A call reaching the recorded catalog upstream answers
// upstream_unavailable: that code means it was forwarded.
func TestExplorationKeepsTokenBinding(t *testing.T) {
	cat := everythingCatalog()
	res := testProfiles(t, cat.Tools)
	src := tokensFile(t, tokenLines("bound", `profile = "core"`)+tokenLines("capped", `ceiling = "core"`)+tokenLines("plain"))
	withTokens := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: res, Explore: 1, HTTP: HTTPOptions{Tokens: src}})
	checkCredentials(t, withTokens, src)
	without := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: res, Explore: 1})
	srvTokens := httptest.NewServer(withTokens.HTTPHandler())
	t.Cleanup(srvTokens.Close)
	srvNone := httptest.NewServer(without.HTTPHandler())
	t.Cleanup(srvNone.Close)
	for _, protocol := range []string{legacyProtocol, protocolSessionless} {
		for _, tc := range []struct {
			name     string
			url      string
			token    string
			explored bool
		}{
			{"token with profile", srvTokens.URL, "bound", false},
			{"token with ceiling", srvTokens.URL, "capped", false},
			{"token bound to nothing", srvTokens.URL, "plain", true},
			{"no token", srvNone.URL, "", true},
		} {
			t.Run(protocol+"/"+tc.name, func(t *testing.T) {
				cs := httpClient(t, tc.url+"/mcp/core", "c", tc.token, protocol)
				listed := listedNames(t, cs)
				beyond := beyondProfile(res, "core", listed)
				audio := callEnvelope(t, cs, "test_audio_content", nil)
				if tc.explored {
					if len(listed) != len(res.Profiles[FullProfile].Tools) {
						t.Errorf("lists %d tools, want full's %d (explored)", len(listed), len(res.Profiles[FullProfile].Tools))
					}
					if audio.Code != CodeUpstreamUnavailable {
						t.Errorf("test_audio_content: %+v, want it forwarded (explored)", audio)
					}
					return
				}
				if len(beyond) > 0 {
					t.Errorf("lists %v outside core, want none: the token is bound to core", beyond)
				}
				if audio.Code != CodeToolNotInProfile {
					t.Errorf("test_audio_content: %+v, want tool_not_in_profile, never forwarded", audio)
				}
				if env := callEnvelope(t, cs, "test_simple_text", nil); env.Code != CodeUpstreamUnavailable {
					t.Errorf("test_simple_text: %+v, want it forwarded (core holds it)", env)
				}
			})
		}
	}
}
