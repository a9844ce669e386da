package gateway

import (
	"bytes"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// wireResult is a tools/call result with its wire form: the upstream's
// bytes for a result the gateway forwards unchanged, the gateway's own
// encoding for a result it built. The SDK sends those bytes (its encoder
// only compacts them) instead of encoding the result again, and telemetry
// takes the response's size from them.
//
// The parsed result is embedded so that the SDK's handling of a tools/call
// result (isError for the observer, input requests) sees it. Should the
// SDK change the result's _meta after the gateway answered (it adds its
// serverInfo for a 2026-07-28 request whose result has none), the bytes no
// longer say what the result is and it is encoded from the parsed form.
type wireResult struct {
	*mcp.CallToolResult
	wire json.RawMessage // nil once the result changed
}

func (r *wireResult) SetMeta(m map[string]any) {
	r.CallToolResult.SetMeta(m)
	r.wire = nil
}

func (r *wireResult) MarshalJSON() ([]byte, error) {
	if r.wire != nil {
		return r.wire, nil
	}
	return r.CallToolResult.MarshalJSON()
}

// encodedResult is res with its wire form and that form's size. A result
// the gateway built is encoded here, once; for a 2026-07-28 request
// (protocol) it first gets the serverInfo the SDK would add after the
// middleware returns, so that the SDK finds it there and leaves the
// encoding alone.
func (g *Gateway) encodedResult(res mcp.Result, protocol string) (mcp.Result, int) {
	switch r := res.(type) {
	case *wireResult:
		return r, len(r.wire)
	case *mcp.CallToolResult:
		if r == nil {
			return res, 0
		}
		if protocol >= protocolSessionless {
			if _, ok := r.Meta[mcp.MetaKeyServerInfo]; !ok {
				if r.Meta == nil {
					r.Meta = mcp.Meta{}
				}
				r.Meta[mcp.MetaKeyServerInfo] = g.implementation()
			}
		}
		b, err := json.Marshal(r)
		if err != nil {
			return res, 0 // the SDK reports the encoding error when it sends
		}
		return &wireResult{CallToolResult: r, wire: b}, len(b)
	}
	return res, 0
}

// forwardedResult is out, which the gateway does not change, with raw, the
// upstream's bytes, as its wire form; nil when those bytes cannot be sent
// as they are. A 2026-07-28 request's result carries a serverInfo in its
// _meta; the SDK adds the gateway's when the upstream's result has none
// (an upstream of an earlier protocol never does), and so does this: into
// a result without _meta, ahead of the upstream's members. A result with a
// _meta of its own but no serverInfo is left to the SDK (encoded from the
// parsed form).
func (g *Gateway) forwardedResult(out *mcp.CallToolResult, raw json.RawMessage, protocol string) *wireResult {
	if len(raw) < 2 || raw[0] != '{' {
		return nil
	}
	if protocol < protocolSessionless {
		return &wireResult{CallToolResult: out, wire: raw}
	}
	if _, ok := out.Meta[mcp.MetaKeyServerInfo]; ok {
		return &wireResult{CallToolResult: out, wire: raw}
	}
	if out.Meta != nil || bytes.Contains(raw, []byte(`"_meta"`)) {
		return nil
	}
	info := g.serverInfo
	rest := bytes.TrimLeft(raw[1:], " \t\r\n")
	w := make([]byte, 0, len(raw)+len(info)+64)
	w = append(w, `{"_meta":{"`+mcp.MetaKeyServerInfo+`":`...)
	w = append(w, info...)
	w = append(w, '}')
	if len(rest) > 0 && rest[0] != '}' {
		w = append(w, ',')
	}
	w = append(w, rest...)
	out.Meta = mcp.Meta{mcp.MetaKeyServerInfo: g.implementation()} // the SDK finds it and adds none
	return &wireResult{CallToolResult: out, wire: w}
}

// implementation is the served implementation, a copy of its own for each
// result that names it.
func (g *Gateway) implementation() *mcp.Implementation {
	return &mcp.Implementation{Name: g.opts.ServerName, Version: g.opts.ServerVersion}
}
