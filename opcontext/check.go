package opcontext

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Keys the gateway adds to a result's _meta.
const (
	MetaWarning  = "operating_context_warning"
	MetaResolved = "resolved_project_id"
	MetaRevision = "context_revision"
)

// CallInfo is what Check needs to know about one tools/call.
type CallInfo struct {
	Tool string
	// Writes is true for tools whose effect kind is mutate or destructive,
	// false for read and evaluate.
	Writes bool
	// InputSchema is the tool's input schema as listed upstream (a
	// map[string]any from the go-sdk client, json.RawMessage or any value
	// that marshals to a JSON schema). Only its property names are used.
	InputSchema any
	// Arguments are the call's raw JSON arguments.
	Arguments json.RawMessage
	// Client is the client's name from initialize; it names the agent for
	// "@auto" when the tool has no agent_id argument.
	Client string
}

// Decision is what the gateway does with one call.
type Decision struct {
	// Arguments are what the upstream must receive: the call's own bytes,
	// or, only when "@auto" was resolved, the same bytes with that one
	// value replaced.
	Arguments json.RawMessage
	// Warnings go in _meta and as one extra text line of the result.
	Warnings []string
	// Resolved is set when "@auto" was resolved; ResolvedProjectID is the
	// value ("" when unmapped).
	Resolved          bool
	ResolvedProjectID string
	// Reject, when set, is why the call must not reach the upstream.
	Reject string
	// Revision is the context_revision the decision was made under.
	Revision string
}

// Rejected reports whether the call must not reach the upstream.
func (d Decision) Rejected() bool { return d.Reject != "" }

// Meta is what the decision adds to the result's _meta; nil when nothing.
func (d Decision) Meta() map[string]any {
	if len(d.Warnings) == 0 && !d.Resolved {
		return nil
	}
	m := map[string]any{MetaRevision: d.Revision}
	if len(d.Warnings) > 0 {
		m[MetaWarning] = strings.Join(d.Warnings, "; ")
	}
	if d.Resolved {
		m[MetaResolved] = d.ResolvedProjectID
	}
	return m
}

// Annotate adds the decision's warnings and echo to an upstream result: the
// _meta keys, and the warnings as one extra text line. A nil result or an
// empty decision is left alone.
func (d Decision) Annotate(res *mcp.CallToolResult) {
	m := d.Meta()
	if res == nil || m == nil {
		return
	}
	if res.Meta == nil {
		res.Meta = mcp.Meta{}
	}
	for k, v := range m {
		res.Meta[k] = v
	}
	if len(d.Warnings) > 0 {
		res.Content = append(res.Content, &mcp.TextContent{
			Text: "operating context warning: " + strings.Join(d.Warnings, "; "),
		})
	}
}

// RejectResult is the tool error the gateway returns instead of forwarding
// a rejected call.
func (d Decision) RejectResult() *mcp.CallToolResult {
	res := &mcp.CallToolResult{
		IsError: true,
		Content: []mcp.Content{&mcp.TextContent{Text: d.Reject}},
	}
	res.Meta = mcp.Meta{MetaRevision: d.Revision}
	if d.Resolved {
		res.Meta[MetaResolved] = d.ResolvedProjectID
	}
	return res
}

// Check validates one call against the registry and resolves "@auto".
// Without an active context, or for a tool whose schema lacks the registry's
// argument, or a call that omits it, the arguments pass untouched. Explicit
// values are never rewritten. Reads are never rejected. A case variant or a
// repeat of the argument's key is judged like an id outside the registry:
// the upstream may read either value. The error is for arguments that are
// not a JSON object and for a cancelled ctx; the gateway then forwards
// nothing.
func (s *Source) Check(ctx context.Context, call CallInfo) (Decision, error) {
	d := Decision{Arguments: call.Arguments}
	if err := ctx.Err(); err != nil {
		return d, err
	}
	f := s.current(true).file // the per-call path: looks at most once per CheckEvery
	if f == nil {
		return d, nil
	}
	d.Revision = f.ContextRevision
	props := schemaProperties(call.InputSchema)
	arg := f.Registry.Argument
	if !props[arg] {
		return d, nil
	}
	fields, err := topLevel(call.Arguments)
	if err != nil {
		return d, fmt.Errorf("check %s arguments: %w", call.Tool, err)
	}
	if msg := ambiguous(fields, arg); msg != "" {
		s.judge(f, call, &d, arg, "", msg)
		if d.Rejected() {
			return d, nil
		}
	}
	spans := fields[arg]
	if len(spans) == 0 {
		return d, nil // omitted: untouched
	}
	last := spans[len(spans)-1] // encoding/json semantics: the last duplicate wins
	if bytes.Equal(last.raw, []byte("null")) {
		return d, nil // null is the same as omitted
	}
	var value string
	if err := json.Unmarshal(last.raw, &value); err != nil {
		s.judge(f, call, &d, arg, string(last.raw), fmt.Sprintf("%s must be a string, got %s", arg, last.raw))
		return d, nil
	}
	if value != Auto {
		if !f.knownID(value) {
			s.judge(f, call, &d, arg, value, fmt.Sprintf("%s %q is not in the operating-context registry", arg, value))
		}
		return d, nil
	}

	agent, from := call.Client, "client name"
	if props[AgentArgument] {
		if a := fields[AgentArgument]; len(a) > 0 {
			var v string
			if json.Unmarshal(a[len(a)-1].raw, &v) == nil && v != "" {
				agent, from = v, AgentArgument+" argument"
			}
		}
	}
	resolved, mapped := f.Defaults[agent]
	d.Resolved, d.ResolvedProjectID = true, resolved
	if !mapped {
		msg := fmt.Sprintf("%s %q: agent %q (%s) has no [defaults] entry in %s (rev %s), resolved to \"\"; mapped agents: %s",
			arg, Auto, agent, from, s.path, revLabel(f), mappedAgents(f))
		if f.Registry.Enforce == EnforceReject && call.Writes {
			d.Reject = "rejected by operating context: " + msg
			return d, nil
		}
		d.Warnings = append(d.Warnings, msg)
	} else if !f.knownID(resolved) {
		s.judge(f, call, &d, arg, resolved,
			fmt.Sprintf("%s %q resolved to %q for agent %q, which is not in the operating-context registry", arg, Auto, resolved, agent))
		if d.Rejected() {
			return d, nil
		}
	}
	d.Arguments = replaceValues(call.Arguments, spans, resolved)
	return d, nil
}

// judge applies the enforcement mode to an id outside the registry: off
// says nothing, warn warns, reject rejects writes and warns on reads.
func (s *Source) judge(f *File, call CallInfo, d *Decision, arg, value, msg string) {
	if !f.hasRegistry || f.Registry.Enforce == EnforceOff {
		return
	}
	full := fmt.Sprintf("%s (%s, rev %s); valid %s values: %s", msg, s.path, revLabel(f), arg, f.validIDs())
	if f.Registry.Enforce == EnforceReject && call.Writes {
		d.Reject = "rejected by operating context: " + full
		return
	}
	d.Warnings = append(d.Warnings, full)
}

func revLabel(f *File) string {
	if f.ContextRevision == "" {
		return "unlabelled"
	}
	return f.ContextRevision
}

func mappedAgents(f *File) string {
	if len(f.Defaults) == 0 {
		return "none"
	}
	names := make([]string, 0, len(f.Defaults))
	for a := range f.Defaults {
		names = append(names, fmt.Sprintf("%q", a))
	}
	sort.Strings(names)
	return strings.Join(names, ", ")
}

// schemaProperties returns the property names of an input schema.
func schemaProperties(schema any) map[string]bool {
	out := map[string]bool{}
	var props map[string]json.RawMessage
	switch v := schema.(type) {
	case nil:
		return out
	case map[string]any:
		if p, ok := v["properties"].(map[string]any); ok {
			for k := range p {
				out[k] = true
			}
		}
		return out
	case json.RawMessage:
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(v, &s) == nil {
			props = s.Properties
		}
	default:
		b, err := json.Marshal(v)
		if err != nil {
			return out
		}
		var s struct {
			Properties map[string]json.RawMessage `json:"properties"`
		}
		if json.Unmarshal(b, &s) == nil {
			props = s.Properties
		}
	}
	for k := range props {
		out[k] = true
	}
	return out
}

// ambiguous says why the arguments do not name arg's value once and
// exactly, or "" when they do. encoding/json matches a struct's keys
// case-insensitively and keeps the last duplicate; other parsers keep the
// first. So a case variant or a repeat of arg would carry a value past the
// check that the upstream may use instead of the checked one.
func ambiguous(fields map[string][]span, arg string) string {
	var keys []string
	n := 0
	for k, spans := range fields {
		if strings.EqualFold(k, arg) {
			keys = append(keys, fmt.Sprintf("%q", k))
			n += len(spans)
		}
	}
	sort.Strings(keys)
	switch {
	case n > 1:
		return fmt.Sprintf("%s is given %d times in the arguments (as %s); the upstream may read any one of them, so the check cannot vouch for the value it uses: pass %q exactly once",
			arg, n, strings.Join(keys, ", "), arg)
	case n == 1 && len(fields[arg]) == 0:
		return fmt.Sprintf("argument %s is not %q, but an upstream may read it as %s (keys can match case-insensitively), so the check cannot vouch for its value: spell it %q",
			keys[0], arg, arg, arg)
	}
	return ""
}

// span is where one top-level value sits in the argument bytes.
type span struct {
	start, end int
	raw        []byte
}

// topLevel maps each top-level key of a JSON object to the byte spans of its
// values (more than one when a key is repeated). Empty arguments are an
// empty object.
func topLevel(args json.RawMessage) (map[string][]span, error) {
	out := map[string][]span{}
	if len(bytes.TrimSpace(args)) == 0 || bytes.Equal(bytes.TrimSpace(args), []byte("null")) {
		return out, nil
	}
	dec := json.NewDecoder(bytes.NewReader(args))
	tok, err := dec.Token()
	if err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if d, ok := tok.(json.Delim); !ok || d != '{' {
		return nil, fmt.Errorf("not a JSON object: starts with %v", tok)
	}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("not JSON: %w", err)
		}
		key, _ := tok.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, fmt.Errorf("not JSON: value of %q: %w", key, err)
		}
		end := int(dec.InputOffset())
		out[key] = append(out[key], span{start: end - len(raw), end: end, raw: raw})
	}
	if _, err := dec.Token(); err != nil {
		return nil, fmt.Errorf("not JSON: %w", err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, fmt.Errorf("not a single JSON object: trailing data")
	}
	return out, nil
}

// replaceValues returns args with each "@auto" value among spans replaced
// by value, every other byte as it was.
func replaceValues(args json.RawMessage, spans []span, value string) json.RawMessage {
	enc, _ := json.Marshal(value) // a string always marshals
	var out []byte
	prev := 0
	for _, sp := range spans {
		var v string
		if json.Unmarshal(sp.raw, &v) != nil || v != Auto {
			continue
		}
		out = append(out, args[prev:sp.start]...)
		out = append(out, enc...)
		prev = sp.end
	}
	return append(out, args[prev:]...)
}
