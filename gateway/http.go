package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/telemetry"
)

// HTTPHandler serves streamable HTTP: /mcp is the default profile, /mcp/NAME
// the profile NAME, and /healthz the Health as JSON. A profile that does not
// exist is 404, one beyond the ceiling (Options.MaxProfile) 403, each with a
// message listing the profiles that can be served. The SDK's DNS-rebinding
// protection stays on.
func (g *Gateway) HTTPHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(g.Health())
	})
	handlers := make(map[string]http.Handler) // one per profile, so sessions never cross profiles
	for _, name := range g.cat().resolved.Names() {
		if g.checkProfile(name) != nil {
			continue
		}
		s, err := g.server(name, telemetry.TransportHTTP)
		if err != nil {
			continue
		}
		handlers[name] = mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
			Logger:         g.logger,
			SessionTimeout: g.opts.IdleTimeout,
		})
	}
	serve := func(w http.ResponseWriter, r *http.Request, profile string) {
		if err := g.checkProfile(profile); err != nil {
			status := http.StatusNotFound
			var pe *ProfileError
			if errors.As(err, &pe) && pe.Ceiling != "" {
				status = http.StatusForbidden
			}
			http.Error(w, err.Error(), status)
			return
		}
		handlers[profile].ServeHTTP(w, r)
	}
	mux.HandleFunc("/mcp", func(w http.ResponseWriter, r *http.Request) {
		serve(w, r, g.cat().resolved.Default)
	})
	mux.HandleFunc("/mcp/", func(w http.ResponseWriter, r *http.Request) {
		name := strings.TrimPrefix(r.URL.Path, "/mcp/")
		if name == "" || strings.Contains(name, "/") {
			http.Error(w, "want /mcp or /mcp/PROFILE; profiles: "+strings.Join(g.servable(), ", "), http.StatusNotFound)
			return
		}
		serve(w, r, name)
	})
	return mux
}
