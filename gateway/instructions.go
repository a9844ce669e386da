package gateway

import (
	"fmt"
	"strings"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/profiles"
)

// InstructionsUpstream is an Upstream whose servers have instructions of
// their own (from their initialize results), which the gateway serves
// after the profile's. upstream.Set, ClientUpstream and CatalogUpstream
// implement it.
type InstructionsUpstream interface {
	// Instructions are the servers' instructions in launch-document
	// order, only servers that sent some.
	Instructions() []catalog.ServerInstructions
}

// upstreamInstructions appends to base each upstream's instructions that
// keep serves (as sent, or replaced), each under a heading naming its
// server, so that a client sees whose advice it is.
func upstreamInstructions(base string, up Upstream, keep profiles.UpstreamInstructions) string {
	src, ok := up.(InstructionsUpstream)
	if !ok {
		return base
	}
	var parts []string
	for _, si := range src.Instructions() {
		text := strings.TrimRight(keep.For(si.Server, si.Instructions), " \t\r\n")
		if text != "" {
			parts = append(parts, fmt.Sprintf("## Instructions of MCP server %q\n\n%s", si.Server, text))
		}
	}
	if len(parts) == 0 {
		return base // the profile's text exactly as written
	}
	if b := strings.TrimRight(base, " \t\r\n"); b != "" {
		parts = append([]string{b}, parts...)
	}
	return strings.Join(parts, "\n\n")
}
