package replay

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/telemetry"
)

// Outcomes of a replayed call, as the client saw them.
const (
	OK          = "ok"           // a result without isError
	ToolError   = "tool_error"   // the tool ran and answered isError
	Denied      = "denied"       // the gateway's policy envelope (e.g. tool_not_in_profile)
	UnknownTool = "unknown_tool" // JSON-RPC -32602: no upstream offers the tool
	Error       = "error"        // anything else: transport, other JSON-RPC error, upstream envelope, no session
)

// Outcomes returns the outcomes in the order they are reported in.
func Outcomes() []string { return []string{OK, ToolError, Denied, UnknownTool, Error} }

// DefaultTimeout bounds one session when Options.Timeout is zero.
const DefaultTimeout = 30 * time.Second

// MaxIssues is how many failed sessions and calls a Report lists.
const MaxIssues = 20

// Options are a replay's settings besides the target and the sessions.
type Options struct {
	// Concurrency is the number of sessions run at once; zero or less
	// means one at a time (the server then records the sessions in trace
	// order).
	Concurrency int
	// Timeout bounds one session's connect, listing and calls; zero or
	// less means DefaultTimeout.
	Timeout time.Duration
	// Done, when not nil, is called after each session, from the
	// goroutine that ran it (for a progress bar).
	Done func()
}

// Report is a replay's outcome counts (profiler replay --format json is
// this shape).
type Report struct {
	Trace         string         `json:"trace"`  // left for the caller to fill in
	Target        string         `json:"target"` // the target's Describe
	Sessions      int            `json:"sessions"`
	SessionsRun   int            `json:"sessions_run"`
	SessionErrors int            `json:"session_errors"`
	Calls         int            `json:"calls"`
	Outcomes      map[string]int `json:"outcomes"` // every outcome, zero counts too
	DeniedCodes   map[string]int `json:"denied_codes"`
	Tools         []Tool         `json:"tools"`  // most called first, then by name
	Errors        []Issue        `json:"errors"` // the first MaxIssues failures
	Duration      float64        `json:"duration_seconds"`
}

// Tool counts one tool's outcomes.
type Tool struct {
	Name     string         `json:"name"`
	Calls    int            `json:"calls"`
	Outcomes map[string]int `json:"outcomes"`
}

// Issue is one session or call that ended in an error.
type Issue struct {
	Session string `json:"session"`
	Call    int    `json:"call"` // index in the session's calls; -1: the session itself
	Tool    string `json:"tool,omitempty"`
	Message string `json:"message"`
}

// FirstSessionError describes the first listed session that could not be
// opened, or says none is listed.
func (r *Report) FirstSessionError() string {
	for _, e := range r.Errors {
		if e.Call == -1 {
			return e.Session + ": " + e.Message
		}
	}
	return "none listed"
}

// CheckArguments refuses a call whose "arguments" is not a JSON object:
// sent as is, the server would answer -32602 and the call would be
// miscounted as an unknown tool. file names the trace in the error.
func CheckArguments(sessions []telemetry.TraceSession, file string) error {
	for _, s := range sessions {
		for i, c := range s.Calls {
			a := bytes.TrimSpace(c.Arguments)
			if len(a) == 0 || bytes.Equal(a, []byte("null")) || a[0] == '{' {
				continue
			}
			return fmt.Errorf("%s: session %q calls[%d] (%s): \"arguments\" is %s; want a JSON object such as {\"path\": \"README.md\"}, or no \"arguments\" for {}", file, s.Session, i, c.Tool, a)
		}
	}
	return nil
}

// callResult is one replayed call's outcome.
type callResult struct {
	tool, outcome, code, message string
}

// sessionResult is one replayed session.
type sessionResult struct {
	session string
	err     error // the session could not be opened or listed
	calls   []callResult
}

// Run replays sessions against target, Options.Concurrency at a time, in
// trace order of start, and tallies the outcomes. When ctx is done no more
// sessions start; Report.SessionsRun says how many ran.
func Run(ctx context.Context, target Target, sessions []telemetry.TraceSession, opts Options) *Report {
	concurrency, timeout, done := max(opts.Concurrency, 1), opts.Timeout, opts.Done
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	if done == nil {
		done = func() {}
	}
	start := time.Now()
	results := make([]*sessionResult, len(sessions))
	jobs := make(chan int)
	var wg sync.WaitGroup
	for range min(concurrency, max(len(sessions), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				results[i] = runSession(ctx, target, sessions[i], timeout)
				done()
			}
		}()
	}
feed:
	for i := range sessions {
		select {
		case jobs <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(jobs)
	wg.Wait()

	rep := tally(sessions, results)
	rep.Target = target.Describe()
	rep.Duration = time.Since(start).Seconds()
	return rep
}

// tally counts the results of the sessions run (nil: not run).
func tally(sessions []telemetry.TraceSession, results []*sessionResult) *Report {
	rep := &Report{Sessions: len(sessions), Outcomes: map[string]int{}, DeniedCodes: map[string]int{}, Tools: []Tool{}, Errors: []Issue{}}
	for _, o := range Outcomes() {
		rep.Outcomes[o] = 0
	}
	perTool := map[string]*Tool{}
	issue := func(is Issue) {
		if len(rep.Errors) < MaxIssues {
			rep.Errors = append(rep.Errors, is)
		}
	}
	for i, r := range results {
		if r == nil {
			continue // not run: interrupted
		}
		rep.SessionsRun++
		if r.err != nil {
			rep.SessionErrors++
			issue(Issue{Session: sessions[i].Session, Call: -1, Message: r.err.Error()})
		}
		for j, c := range r.calls {
			rep.Calls++
			rep.Outcomes[c.outcome]++
			t := perTool[c.tool]
			if t == nil {
				t = &Tool{Name: c.tool, Outcomes: map[string]int{}}
				perTool[c.tool] = t
			}
			t.Calls++
			t.Outcomes[c.outcome]++
			switch c.outcome {
			case Denied:
				rep.DeniedCodes[c.code]++
			case Error:
				if r.err == nil { // a session not opened is listed once, above
					issue(Issue{Session: r.session, Call: j, Tool: c.tool, Message: c.message})
				}
			}
		}
	}
	for _, t := range perTool {
		rep.Tools = append(rep.Tools, *t)
	}
	sort.Slice(rep.Tools, func(a, b int) bool {
		if rep.Tools[a].Calls != rep.Tools[b].Calls {
			return rep.Tools[a].Calls > rep.Tools[b].Calls
		}
		return rep.Tools[a].Name < rep.Tools[b].Name
	})
	return rep
}

// runSession opens one session as the traced client, lists the tools
// like a client does, and makes the session's calls in order. When the
// session cannot be opened, each of its calls counts as an error.
func runSession(ctx context.Context, target Target, s telemetry.TraceSession, timeout time.Duration) *sessionResult {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	res := &sessionResult{session: s.Session}
	fail := func(err error) *sessionResult {
		res.err = err
		res.calls = res.calls[:0]
		for _, c := range s.Calls {
			res.calls = append(res.calls, callResult{tool: c.Tool, outcome: Error, message: "session not opened: " + err.Error()})
		}
		return res
	}
	t, err := target.Transport(ctx, s.Profile)
	if err != nil {
		return fail(err)
	}
	name, ver := s.Client.Name, s.Client.Version
	if name == "" {
		name = "toolprof-replay"
	}
	if ver == "" {
		ver = "0"
	}
	client := mcp.NewClient(&mcp.Implementation{Name: name, Version: ver}, nil)
	cs, err := client.Connect(ctx, t.Transport, nil)
	if err != nil {
		if t.Stderr != nil {
			if msg := t.Stderr.String(); msg != "" {
				err = fmt.Errorf("%w; server stderr: %s", err, msg)
			}
		}
		return fail(fmt.Errorf("connect to %s: %w", t.Where, err))
	}
	defer cs.Close()
	// One trace per replayed session, as one agent run would carry: a
	// gateway serving 2026-07-28, which has no protocol sessions, groups
	// the session's requests by its trace id (otherwise by client name,
	// which would merge every session of one client into one).
	meta := mcp.Meta{"traceparent": newTraceparent()}
	if _, err := cs.ListTools(ctx, &mcp.ListToolsParams{Meta: meta}); err != nil {
		return fail(fmt.Errorf("tools/list: %w", err))
	}
	for _, c := range s.Calls {
		var args any = map[string]any{}
		if len(c.Arguments) > 0 && !bytes.Equal(c.Arguments, []byte("null")) {
			args = c.Arguments
		}
		out, err := cs.CallTool(ctx, &mcp.CallToolParams{Meta: meta, Name: c.Tool, Arguments: args})
		res.calls = append(res.calls, classifyCall(c.Tool, out, err))
	}
	return res
}

// newTraceparent is a W3C traceparent with a random trace id and parent
// span id, sampled.
func newTraceparent() string {
	var b [24]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return fmt.Sprintf("00-%x-%x-01", b[:16], b[16:])
}

// classifyCall maps a call's result or error to its outcome.
func classifyCall(tool string, out *mcp.CallToolResult, err error) callResult {
	r := callResult{tool: tool}
	var werr *jsonrpc.Error
	switch {
	case err != nil && errors.As(err, &werr) && werr.Code == jsonrpc.CodeInvalidParams:
		r.outcome, r.message = UnknownTool, werr.Message
	case err != nil:
		r.outcome, r.message = Error, err.Error()
	case !out.IsError:
		r.outcome = OK
	default:
		env, ok := envelopeOf(out)
		switch {
		case ok && env.Category == gateway.CategoryPolicy:
			r.outcome, r.code, r.message = Denied, env.Code, env.Message
		case ok:
			r.outcome, r.code, r.message = Error, env.Code, env.Code+": "+env.Message
		default:
			r.outcome = ToolError
		}
	}
	return r
}

// envelopeOf reads the gateway's error envelope from a result's
// structuredContent, if it carries one.
func envelopeOf(out *mcp.CallToolResult) (gateway.Envelope, bool) {
	var env gateway.Envelope
	if out.StructuredContent == nil {
		return env, false
	}
	b, err := json.Marshal(out.StructuredContent)
	if err != nil || json.Unmarshal(b, &env) != nil || env.Code == "" || env.Category == "" {
		return env, false
	}
	return env, true
}
