package upstream

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strconv"
	"time"

	"github.com/modelcontextprotocol/go-sdk/auth"

	"github.com/toolprof/toolprof/launch"
	"github.com/toolprof/toolprof/oauthstore"
)

// Login connects to srv with flow, which runs the authorization code flow
// when no usable token is stored, and returns once the tokens are stored
// (opts.Tokens) and the server accepted them. opts.ConnectTimeout bounds
// the whole login (default 10 minutes).
func Login(ctx context.Context, srv launch.ResolvedServer, opts Options, flow LoginFlow) error {
	if srv.OAuth == nil {
		return fmt.Errorf("upstream %q: not declared with \"oauth\"", srv.Name)
	}
	opts.Login = &flow
	if opts.ConnectTimeout <= 0 {
		opts.ConnectTimeout = 10 * time.Minute // a person is reading the consent page
	}
	c := NewClient(srv, opts)
	defer c.Close()
	if err := c.Start(ctx); err != nil {
		return err
	}
	if loggedIn(opts.Tokens, srv) {
		return nil
	}
	// The server let initialize through without a token, as servers do
	// that authorize per method: list the tools, which it refuses without
	// one, so that the refusal starts the flow.
	if _, err := c.ListTools(ctx); err != nil {
		return err
	}
	if !loggedIn(opts.Tokens, srv) {
		return fmt.Errorf("upstream %q: the server answered initialize and tools/list without asking for authorization: no tokens stored (drop its \"oauth\" if it needs none)", srv.Name)
	}
	return nil
}

// loggedIn reports whether tokens holds a usable token for srv.
func loggedIn(tokens *oauthstore.Store, srv launch.ResolvedServer) bool {
	e, ok, err := tokens.Get(ResourceKey(&srv))
	return err == nil && ok && e.Usable(time.Now())
}

// Loopback receives an authorization code on http://127.0.0.1:PORT/callback
// (port 0: a free one), as a native app does (RFC 8252).
type Loopback struct {
	ln      net.Listener
	srv     *http.Server
	results chan *auth.AuthorizationResult
}

// ListenLoopback starts the receiver; Close stops it.
func ListenLoopback(port int) (*Loopback, error) {
	ln, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return nil, fmt.Errorf("listen for the OAuth redirect: %w", err)
	}
	l := &Loopback{ln: ln, results: make(chan *auth.AuthorizationResult, 1)}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /callback", func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if e := q.Get("error"); e != "" {
			http.Error(w, "authorization refused: "+e, http.StatusBadRequest)
			return
		}
		select {
		case l.results <- &auth.AuthorizationResult{Code: q.Get("code"), State: q.Get("state"), Iss: q.Get("iss")}:
			fmt.Fprintln(w, "toolprof is authorized; you can close this window.")
		default:
			http.Error(w, "an authorization code was already received", http.StatusConflict)
		}
	})
	l.srv = &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = l.srv.Serve(ln) }()
	return l, nil
}

// RedirectURL is where the authorization server must send the code.
func (l *Loopback) RedirectURL() string {
	return "http://" + l.ln.Addr().String() + "/callback"
}

// Fetcher returns a code fetcher that calls show with the authorization
// URL and waits for the redirect.
func (l *Loopback) Fetcher(show func(url string)) auth.AuthorizationCodeFetcher {
	return func(ctx context.Context, args *auth.AuthorizationArgs) (*auth.AuthorizationResult, error) {
		show(args.URL)
		select {
		case r := <-l.results:
			return r, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the authorization redirect: %w", ctx.Err())
		}
	}
}

// Close stops the receiver.
func (l *Loopback) Close() error {
	if err := l.srv.Close(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
