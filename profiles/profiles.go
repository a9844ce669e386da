// Package profiles reads and writes toolprof's profile files.
//
// Two files describe what a server serves. profiles.generated.toml is written
// by the derivation (profiler derive) and never edited by hand; profiles.toml,
// beside it and optional, holds what people decide: pinned and denied tools,
// instruction text, destructive rules and effect overrides. Merge combines
// them into a Set, the hand-written file winning wherever both speak.
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
	Groups       []string  `toml:"groups,omitempty"`    // tool groups a session may switch on
	ReadOnly     bool      `toml:"read_only,omitempty"` // only read and evaluate tools
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
