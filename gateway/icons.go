package gateway

import (
	"encoding/json"
	"fmt"

	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/profiles"
)

// Icons: a profile with icons = "drop" (profiles.toml), or every profile
// that does not say when Options.DropIcons is set, lists its tools without
// their "icons" member, which clients do not send to the model and which
// can be most of a listing's bytes (base64 images). Nothing else of the
// definition changes; calls are not affected.

// iconsMember is the member of a tool definition that dropping removes.
const iconsMember = "icons"

// dropIcons reports whether profile's tools are listed without icons.
func (g *Gateway) dropIcons(profile string) bool {
	var key string
	if p, ok := g.cat().resolved.Profiles[profile]; ok {
		key = p.Icons
	}
	return profiles.DropsIcons(key, g.opts.DropIcons)
}

// rawWithoutIcons returns, by name, the definitions of served that have an
// "icons" member, without it. served's definitions are exchange.EncodeAsServed's
// encoding of their members, so the result is each byte for byte with that
// one member cut out.
func rawWithoutIcons(served map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	var out map[string]json.RawMessage
	for name, raw := range served {
		var obj map[string]json.RawMessage
		if err := json.Unmarshal(raw, &obj); err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
		if _, ok := obj[iconsMember]; !ok {
			continue
		}
		delete(obj, iconsMember)
		b, err := exchange.EncodeAsServed(obj)
		if err != nil {
			return nil, fmt.Errorf("tool %q: %w", name, err)
		}
		if out == nil {
			out = map[string]json.RawMessage{}
		}
		out[name] = b
	}
	return out, nil
}
