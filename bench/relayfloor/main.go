// Command relayfloor is the floor of make perf's call ratios: a process
// that relays an MCP server's bytes and does nothing else, so that its
// ratio to a direct call is what any proxy process costs on this machine.
//
//	relayfloor -- COMMAND [ARG...]          # stdio: copy stdin and stdout both ways
//	relayfloor -http ADDR -upstream URL     # HTTP: httputil.ReverseProxy to URL
//
// On HTTP it prints "relayfloor: listening on http://HOST:PORT/" to stderr
// once it listens. It stops on SIGTERM or SIGINT, or on stdio when the
// command exits.
package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
)

func main() {
	fs := flag.NewFlagSet("relayfloor", flag.ContinueOnError)
	addr := fs.String("http", "", "listen on `ADDR` and proxy HTTP to -upstream")
	upstream := fs.String("upstream", "", "the `URL` -http proxies to")
	if err := fs.Parse(os.Args[1:]); err != nil {
		os.Exit(2)
	}
	var err error
	switch {
	case *addr != "" && *upstream != "" && fs.NArg() == 0:
		err = proxy(*addr, *upstream)
	case *addr == "" && *upstream == "" && fs.NArg() > 0:
		err = relay(fs.Args())
	default:
		fmt.Fprintln(os.Stderr, "relayfloor: want -- COMMAND [ARG...], or -http ADDR -upstream URL")
		os.Exit(2)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "relayfloor:", err)
		if x := (*exec.ExitError)(nil); errors.As(err, &x) {
			os.Exit(x.ExitCode())
		}
		os.Exit(1)
	}
}

// relay runs args with its stdin and stdout copied from and to ours
// through pipes (not inherited, so every byte passes this process).
func relay(args []string) error {
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	go func() {
		io.Copy(in, os.Stdin)
		in.Close() // the client closed: so does the command's stdin
	}()
	if _, err := io.Copy(os.Stdout, out); err != nil {
		cmd.Process.Kill()
	}
	return cmd.Wait()
}

// proxy serves a plain reverse proxy to upstream on addr until SIGTERM
// or SIGINT.
func proxy(addr, upstream string) error {
	u, err := url.Parse(upstream)
	if err != nil || u.Scheme == "" || u.Host == "" {
		return fmt.Errorf("-upstream %q: want an absolute http:// URL", upstream)
	}
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	rp := httputil.NewSingleHostReverseProxy(u)
	rp.FlushInterval = -1 // streamed responses (SSE) pass as written
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// Go's HTTP/1 server closes the request body once the answer's
		// headers are written, while the proxy's transport may still read
		// its end, and the proxy then cuts the streamed answer
		// (golang/go#40747); full duplex leaves the body to the proxy.
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, r)
	})}
	stop := make(chan os.Signal, 1)
	signal.Notify(stop, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		<-stop
		srv.Close()
	}()
	fmt.Fprintf(os.Stderr, "relayfloor: listening on http://%s/\n", l.Addr())
	if err := srv.Serve(l); !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
