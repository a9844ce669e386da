package replay

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/upstream"
)

// GatewayConfig is the rehearsal gateway StartGateway starts.
type GatewayConfig struct {
	Launch, Persona string // the launch document whose servers are started
	// ProfilesPath is the profiles file to serve; when it does not exist
	// and ProfilesExplicit is false, every tool is served as full.
	ProfilesPath     string
	ProfilesExplicit bool
	Profile          string // when not "", the profile every session asks for: it must exist
}

// UnknownProfileError is a GatewayConfig.Profile the profiles lack.
type UnknownProfileError struct {
	Profile string
	Valid   []string
}

func (e *UnknownProfileError) Error() string {
	return fmt.Sprintf("replay: --profile %q: no such profile; valid profiles: %s", e.Profile, strings.Join(e.Valid, ", "))
}

// StartGateway starts, in this process, the gateway over the launch
// document's upstreams, serving the profiles file on a free loopback
// port, and returns its /mcp endpoint and how to stop it. Nothing is
// recorded: this is a rehearsal of a profiles file before it is deployed.
// What it does is said on stderr, which started servers also write to.
func StartGateway(ctx context.Context, cfg GatewayConfig, stderr io.Writer) (string, func() error, error) {
	set, err := profiles.Load(cfg.ProfilesPath)
	switch {
	case errors.Is(err, os.ErrNotExist) && !cfg.ProfilesExplicit:
		fmt.Fprintf(stderr, "replay: no %s here: serving every tool as profile %q (--profiles FILE to rehearse profiles)\n", cfg.ProfilesPath, gateway.FullProfile)
		set = nil
	case err != nil:
		return "", nil, fmt.Errorf("replay: %w", err)
	}
	g, desc, err := newLaunchGateway(ctx, cfg, set, stderr)
	if err != nil {
		return "", nil, err
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		g.Close()
		return "", nil, fmt.Errorf("replay: listen on loopback: %w", err)
	}
	srv := &http.Server{Handler: g.HTTPHandler(), ReadHeaderTimeout: 10 * time.Second}
	done := make(chan struct{})
	go func() { srv.Serve(ln); close(done) }()
	fmt.Fprintf(stderr, "replay: gateway over %s on http://%s/mcp (default profile %q)\n", desc, ln.Addr(), g.Default())
	stop := func() error {
		// Sessions first, so that their open streams end and Shutdown can finish.
		err := g.Close()
		shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if serr := srv.Shutdown(shutdownCtx); serr != nil {
			srv.Close()
		}
		<-done
		return err
	}
	return "http://" + ln.Addr().String() + "/mcp", stop, nil
}

// newLaunchGateway starts the launch document's servers and the gateway
// over them, serving set (nil: every tool as full). The gateway owns the
// servers once it is made (its Close closes them).
func newLaunchGateway(ctx context.Context, cfg GatewayConfig, set *profiles.Set, stderr io.Writer) (*gateway.Gateway, string, error) {
	doc, err := launch.Load(cfg.Launch, cfg.Persona)
	if err != nil {
		return nil, "", fmt.Errorf("replay: %w", err)
	}
	spec, err := doc.Resolve(os.LookupEnv)
	if err != nil {
		return nil, "", fmt.Errorf("replay: resolve %s: %w", cfg.Launch, err)
	}
	up, err := upstream.StartSet(ctx, spec, upstream.SetOptions{RequireAll: true, Client: upstream.Options{Stderr: stderr}})
	if err != nil {
		return nil, "", fmt.Errorf("replay: launch %s: %w", cfg.Launch, err)
	}
	desc := "launch document " + filepath.ToSlash(cfg.Launch)
	tools, err := up.ListTools(ctx)
	if err != nil {
		up.Close()
		return nil, "", fmt.Errorf("replay: list tools of %s: %w", desc, err)
	}
	resolved := profiles.Full(tools)
	if set != nil {
		if resolved, err = set.Resolve(tools); err != nil {
			up.Close()
			return nil, "", fmt.Errorf("replay: profiles %s: %w", cfg.ProfilesPath, err)
		}
	}
	for _, w := range resolved.Warnings {
		fmt.Fprintln(stderr, "replay: warning:", w)
	}
	g, err := gateway.New(ctx, gateway.Options{Upstream: up, Tools: tools, Profiles: resolved, ServerName: version.Name, ServerVersion: version.Version})
	if err != nil {
		up.Close()
		return nil, "", fmt.Errorf("replay: %w", err)
	}
	if cfg.Profile != "" {
		if _, ok := resolved.Profiles[cfg.Profile]; !ok {
			g.Close()
			return nil, "", &UnknownProfileError{Profile: cfg.Profile, Valid: resolved.Names()}
		}
	}
	return g, desc, nil
}
