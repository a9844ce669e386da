package gateway

import (
	"fmt"
	"slices"

	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/tokens"
	"github.com/toolprof/toolprof/upstream"
)

// Health is what the gateway reports about itself: printed by
// `server --health` and served at /healthz over HTTP.
type Health struct {
	Default  string   `json:"default"`
	Profiles []string `json:"profiles"` // profiles that can be served (within the ceiling)
	Ceiling  string   `json:"ceiling,omitempty"`
	// Warnings are the profile warnings found at start, such as a profile
	// naming a tool the upstream does not offer, and the upstream tools
	// left out for their names (names.go).
	Warnings []string       `json:"warnings"`
	Upstream UpstreamHealth `json:"upstream"`
	// Upstreams is each upstream server of a launch document (or the one
	// started by -- CMD), sorted by name: its state, restarts and last
	// error (with resolved variable values scrubbed).
	Upstreams    []upstream.Health `json:"upstreams,omitempty"`
	Telemetry    string            `json:"telemetry"`
	OpenSessions int               `json:"open_sessions"`
	// UsageSessions are the open usage sessions of sessionless
	// (2026-07-28) requests.
	UsageSessions int `json:"usage_sessions"`
	// Refused counts requests refused for bad input.
	Refused RefusedHealth `json:"refused"`
	// Tokens describes the tokens file (--tokens-file); its problem is set
	// when an edit did not parse and the last good tokens are served.
	Tokens *tokens.Health `json:"tokens,omitempty"`
	// ReadOnly is set when every profile is served read-only (--read-only).
	ReadOnly bool `json:"read_only"`
	// OperatingContext describes the sidecar; absent when the gateway runs
	// without one.
	OperatingContext *ContextHealth `json:"operating_context,omitempty"`
	// OTel counts the spans exported with --otel; absent without it.
	OTel *ObserverHealth `json:"otel,omitempty"`
	// Calls counts tools/call in flight and the ones refused busy.
	Calls CallsHealth `json:"calls"`
	// Notifications counts what upstreams sent during calls and was not
	// relayed; a progress notification dropped also adds a warning.
	Notifications NotificationsHealth `json:"notifications"`
}

// NotificationsHealth counts upstream notifications not relayed.
type NotificationsHealth struct {
	// ProgressDropped: progress notifications naming a call that had
	// ended (a client that stopped reading past the bound of the wait).
	ProgressDropped uint64 `json:"progress_dropped"`
	// LogsUnrouted: log messages sent with no call in flight on their
	// upstream (by design delivered to no session).
	LogsUnrouted uint64 `json:"logs_unrouted"`
}

// CallsHealth describes the tools/call admission (admission.go).
type CallsHealth struct {
	InFlight int `json:"in_flight"`
	// Busy counts the calls answered with CodeBusy since start.
	Busy            uint64 `json:"busy"`
	MaxSessionCalls int    `json:"max_session_calls"`
	MaxCalls        int    `json:"max_calls"`
}

// UpstreamHealth describes the upstream as last seen.
type UpstreamHealth struct {
	// State is "serving"; with upstreams of a launch document
	// (Health.Upstreams), "serving" only when every one is ready with the
	// tools of its current session served, "joining" when every one is
	// connected but some one's tools are not served yet (it connected or
	// reconnected since the gateway last listed it), "down" when none is
	// connected and "degraded" otherwise.
	State       string `json:"state"`
	Tools       int    `json:"tools"`
	CatalogHash string `json:"catalog_hash"`
	// ListRetries counts the listings retried since one left a ready
	// upstream joining because its listing failed (its list_error says
	// why); 0 once every ready upstream's tools are served.
	ListRetries int `json:"list_retries,omitempty"`
}

// OpenSessions is Health's OpenSessions without the rest of the report,
// cheap enough to ask on every new session.
func (g *Gateway) OpenSessions() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.sessions)
}

// Health reports the gateway's state.
func (g *Gateway) Health() Health {
	g.mu.Lock()
	open, usage := len(g.sessions), len(g.usage)
	g.mu.Unlock()
	cat := g.cat()
	h := Health{
		Default:       cat.resolved.Default,
		Profiles:      g.servable(),
		Ceiling:       g.opts.MaxProfile,
		Warnings:      slices.Concat(cat.resolved.Warnings, cat.refused),
		Upstream:      UpstreamHealth{State: "serving", Tools: len(cat.tools), CatalogHash: cat.hash},
		Telemetry:     "off",
		OpenSessions:  open,
		UsageSessions: usage,
		Refused:       g.refused.health(),
		ReadOnly:      g.opts.ReadOnly,

		OperatingContext: contextHealth(g.opts.OperatingContext),
		Calls: CallsHealth{
			InFlight:        int(g.admission.calls.Load()),
			Busy:            g.admission.busy.Load(),
			MaxSessionCalls: g.opts.MaxSessionCalls,
			MaxCalls:        g.opts.MaxCalls,
		},
		OTel: g.observerHealth(),
	}
	if u, ok := g.opts.Upstream.(interface{ Health() []upstream.Health }); ok {
		h.Upstreams = u.Health()
		if _, ok := g.opts.Upstream.(connectionLister); ok {
			markJoining(h.Upstreams, cat.joined)
		}
		h.Upstream.State = upstreamsState(h.Upstreams)
		h.Upstream.ListRetries = g.relist.listRetries()
	}
	h.Notifications = NotificationsHealth{
		ProgressDropped: g.relay.progressDropped.Load(),
		LogsUnrouted:    g.relay.logsUnrouted.Load(),
	}
	if n := h.Notifications.ProgressDropped; n > 0 {
		h.Warnings = append(h.Warnings, fmt.Sprintf("%d progress notifications dropped: the call they reported on had ended before they could be written to its client", n))
	}
	if g.opts.HTTP.Tokens != nil {
		th := g.opts.HTTP.Tokens.Health()
		h.Tokens = &th
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

// markJoining reports as joining each ready server whose current session
// is not the one whose tools the catalog holds (joined, per server).
func markJoining(ups []upstream.Health, joined map[string]uint64) {
	for i, u := range ups {
		if u.State == upstream.StateReady && joined[u.Name] != u.Connection {
			ups[i].State = upstream.StateJoining
		}
	}
}

// upstreamsState sums up the upstreams' states for UpstreamHealth.State.
func upstreamsState(ups []upstream.Health) string {
	ready, joining := 0, 0
	for _, u := range ups {
		switch u.State {
		case upstream.StateReady:
			ready++
		case upstream.StateJoining:
			joining++
		}
	}
	switch {
	case ready == len(ups):
		return "serving"
	case ready+joining == len(ups):
		return "joining"
	case ready+joining == 0:
		return "down"
	}
	return "degraded"
}
