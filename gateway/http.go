package gateway

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"sync"

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
	// One handler per profile, so sessions never cross profiles. Made on
	// first use: a re-resolution (profiles.toml edited, tools changed) may
	// add a profile after the handler was built.
	var mu sync.Mutex
	handlers := make(map[string]http.Handler)
	handler := func(profile string) (http.Handler, error) {
		// Checked on every request: a re-resolution may also remove a
		// profile, or move it beyond the ceiling.
		if err := g.checkProfile(profile); err != nil {
			return nil, err
		}
		mu.Lock()
		defer mu.Unlock()
		if h, ok := handlers[profile]; ok {
			return h, nil
		}
		s, err := g.server(profile, telemetry.TransportHTTP)
		if err != nil {
			return nil, err
		}
		h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, &mcp.StreamableHTTPOptions{
			Logger:         g.logger,
			SessionTimeout: g.opts.IdleTimeout,
		})
		handlers[profile] = h
		return h, nil
	}
	serve := func(w http.ResponseWriter, r *http.Request, profile string) {
		h, err := handler(profile)
		if err != nil {
			status := http.StatusNotFound
			var pe *ProfileError
			if errors.As(err, &pe) && pe.Ceiling != "" {
				status = http.StatusForbidden
			}
			http.Error(w, err.Error(), status)
			return
		}
		if g.refuseBatch(w, r) { // batch.go
			return
		}
		h.ServeHTTP(w, r)
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
