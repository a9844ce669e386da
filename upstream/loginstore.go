package upstream

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/url"
	"os/exec"
	"text/tabwriter"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
)

// LoginStored logs in to s, storing its tokens in store, unless its
// stored token is usable or can be refreshed: it prints the authorization
// URL to out (and opens it with xdg-open when there is one), takes the
// code on a loopback redirect and waits at most timeout to connect. What
// it says goes to out, prefixed by prog.
func LoginStored(ctx context.Context, prog string, out io.Writer, store *oauthstore.Store, s launch.ResolvedServer, timeout time.Duration) error {
	key := ResourceKey(&s)
	if _, err := store.Source(key, s.OAuth.ClientSecret).Token(ctx); err == nil {
		fmt.Fprintf(out, "%s: server %q: token valid, nothing to do\n", prog, s.Name)
		return nil
	}
	lb, err := ListenLoopback(s.OAuth.RedirectPort)
	if err != nil {
		return fmt.Errorf("login: server %q: %w", s.Name, err)
	}
	defer lb.Close()
	show := func(u string) {
		fmt.Fprintf(out, "%s: to authorize toolprof for server %q, open:\n\n  %s\n\n", prog, s.Name, u)
		if !browsable(u) {
			fmt.Fprintf(out, "%s: not opening it in a browser: an authorization URL is https, or http on a loopback host\n", prog)
			return
		}
		if p, err := exec.LookPath("xdg-open"); err == nil {
			cmd := exec.Command(p, u)
			if cmd.Start() == nil {
				go cmd.Wait() //nolint:errcheck // the browser's exit says nothing about the login
			}
		}
	}
	opts := Options{
		Implementation: &mcp.Implementation{Name: version.Name, Version: version.Version},
		Tokens:         store,
		ConnectTimeout: timeout,
	}
	err = Login(ctx, s, opts, LoginFlow{RedirectURL: lb.RedirectURL(), Fetch: lb.Fetcher(show)})
	if err != nil {
		return fmt.Errorf("login: server %q: %s", s.Name, s.Scrub(err.Error()))
	}
	fmt.Fprintf(out, "%s: server %q: logged in, tokens stored in %s\n", prog, s.Name, store.Path())
	return nil
}

// WriteTokenStatus lists servers with their resource and the state of the
// tokens store holds for them (never a token), as a table.
func WriteTokenStatus(w io.Writer, store *oauthstore.Store, servers []launch.ResolvedServer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SERVER\tRESOURCE\tTOKENS")
	for _, s := range servers {
		key := ResourceKey(&s)
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

// browsable reports whether the authorization URL u, which comes from the
// server's metadata, may be handed to xdg-open: an https URL, or http on
// a loopback host. Anything else (file:, a custom scheme, text xdg-open
// would read as an option) is only printed.
func browsable(u string) bool {
	p, err := url.Parse(u)
	if err != nil || p.Host == "" {
		return false
	}
	switch p.Scheme {
	case "https":
		return true
	case "http":
		host := p.Hostname()
		if host == "localhost" {
			return true
		}
		ip := net.ParseIP(host)
		return ip != nil && ip.IsLoopback()
	}
	return false
}
