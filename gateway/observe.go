package gateway

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/telemetry"
)

// Observer watches the requests the gateway answers; package otelmcp
// exports them as OpenTelemetry spans and metrics (and the requests sent
// upstream, through upstream.Options.SendingMiddleware: the context Serve
// returns reaches them). Its methods run on the request path: they must
// return at once and never fail a request.
type Observer interface {
	// Serve is called when a request arrives. The context it returns is
	// the request's from then on; end is called once, when the request
	// has been answered, with r completed, which the gateway does not
	// touch again: end may hand it to another goroutine.
	Serve(ctx context.Context, r *Served) (_ context.Context, end func(r *Served))
	// SessionEnded is called when a recorded session ends.
	SessionEnded(s telemetry.Session)
}

// Served describes one request the gateway answers. The fields above the
// blank line are known when it arrives, the others when it is answered.
// No field holds an argument value or a result.
type Served struct {
	Method     string
	Transport  string   // telemetry.TransportStdio or TransportHTTP
	Meta       mcp.Meta // the request's params._meta; read, never changed
	MCPSession string   // the MCP session ID (HTTP); "" over stdio
	// RequestID is the JSON-RPC id as the client sent it (a string id's
	// text); "" for a notification, or when the transport does not carry
	// it (jsonrpcwire.RequestIDHeader: the gateway's HTTP front and stdio
	// Transport do).
	RequestID string

	// Tool is the tools/call tool, bounded as telemetry records it.
	Tool string
	// Prompt is the prompts/get prompt, bounded likewise.
	Prompt          string
	Profile         string
	UsageSession    string // the telemetry session ID
	ProtocolVersion string
	// Outcome is the tools/call outcome telemetry records.
	Outcome telemetry.Outcome
	// ReachedBy says how the session reached the called tool: ReachedListed
	// or ReachedGroup; "" when it did not (the call was refused).
	ReachedBy string
	// Err is the JSON-RPC error the request was answered with, if any.
	Err error
	// ToolError is set when a tools/call result has isError.
	ToolError bool
	// ToolDefinitionBytes is, for tools/list, the wire size of the tool
	// definitions the page served.
	ToolDefinitionBytes int
	// ToolDefinitions are, for tools/list, the tool definitions the page
	// served, as sent; shared with the answer, never changed.
	ToolDefinitions []json.RawMessage
}

// How a session reached a tool it called (Served.ReachedBy).
const (
	ReachedListed = "listed" // in the session's profile
	ReachedGroup  = "group"  // in a group the session switched on (enable_tools)
	ReachedSearch = "search" // found by find_tools, called through call_tool
)

// observeNote carries what the inner middleware learns about a request to
// the observer's end, through the request's context.
type observeNote struct {
	s    *session
	call *telemetry.Call
}

type observeKey struct{}

// noteSession tells the observer which session a request belongs to.
func noteSession(ctx context.Context, s *session) {
	if n, ok := ctx.Value(observeKey{}).(*observeNote); ok {
		n.s = s
	}
}

// noteCall tells the observer how a tools/call ended.
func noteCall(ctx context.Context, c telemetry.Call) {
	if n, ok := ctx.Value(observeKey{}).(*observeNote); ok {
		n.call = &c
	}
}

// observe is the receiving middleware that reports every request to
// Options.Observer; with none it is not installed.
func (g *Gateway) observe(transport string) mcp.Middleware {
	o := g.opts.Observer
	return func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			r := &Served{Method: method, Transport: transport}
			r.Meta = paramsMeta(req.GetParams())
			r.RequestID = jsonrpcwire.RequestID(req.GetExtra())
			ss, _ := req.GetSession().(*mcp.ServerSession)
			if ss != nil {
				r.MCPSession = ss.ID()
			}
			note := &observeNote{}
			ctx, end := o.Serve(context.WithValue(ctx, observeKey{}, note), r)
			res, err := next(ctx, method, req)
			g.complete(r, note, req, res, err)
			end(r)
			return res, err
		}
	}
}

// complete fills in what is known of r once its request is answered.
func (g *Gateway) complete(r *Served, note *observeNote, req mcp.Request, res mcp.Result, err error) {
	r.Err = err
	if s := note.s; s != nil {
		s.mu.Lock()
		r.Profile, r.UsageSession, r.ProtocolVersion = s.profile, s.rec.ID, s.rec.ProtocolVersion
		s.mu.Unlock()
	}
	switch res := res.(type) {
	case *mcp.CallToolResult:
		r.ToolError = res.IsError
	case *wireResult:
		r.ToolError = res.IsError
	case *mcp.InitializeResult:
		if r.ProtocolVersion == "" {
			r.ProtocolVersion = res.ProtocolVersion
		}
	case *toolsPage:
		r.ToolDefinitions, r.ToolDefinitionBytes = res.Tools, rawBytes(res.Tools)
	case *cacheablePage:
		r.ToolDefinitions, r.ToolDefinitionBytes = res.Tools, rawBytes(res.Tools)
	}
	if p, ok := req.GetParams().(*mcp.GetPromptParams); ok && p != nil {
		r.Prompt = storedName(p.Name, maxUnknownToolName)
	}
	if c := note.call; c != nil {
		r.Outcome = c.Outcome
		r.Tool = c.Tool
		if _, offered := g.cat().tools[c.Tool]; !offered {
			r.Tool = storedName(c.Tool, maxUnknownToolName)
		}
		if s := note.s; s != nil && c.Outcome != telemetry.OutcomeDenied && c.Outcome != telemetry.OutcomeUnknownTool {
			switch {
			case c.Search:
				r.ReachedBy = ReachedSearch
			case g.cat().resolved.Allowed(s.profile, c.Tool):
				r.ReachedBy = ReachedListed
			case slices.Contains(g.switchedTools(s), c.Tool):
				r.ReachedBy = ReachedGroup
			}
		}
	} else if p, ok := req.GetParams().(*mcp.CallToolParamsRaw); ok && p != nil {
		r.Tool = storedName(p.Name, maxUnknownToolName)
	}
}

// paramsMeta is p's _meta; nil for no params (which may be a nil
// pointer, whose GetMeta would panic).
func paramsMeta(p mcp.Params) mcp.Meta {
	if v := reflect.ValueOf(p); !v.IsValid() || (v.Kind() == reflect.Pointer && v.IsNil()) {
		return nil
	}
	return p.GetMeta()
}

func rawBytes(tools []json.RawMessage) int {
	n := 0
	for _, t := range tools {
		n += len(t)
	}
	return n
}

// observeSessionEnd reports a recorded session's end.
func (g *Gateway) observeSessionEnd(rec telemetry.Session) {
	if g.opts.Observer != nil {
		g.opts.Observer.SessionEnded(rec)
	}
}

// ObserverHealth is what an Observer reports in Health: the spans it
// exported, dropped because its queue was full, and failed to export, and
// the metric exports that failed.
type ObserverHealth struct {
	Exported            uint64 `json:"exported"`
	Dropped             uint64 `json:"dropped"`
	Failed              uint64 `json:"failed"`
	MetricExportsFailed uint64 `json:"metric_exports_failed"`
}

// observerHealth is the Observer's health, nil when it reports none.
func (g *Gateway) observerHealth() *ObserverHealth {
	o, ok := g.opts.Observer.(interface{ Health() ObserverHealth })
	if !ok {
		return nil
	}
	h := o.Health()
	return &h
}
