package gateway

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

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
			t.Errorf("CheckCredential(%+v): %v", e, err)
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

// boundsGenerated: narrow holds test_simple_text alone; grouped and
// searchy hold it too and reach beyond it, by group media and by search.
const boundsGenerated = `version = 1
default = "narrow"

[[profile]]
name = "narrow"
tools = ["test_simple_text"]

[[profile]]
name = "grouped"
tools = ["test_simple_text"]
groups = ["media"]

[[profile]]
name = "searchy"
tools = ["test_simple_text"]
search = true

[[group]]
name = "media"
description = "audio and image content tools"
tools = ["test_audio_content", "test_image_content"]
`

// boundsPolicy: deferred lists every tool its rules allow within the
// ceilings, and marks narrow's.
const boundsPolicy = `version = 1

[[profile]]
name = "deferred"
always_load = "narrow"
`

// callToolEnvelope calls tool over cs and returns the envelope; the zero Envelope
// when the call succeeded, and the error of a JSON-RPC error.
func callToolEnvelope(t *testing.T, cs *mcp.ClientSession, tool string, args any) (Envelope, error) {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil || !res.IsError {
		return Envelope{}, err
	}
	return envelopeOf(t, res), nil
}

// A token's ceiling bounds what its requests reach beyond their profile as
// --max-profile does: switching on a group that adds a tool outside it is
// refused whole (group_not_allowed), find_tools returns no tool outside it,
// call_tool and a direct call of one are refused (tool_not_in_profile), and
// none is listed, by an always_load profile either; over both protocols
// (2026-07-28 is offered no groups).
// A token bound to the profile alone, and a request without a token, reach
// those tools. Each arm's profile lies within its ceilings, so every token
// passes CheckCredential.
func TestTokenCeilingBoundsGroupsAndSearch(t *testing.T) {
	cat := everythingCatalog()
	res := writeProfiles(t, cat.Tools, boundsGenerated, boundsPolicy)
	var file strings.Builder
	for _, p := range []string{"grouped", "searchy", "deferred"} {
		file.WriteString(tokenLines(p+"-capped", `ceiling = "narrow"`))
		file.WriteString(tokenLines(p+"-bound-capped", fmt.Sprintf("profile = %q", p), `ceiling = "narrow"`))
		file.WriteString(tokenLines(p+"-bound", fmt.Sprintf("profile = %q", p)))
	}
	src := tokensFile(t, file.String())
	withTokens := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: res, HTTP: HTTPOptions{Tokens: src}})
	checkCredentials(t, withTokens, src)
	server := func(opts Options) string {
		opts.Upstream, opts.Profiles = NewCatalogUpstream(cat), res
		srv := httptest.NewServer(newGateway(t, opts).HTTPHandler())
		t.Cleanup(srv.Close)
		return srv.URL
	}
	tokensURL := httptest.NewServer(withTokens.HTTPHandler())
	t.Cleanup(tokensURL.Close)
	noneURL, maxURL := server(Options{}), server(Options{MaxProfile: "narrow"})
	type arm struct {
		name    string
		url     string // and path
		token   string
		bounded bool
	}
	arms := func(p string) []arm {
		return []arm{
			{"token with ceiling", tokensURL.URL + "/mcp/" + p, p + "-capped", true},
			{"token with profile and ceiling", tokensURL.URL + "/mcp", p + "-bound-capped", true},
			{"token with profile", tokensURL.URL + "/mcp", p + "-bound", false},
			{"no token", noneURL + "/mcp/" + p, "", false},
			{"no token, --max-profile", maxURL + "/mcp/" + p, "", true},
		}
	}
	for _, protocol := range []string{legacyProtocol, protocolSessionless} {
		for _, a := range arms("grouped") {
			t.Run("groups/"+protocol+"/"+a.name, func(t *testing.T) {
				cs := httpClient(t, a.url, "c", a.token, protocol)
				if protocol == legacyProtocol {
					env := callEnvelope(t, cs, profiles.EnableToolsName, map[string]any{"group": "media"})
					switch {
					case a.bounded && (env.Code != CodeGroupNotAllowed || !strings.Contains(env.Message, `"narrow"`)):
						t.Errorf("enable_tools media: %+v, want group_not_allowed naming the ceiling narrow", env)
					case !a.bounded && env.Code != "":
						t.Errorf("enable_tools media: %+v, want it switched on", env)
					}
				}
				audio := callEnvelope(t, cs, "test_audio_content", nil)
				beyond := beyondProfile(res, "narrow", listedNames(t, cs))
				switch {
				case a.bounded || protocol == protocolSessionless:
					if audio.Code != CodeToolNotInProfile {
						t.Errorf("test_audio_content: %+v, want tool_not_in_profile", audio)
					}
					// full holds it but lies beyond the ceiling: a
					// connection to /mcp/full would be refused.
					if a.bounded && slices.ContainsFunc(audio.SuggestedActions, func(s string) bool { return strings.Contains(s, `"full"`) }) {
						t.Errorf("test_audio_content: suggests %q, want no profile beyond the ceiling", audio.SuggestedActions)
					}
					if len(beyond) > 0 {
						t.Errorf("lists %v, want no tool outside narrow", beyond)
					}
				default:
					if audio.Code != CodeUpstreamUnavailable {
						t.Errorf("test_audio_content after enable_tools: %+v, want it forwarded", audio)
					}
					if !slices.Contains(beyond, "test_audio_content") {
						t.Errorf("lists %v after enable_tools, want test_audio_content", beyond)
					}
				}
			})
		}
		for _, a := range arms("searchy") {
			t.Run("search/"+protocol+"/"+a.name, func(t *testing.T) {
				cs := httpClient(t, a.url, "c", a.token, protocol)
				found := findNames(t, cs, map[string]any{"query": "audio content", "limit": 10})
				env, err := callToolEnvelope(t, cs, toolsearch.CallToolName, map[string]any{"name": "test_audio_content"})
				if err != nil {
					t.Fatalf("call_tool test_audio_content: %v", err)
				}
				if a.bounded {
					if len(found) > 0 {
						t.Errorf("find_tools returned %v, want no tool outside narrow", found)
					}
					if env.Code != CodeToolNotInProfile {
						t.Errorf("call_tool test_audio_content: %+v, want tool_not_in_profile", env)
					}
				} else {
					if !slices.Contains(found, "test_audio_content") {
						t.Errorf("find_tools returned %v, want test_audio_content", found)
					}
					if env.Code != CodeUpstreamUnavailable {
						t.Errorf("call_tool test_audio_content: %+v, want it forwarded", env)
					}
				}
				if beyond := beyondProfile(res, "narrow", listedNames(t, cs)); len(beyond) > 0 {
					t.Errorf("lists %v, want no tool outside narrow", beyond)
				}
			})
		}
		for _, a := range arms("deferred") {
			t.Run("always_load/"+protocol+"/"+a.name, func(t *testing.T) {
				cs := httpClient(t, a.url, "c", a.token, protocol)
				lt, err := cs.ListTools(context.Background(), nil)
				if err != nil {
					t.Fatal(err)
				}
				var listed, marked []string
				for _, tool := range lt.Tools {
					listed = append(listed, tool.Name)
					if tool.Meta[MetaAlwaysLoad] == true {
						marked = append(marked, tool.Name)
					}
				}
				if !slices.Equal(marked, []string{"test_simple_text"}) {
					t.Errorf("marks %v always-load, want narrow's test_simple_text", marked)
				}
				beyond := beyondProfile(res, "narrow", listed)
				audio := callEnvelope(t, cs, "test_audio_content", nil)
				if a.bounded {
					if len(beyond) > 0 {
						t.Errorf("lists %v, want no tool outside narrow", beyond)
					}
					if audio.Code != CodeToolNotInProfile {
						t.Errorf("test_audio_content: %+v, want tool_not_in_profile", audio)
					}
					return
				}
				if !slices.Contains(beyond, "test_audio_content") {
					t.Errorf("lists %v, want test_audio_content", beyond)
				}
				if audio.Code != CodeUpstreamUnavailable {
					t.Errorf("test_audio_content: %+v, want it forwarded", audio)
				}
			})
		}
	}
}

// A token's ceiling is read on every request: narrowed by a tokens file
// edit while a 2025-11-25 session holds a group switched on under the old
// one, the session no longer lists or calls the group's tools beyond it,
// and its other tools still serve.
func TestTokenCeilingHoldsAfterTokensReload(t *testing.T) {
	cat := everythingCatalog()
	res := writeProfiles(t, cat.Tools, strings.Replace(boundsGenerated, `default = "narrow"`, `default = "narrow"

[[profile]]
name = "wide"
tools = ["test_audio_content", "test_image_content", "test_simple_text"]`, 1), "version = 1\n")
	src := tokensFile(t, tokenLines("t", `ceiling = "wide"`))
	g := newGateway(t, Options{Upstream: NewCatalogUpstream(cat), Profiles: res, HTTP: HTTPOptions{Tokens: src}})
	srv := httptest.NewServer(g.HTTPHandler())
	t.Cleanup(srv.Close) // after the client's Close, registered later
	cs := httpClient(t, srv.URL+"/mcp/grouped", "c", "t", legacyProtocol)
	if env := callEnvelope(t, cs, profiles.EnableToolsName, map[string]any{"group": "media"}); env.Code != "" {
		t.Fatalf("enable_tools media within ceiling wide: %+v", env)
	}
	if env := callEnvelope(t, cs, "test_audio_content", nil); env.Code != CodeUpstreamUnavailable {
		t.Fatalf("test_audio_content within ceiling wide: %+v, want it forwarded", env)
	}
	// Another size than before: Refresh sees the change by size too.
	if err := os.WriteFile(src.Health().File, []byte(tokenLines("t", `ceiling = "narrow"`)), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := src.Refresh(); err != nil {
		t.Fatal(err)
	}
	if e, _ := src.Lookup("t"); e.Ceiling != "narrow" {
		t.Fatalf("after the edit the token's ceiling is %q, want narrow", e.Ceiling)
	}
	if env := callEnvelope(t, cs, "test_audio_content", nil); env.Code != CodeToolNotInProfile {
		t.Errorf("test_audio_content beyond the new ceiling: %+v, want tool_not_in_profile", env)
	}
	if beyond := beyondProfile(res, "narrow", listedNames(t, cs)); len(beyond) > 0 {
		t.Errorf("lists %v beyond the new ceiling narrow", beyond)
	}
	if env := callEnvelope(t, cs, "test_simple_text", nil); env.Code != CodeUpstreamUnavailable {
		t.Errorf("test_simple_text: %+v, want it forwarded", env)
	}
}
