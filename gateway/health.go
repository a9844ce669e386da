package gateway

import (
	"fmt"
	"slices"

	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/upstream"
)

// Health is what the gateway reports about itself: printed by
// `server --health` and served at /healthz over HTTP.
type Health struct {
	Default  string   `json:"default"`
	Profiles []string `json:"profiles"` // profiles that can be served (within the ceiling)
	Ceiling  string   `json:"ceiling,omitempty"`
	// Warnings are the profile warnings found at start, such as a profile
	// naming a tool the upstream does not offer.
	Warnings []string       `json:"warnings"`
	Upstream UpstreamHealth `json:"upstream"`
	// Upstreams is each upstream server of a launch document (or the one
	// started by -- CMD), sorted by name: its state, restarts and last
	// error (with resolved variable values scrubbed).
	Upstreams    []upstream.Health `json:"upstreams,omitempty"`
	Telemetry    string            `json:"telemetry"`
	OpenSessions int               `json:"open_sessions"`
	// ReadOnly is set when every profile is served read-only (--read-only).
	ReadOnly bool `json:"read_only"`
	// OperatingContext describes the sidecar; absent when the gateway runs
	// without one.
	OperatingContext *ContextHealth `json:"operating_context,omitempty"`
	// OTel counts the spans exported with --otel; absent without it.
	OTel *ObserverHealth `json:"otel,omitempty"`
}

// UpstreamHealth describes the upstream as last seen.
type UpstreamHealth struct {
	// State is "serving"; with many upstreams (Health.Upstreams),
	// "degraded" when some are not ready and "down" when none is.
	State       string `json:"state"`
	Tools       int    `json:"tools"`
	CatalogHash string `json:"catalog_hash"`
}

// Health reports the gateway's state.
func (g *Gateway) Health() Health {
	g.mu.Lock()
	open := len(g.sessions)
	g.mu.Unlock()
	h := Health{
		Default:      g.cat().resolved.Default,
		Profiles:     g.servable(),
		Ceiling:      g.opts.MaxProfile,
		Warnings:     slices.Clone(g.cat().resolved.Warnings),
		Upstream:     UpstreamHealth{State: "serving", Tools: len(g.cat().tools), CatalogHash: g.cat().hash},
		Telemetry:    "off",
		OpenSessions: open,
		ReadOnly:     g.opts.ReadOnly,

		OperatingContext: contextHealth(g.opts.OperatingContext),
		OTel:             g.observerHealth(),
	}
	if u, ok := g.opts.Upstream.(interface{ Health() []upstream.Health }); ok {
		h.Upstreams = u.Health()
		h.Upstream.State = upstreamsState(h.Upstreams)
	}
	if h.Warnings == nil {
		h.Warnings = []string{}
	}
	if g.opts.Recorder != nil {
		h.Telemetry = "recording"
		if r, ok := g.opts.Recorder.(interface {
			Health() telemetry.RecorderHealth
		}); ok {
			rh := r.Health()
			h.Telemetry = fmt.Sprintf("recording: %d events written, %d dropped, %d lost, segment %s", rh.Written, rh.Dropped, rh.Lost, rh.Segment)
			if rh.Degraded != nil {
				h.Telemetry = fmt.Sprintf("degraded: %v (%d events written, %d dropped, %d lost)", rh.Degraded, rh.Written, rh.Dropped, rh.Lost)
			}
		}
	}
	return h
}

// upstreamsState sums up the upstreams' states for UpstreamHealth.State.
func upstreamsState(ups []upstream.Health) string {
	ready := 0
	for _, u := range ups {
		if u.State == upstream.StateReady {
			ready++
		}
	}
	switch {
	case ready == len(ups):
		return "serving"
	case ready == 0:
		return "down"
	}
	return "degraded"
}
