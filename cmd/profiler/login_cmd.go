package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/internal/version"
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
		return loginStatus(stdout, store, servers)
	}
	for _, s := range servers {
		if err := loginServer(ctx, stderr, store, s, *timeout); err != nil {
			return err
		}
	}
	return nil
}

func loginStatus(stdout io.Writer, store *oauthstore.Store, servers []launch.ResolvedServer) error {
	tw := tabwriter.NewWriter(stdout, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tRESOURCE\tTOKENS")
	for _, s := range servers {
		key := upstream.ResourceKey(&s)
		e, ok, err := store.Get(key)
		if err != nil {
			return err
		}
		st := "needs login: no tokens stored"
		if ok {
			st = e.Status(time.Now())
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", s.Name, s.Scrub(key.Resource), st)
	}
	return tw.Flush()
}

// loginServer logs in to s unless its stored token is usable or can be
// refreshed.
func loginServer(ctx context.Context, stderr io.Writer, store *oauthstore.Store, s launch.ResolvedServer, timeout time.Duration) error {
	key := upstream.ResourceKey(&s)
	if _, err := store.Source(key, s.OAuth.ClientSecret).Token(ctx); err == nil {
		fmt.Fprintf(stderr, "profiler: server %q: token valid, nothing to do\n", s.Name)
		return nil
	}
	lb, err := upstream.ListenLoopback(s.OAuth.RedirectPort)
	if err != nil {
		return fmt.Errorf("login: server %q: %w", s.Name, err)
	}
	defer lb.Close()
	show := func(u string) {
		fmt.Fprintf(stderr, "profiler: to authorize toolprof for server %q, open:\n\n  %s\n\n", s.Name, u)
		if p, err := exec.LookPath("xdg-open"); err == nil {
			cmd := exec.Command(p, u)
			if cmd.Start() == nil {
				go cmd.Wait() //nolint:errcheck // the browser's exit says nothing about the login
			}
		}
	}
	opts := upstream.Options{
		Implementation: &mcp.Implementation{Name: version.Name, Version: version.Version},
		Tokens:         store,
		ConnectTimeout: timeout,
	}
	err = upstream.Login(ctx, s, opts, upstream.LoginFlow{RedirectURL: lb.RedirectURL(), Fetch: lb.Fetcher(show)})
	if err != nil {
		return fmt.Errorf("login: server %q: %s", s.Name, s.Scrub(err.Error()))
	}
	fmt.Fprintf(stderr, "profiler: server %q: logged in, tokens stored in %s\n", s.Name, store.Path())
	return nil
}
