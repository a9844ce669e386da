package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
	"github.com/toolprof/toolprof/upstream"
)

// runLogin runs the OAuth authorization code flow for the servers of a
// launch document that have no usable token, or lists their tokens.
func runLogin(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("login", "--launch FILE [--persona NAME] [--server NAME] [--status]",
		"Logs in to the OAuth servers (\"oauth\" entries) without a usable token: prints the URL (opens\n"+
			"a browser via xdg-open), takes the code on a loopback redirect and stores the tokens, mode 0600,\n"+
			"in $"+oauthstore.EnvPath+" or the user config directory. --status lists token expiry, never a token.", stderr)
	file := fs.String("launch", "", "pack `FILE` in .mcp.json format (required)")
	persona := fs.String("persona", "", "persona `NAME`: merges personas/NAME.mcp.json beside the pack")
	only := fs.String("server", "", "log in to the server `NAME` only")
	status := fs.Bool("status", false, "list the OAuth servers and their token expiry; log in to none")
	timeout := fs.Duration("timeout", 10*time.Minute, "how long to wait for each authorization")
	if help, err := parseCommandFlags("login", fs, args); help || err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return usagef("login: unexpected argument %q", fs.Arg(0))
	}
	if *file == "" {
		return usagef("login: --launch FILE is required")
	}
	if *timeout <= 0 {
		return usagef("login: --timeout %v: want a positive duration", *timeout)
	}
	doc, err := launch.Load(*file, *persona)
	if err != nil {
		return err
	}
	resolved, err := doc.Resolve(os.LookupEnv)
	if err != nil {
		return fmt.Errorf("resolve %s: %w", *file, err)
	}
	var servers []launch.ResolvedServer
	for _, s := range resolved.Servers {
		if s.OAuth != nil && (*only == "" || s.Name == *only) {
			servers = append(servers, s)
		}
	}
	if len(servers) == 0 {
		if *only != "" {
			return fmt.Errorf("login: %s declares no server %q with \"oauth\"", *file, *only)
		}
		return fmt.Errorf("login: %s declares no server with \"oauth\"", *file)
	}
	path, err := oauthstore.DefaultPath()
	if err != nil {
		return err
	}
	store := oauthstore.Open(path)
	if *status {
		return upstream.WriteTokenStatus(stdout, store, servers)
	}
	for _, s := range servers {
		if err := upstream.LoginStored(ctx, "profiler", stderr, store, s, *timeout); err != nil {
			return err
		}
	}
	return nil
}
