// Package profiles reads and writes toolprof's profile files and resolves
// them against the tools an upstream offers into what each profile serves.
//
// Two files describe what a server serves. profiles.generated.toml is written
// by the derivation (profiler derive) and never edited by hand; profiles.toml,
// beside it and optional, holds what people decide: pinned and denied tools,
// instruction text, destructive rules and effect overrides. Load reads both
// into a Set; Set.Resolve applies it to the tools the upstreams offer.
//
// # Decoding
//
// Both files are decoded strictly: a syntax error, an unknown key, a wrong
// type, a duplicate profile, a tool listed twice in one list, a missing or
// unreadable version (this build reads version 1), an unknown effect kind or
// a default naming no profile fails with an *Error naming the file, the line,
// the key (with array indices, "profile[1].tools") and what would be valid.
//
// # Merge rules
//
// The hand-written file wins wherever both speak. Per profile:
//
//   - tools = (generated tools ∪ pin) − deny, keeping only offered tools;
//   - instructions and read_only come from profiles.toml when it sets them;
//   - upstream_instructions (see UpstreamInstructions), at the top level of
//     profiles.toml for every profile or in a [[profile]] for that one (its
//     per-server entries win), drops the upstream servers' own
//     instructions ("drop") or drops or replaces one server's (a table of
//     SERVER = "drop" or a replacement text), which the gateway otherwise
//     serves after the profile's;
//   - icons = "drop" in a [[profile]] lists the profile's tools without
//     their "icons" member, "keep" with it; without the key the server's
//     setting decides (DropsIcons);
//   - a [[profile]] in profiles.toml that the generated file lacks is a new
//     profile made of its pins;
//   - destructive tools (see EffectOf) are removed from every profile except
//     full unless profiles.toml sets allow_destructive = true for that
//     profile;
//   - a read_only profile keeps only read and evaluate tools;
//   - the tools those two rules removed are ResolvedProfile.Removed, and one
//     warning per profile names them with the setting that allows them
//     (DescribeRemovals).
//
// "full" is reserved: it always holds every offered tool, destructive ones
// included; pin, deny and read_only are refused for it. A generated "full"
// entry may carry instructions, groups and measured figures (its tool list
// is informational), and profiles.toml may replace its instructions.
// profiles.toml's default overrides the generated default; either must name
// an existing profile. Groups keep only offered tools, and switching a group
// on (GroupTools) never adds a tool the profile's destructive or read-only
// rules or its deny list exclude.
//
// Profiles the derivation built as a nested family (core ⊆ standard ⊆
// full) should stay nested once profiles.toml is applied: a pin only in the
// smaller profile, or a deny only in the larger, breaks that silently. Resolve
// warns about each neighbouring pair that no longer nests, naming both
// profiles and the tools at fault. The family is the generated profiles the
// provenance's parameters name ("profile.NAME.target" or
// "profile.NAME.budget_tokens"), in the order the generated file lists them,
// smallest first; a generated file without provenance declares no family,
// and profiles defined only in profiles.toml belong to none.
//
// pin and deny take exact tool names; '*' patterns are accepted only in
// destructive and [[effect]], where a typo cannot silently widen a profile.
// Every tool a file names that no upstream offers is a Warning, never an
// error, so an upstream dropping a tool does not stop the server.
//
// Adding a tool upstream needs no edit at all to be served under full, and
// one edit (a pin, or the next derivation) to join another profile.
package profiles

// Version is the schema version this package reads and writes.
const Version = 1

// File is the generated profiles file (profiles.generated.toml).
type File struct {
	Version    int         `toml:"version"`
	Default    string      `toml:"default"`
	Provenance *Provenance `toml:"provenance,omitempty"`
	Profiles   []Profile   `toml:"profile"`
	Groups     []Group     `toml:"group,omitempty"`
	// Search holds the ranking priors of find_tools (search.go).
	Search *SearchPriors `toml:"search,omitempty"`
}

// Provenance records where a generated file came from. It carries no
// timestamps other than the recorded data window, so that the same input
// yields the same bytes.
type Provenance struct {
	Generator   string   `toml:"generator"`
	DataFrom    string   `toml:"data_from,omitempty"` // RFC 3339, first session start
	DataUntil   string   `toml:"data_until,omitempty"`
	Sessions    int      `toml:"sessions"`
	CatalogHash string   `toml:"catalog_hash"`
	Method      string   `toml:"method"`
	Parameters  []string `toml:"parameters,omitempty"` // "key=value", sorted
	Tokenizer   string   `toml:"tokenizer"`
}

// Profile is one named tool set with its own instructions.
type Profile struct {
	Name         string    `toml:"name"`
	Tools        []string  `toml:"tools"`
	Instructions string    `toml:"instructions,omitempty"`
	Groups       []string  `toml:"groups,omitempty"`     // tool groups a session may switch on
	ReadOnly     bool      `toml:"read_only,omitempty"`  // only read and evaluate tools
	Search       bool      `toml:"search,omitempty"`     // serve find_tools and call_tool (search.go)
	Searchable   []string  `toml:"searchable,omitempty"` // names or '*' patterns search may return; empty: any
	Measured     *Measured `toml:"measured,omitempty"`
}

// Measured holds the derivation's figures for one profile. A figure with no
// evaluable sessions behind it is omitted and its key listed in NotEvaluable,
// never written as 100%.
type Measured struct {
	Sessions        int       `toml:"sessions"`
	Coverage        *float64  `toml:"coverage,omitempty"`
	HoldoutSessions int       `toml:"holdout_sessions"`
	HoldoutCoverage *float64  `toml:"holdout_coverage,omitempty"`
	HoldoutCI       []float64 `toml:"holdout_ci,omitempty"` // 95% Wilson interval [low, high]
	NotEvaluable    []string  `toml:"not_evaluable,omitempty"`
	Tools           int       `toml:"tools"`
	Bytes           int       `toml:"bytes"`
	TokensO200k     int       `toml:"tokens_o200k"`
}

// Group is a set of tools a session can switch on with enable_tools.
type Group struct {
	Name        string   `toml:"name"`
	Description string   `toml:"description"`
	Tools       []string `toml:"tools"`
}
