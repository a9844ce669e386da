package gateway

import (
	"context"
	"encoding/json"
	"os/exec"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// iconsPolicy drops icons in core, keeps them in full and leaves standard
// to the server.
const iconsPolicy = `version = 1
[[profile]]
name = "core"
pin = ["draw", "plain"]
icons = "drop"
[[profile]]
name = "standard"
pin = ["draw", "plain"]
[[profile]]
name = "full"
icons = "keep"
`

// iconsGateway serves the iconserver under iconsPolicy: over an
// upstream.Set, which keeps the server's own definitions (raw), or over a
// plain client session (the tools as parsed).
func iconsGateway(t *testing.T, raw, dropIcons bool) *Gateway {
	t.Helper()
	ctx := context.Background()
	bin := testupstream.IconServer(t)
	var up Upstream
	if raw {
		doc := &launch.Resolved{Version: 1, Servers: []launch.ResolvedServer{{Name: "icons", Transport: launch.Stdio, Command: bin}}}
		set, err := upstream.StartSet(ctx, doc, upstream.SetOptions{Client: upstream.Options{ProtocolVersion: "2025-11-25"}, RequireAll: true})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { set.Close() })
		up = set
	} else {
		cu, err := NewClientUpstream(ctx, &mcp.CommandTransport{Command: exec.Command(bin)})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { cu.Close() })
		up = cu
	}
	list, err := up.ListTools(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pol, err := profiles.DecodePolicy(strings.NewReader(iconsPolicy), "profiles.toml")
	if err != nil {
		t.Fatal(err)
	}
	set := &profiles.Set{File: &profiles.File{Version: profiles.Version, Default: profiles.FullProfile}, Policy: pol}
	resolved, err := set.Resolve(list)
	if err != nil {
		t.Fatal(err)
	}
	g, err := New(ctx, Options{Upstream: up, Tools: list, Profiles: resolved, DropIcons: dropIcons})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { g.Close() })
	return g
}

// listedEntries are the tool entries of profile's tools/list result as
// they travelled, by tool name.
func listedEntries(t *testing.T, g *Gateway, profile string) map[string]string {
	t.Helper()
	c, err := price.NewCounter()
	if err != nil {
		t.Fatal(err)
	}
	srv, err := g.Server(profile)
	if err != nil {
		t.Fatal(err)
	}
	ex, err := exchange.Measure(context.Background(), srv, exchange.Options{Counter: c})
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Result struct {
			Tools []json.RawMessage `json:"tools"`
		} `json:"result"`
	}
	if err := json.Unmarshal(ex.Messages[len(ex.Messages)-1].Raw, &res); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range res.Result.Tools {
		var head struct{ Name string }
		if err := json.Unmarshal(e, &head); err != nil {
			t.Fatal(err)
		}
		out[head.Name] = string(e)
	}
	return out
}

// TestIconsDroppedAndKept: a profile with icons = "drop", or one that does
// not say under a server that drops them, lists each tool without its
// icons member and with every other member byte for byte as a profile
// keeping them lists it; icons = "keep" wins over the server's drop. The
// server's text ('<', '>', '&') is served as it sent it, unescaped.
func TestIconsDroppedAndKept(t *testing.T) {
	for _, raw := range []bool{true, false} {
		for _, c := range []struct {
			serverDrops bool
			profile     string
			wantDrop    bool
		}{
			{false, "core", true},
			{false, "standard", false},
			{false, "full", false},
			{true, "core", true},
			{true, "standard", true},
			{true, "full", false},
		} {
			name := "parsed"
			if raw {
				name = "raw"
			}
			t.Run(name, func(t *testing.T) {
				g := iconsGateway(t, raw, c.serverDrops)
				kept := listedEntries(t, g, profiles.FullProfile)
				if c.serverDrops {
					// full keeps them whatever the server says.
					kept = listedEntries(t, iconsGateway(t, raw, false), profiles.FullProfile)
				}
				got := listedEntries(t, g, c.profile)
				draw := kept["draw"]
				if !strings.Contains(draw, `"icons":[{"src":"data:image/png;base64,`) || !strings.Contains(draw, `Draws <shapes> & lines: (a) => b.`) {
					t.Fatalf("kept entry lacks the server's icons or text as sent: %s", draw)
				}
				var obj map[string]json.RawMessage
				if err := json.Unmarshal([]byte(draw), &obj); err != nil {
					t.Fatal(err)
				}
				want := draw
				if c.wantDrop {
					member := `"icons":` + string(obj["icons"])
					if want = strings.Replace(draw, member+`,`, "", 1); want == draw {
						want = strings.Replace(draw, `,`+member, "", 1) // the last member
					}
				}
				if got["draw"] != want {
					t.Errorf("server drops %v, profile %s: draw listed as\n%s\nwant\n%s", c.serverDrops, c.profile, got["draw"], want)
				}
				if got["plain"] != kept["plain"] {
					t.Errorf("profile %s: plain listed as %s, want %s", c.profile, got["plain"], kept["plain"])
				}
			})
		}
	}
}
