package profiles

// Policy is the hand-written profiles.toml: what people decide. Every field
// is optional; an empty Policy changes nothing.
type Policy struct {
	Version int `toml:"version"`
	// Default, when set, overrides the generated file's measured default.
	Default string `toml:"default,omitempty"`
	// Destructive names tools (or patterns with '*') treated as destructive
	// in addition to those annotated destructiveHint.
	Destructive []string `toml:"destructive,omitempty"`
	// Effects overrides the effect kind derived from annotations.
	Effects []EffectRule `toml:"effect,omitempty"`
	// UpstreamInstructions drops or replaces upstreams' instructions in
	// every profile (see UpstreamInstructions); a profile's own entry wins.
	UpstreamInstructions *UpstreamInstructions `toml:"upstream_instructions,omitempty"`
	Profiles             []PolicyProfile       `toml:"profile,omitempty"`
}

// PolicyProfile is what people decide about one profile. A PolicyProfile whose
// name is not in the generated file defines a new profile from Pin alone.
type PolicyProfile struct {
	Name string `toml:"name"`
	// Pin lists tools always in the profile, whatever the measurements say.
	Pin []string `toml:"pin,omitempty"`
	// Deny lists tools never in the profile.
	Deny []string `toml:"deny,omitempty"`
	// Instructions, when set, replaces the generated instructions.
	Instructions *string `toml:"instructions,omitempty"`
	// AllowDestructive lets this profile hold destructive tools.
	AllowDestructive bool `toml:"allow_destructive,omitempty"`
	// ReadOnly, when set, overrides the generated read_only flag.
	ReadOnly *bool `toml:"read_only,omitempty"`
	// Search, when set, overrides the generated search flag: serve
	// find_tools and call_tool over the tools the profile does not list.
	Search *bool `toml:"search,omitempty"`
	// Searchable, when set, replaces the generated searchable patterns.
	Searchable []string `toml:"searchable,omitempty"`
	// AlwaysLoad names another profile: this one then lists every tool its
	// rules allow, and marks the named profile's tools for the client to
	// load up front (_meta "anthropic/alwaysLoad"), the rest left to the
	// client's own tool search. Calls are gated by the listing as ever.
	AlwaysLoad string `toml:"always_load,omitempty"`
	// UpstreamInstructions drops or replaces upstreams' instructions in
	// this profile, over the top-level entry.
	UpstreamInstructions *UpstreamInstructions `toml:"upstream_instructions,omitempty"`
	// Icons is IconsDrop to serve the profile's tools without their
	// "icons" member, IconsKeep to serve them as listed, or "" to leave it
	// to the server (its --icons flag; keep by default).
	Icons string `toml:"icons,omitempty"`
}

// The values of a profile's icons key.
const (
	IconsKeep = "keep"
	IconsDrop = "drop"
)

// DropsIcons reports whether a profile whose icons key is icons serves its
// tools without icons, when the server's own setting is dropByDefault.
func DropsIcons(icons string, dropByDefault bool) bool {
	if icons == "" {
		return dropByDefault
	}
	return icons == IconsDrop
}

// EffectRule sets the effect kind of the tools whose name matches Tool, an
// exact name or a pattern with '*'.
type EffectRule struct {
	Tool     string `toml:"tool"`
	Kind     string `toml:"kind"`               // read, evaluate, mutate, destructive
	External *bool  `toml:"external,omitempty"` // external side effect
}
