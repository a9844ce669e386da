package main

import (
	"fmt"
	"slices"

	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
	"github.com/toolprof/toolprof/upstream"
)

// withOAuth gives opts the token store and login command when the
// document declares an OAuth server; the gateway only uses and refreshes
// tokens, `profiler login` obtains them.
func withOAuth(c *config, doc *launch.Resolved, opts upstream.Options) (upstream.Options, error) {
	if !slices.ContainsFunc(doc.Servers, func(s launch.ResolvedServer) bool { return s.OAuth != nil }) {
		return opts, nil
	}
	path, err := oauthstore.DefaultPath()
	if err != nil {
		return opts, err
	}
	opts.Tokens = oauthstore.Open(path)
	opts.LoginCommand = func(server string) string { return loginCommand(c.launchPath, c.persona, server) }
	return opts, nil
}

// loginCommand is the profiler command that logs in to server.
func loginCommand(launchPath, persona, server string) string {
	cmd := "profiler login --launch " + launchPath
	if persona != "" {
		cmd += " --persona " + persona
	}
	return fmt.Sprintf("%s --server %s", cmd, server)
}
