package gateway

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/exchange"
)

// RawToolsUpstream is an Upstream that keeps each tool's definition as its
// server listed it. The gateway lists those definitions with only its
// _meta key (MetaEffect) added, so that what the SDK's mcp.Tool cannot hold
// (execution, annotations left out) reaches the client as the server sent
// it. upstream.Set implements it for stdio and HTTP servers; a tool whose
// definition is not known is listed as parsed.
type RawToolsUpstream interface {
	// RawTool is the definition of the tool served as name, as its server
	// listed it.
	RawTool(name string) (json.RawMessage, bool)
}

// servedRaw returns, by name, the served definitions of the tools of list
// whose server's own definition is known: that definition with the served
// name and the effect in its _meta.
func servedRaw(up Upstream, list []*mcp.Tool, served map[string]*mcp.Tool) map[string]json.RawMessage {
	src, ok := up.(RawToolsUpstream)
	if !ok {
		return nil
	}
	out := make(map[string]json.RawMessage, len(list))
	for _, t := range list {
		raw, ok := src.RawTool(t.Name)
		if !ok {
			continue
		}
		if b, err := rawServed(raw, t, served[t.Name].Meta[MetaEffect]); err == nil {
			out[t.Name] = b
		}
	}
	return out
}

// rawServed is raw, the server's definition of t, named as t is served and
// with effect in its _meta. A raw definition from another listing than t
// (the server's tools changed in between) is an error: t is listed as
// parsed then, and the next refresh brings both in line.
func rawServed(raw json.RawMessage, t *mcp.Tool, effect any) (json.RawMessage, error) {
	var parsed mcp.Tool
	if err := json.Unmarshal(raw, &parsed); err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	parsed.Name = t.Name
	a, errA := json.Marshal(&parsed)
	b, errB := json.Marshal(t)
	if err := errors.Join(errA, errB); err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	if !bytes.Equal(a, b) {
		return nil, fmt.Errorf("tool %q: the definition kept is not the one listed", t.Name)
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("tool %q: %w", t.Name, err)
	}
	var meta map[string]json.RawMessage
	if m, ok := obj["_meta"]; ok {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("tool %q: _meta: %w", t.Name, err)
		}
	}
	if meta == nil {
		meta = map[string]json.RawMessage{}
	}
	var err error
	if meta[MetaEffect], err = exchange.EncodeAsServed(effect); err != nil {
		return nil, err
	}
	if obj["_meta"], err = exchange.EncodeAsServed(meta); err != nil {
		return nil, err
	}
	if obj["name"], err = exchange.EncodeAsServed(t.Name); err != nil {
		return nil, err
	}
	return exchange.EncodeAsServed(obj)
}

// wireTools are tools as a tools/list result carries them: the served raw
// definition of an upstream tool when the catalog has one, else the tool
// marshalled (the gateway's own tools, and upstreams without raw
// definitions); with dropIcons, each without its "icons" member
// (icons.go).
func (c *catalogState) wireTools(tools []*mcp.Tool, dropIcons bool) ([]json.RawMessage, error) {
	out := make([]json.RawMessage, 0, len(tools))
	for _, t := range tools {
		if raw, ok := c.servedRaw[t.Name]; ok && c.served[t.Name] == t {
			if bare, ok := c.rawWithoutIcons[t.Name]; ok && dropIcons {
				raw = bare
			}
			out = append(out, raw)
			continue
		}
		if dropIcons && t.Icons != nil {
			bare := *t
			bare.Icons = nil
			t = &bare
		}
		b, err := exchange.EncodeAsServed(t)
		if err != nil {
			return nil, fmt.Errorf("tools/list: tool %q: %w", t.Name, err)
		}
		out = append(out, b)
	}
	return out, nil
}
