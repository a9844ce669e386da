package gateway

import (
	"fmt"

	"github.com/toolprof/toolprof/upstream"
)

// CodeUpstreamUnauthorized: the upstream is an OAuth server without a
// usable token (none stored, the refresh token rejected, or the server
// asked for more scopes); its state in health is needs_login. The call is
// not sent. The first suggested action is the exact profiler login command
// that stores new tokens; the gateway never starts a login itself.
// Category "upstream", retryable once logged in.
const CodeUpstreamUnauthorized = "upstream_unauthorized"

// upstreamUnauthorized is the envelope for a call to an upstream that needs
// a login.
func upstreamUnauthorized(tool string, e *upstream.UnauthorizedError) Envelope {
	return Envelope{
		Code:      CodeUpstreamUnauthorized,
		Message:   fmt.Sprintf("tool %q could not be run: upstream %q needs login (%s)", tool, e.Server, e.Reason),
		Retryable: true,
		Category:  CategoryUpstream,
		SuggestedActions: []string{
			e.Login,
			"retry the call once the login is done (the gateway picks the new tokens up by itself)",
		},
	}
}
