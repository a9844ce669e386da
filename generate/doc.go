// Package generate is profiler derive's pipeline as one call: it reads
// measured sessions (telemetry directories or trace files), prices the
// catalog's tools as the gateway lists them, derives the nested profile
// family (package derive: split off the newest sessions, solve each
// target on the rest, measure on the held-out part), optionally chooses
// tool groups and a grouped profile (package groups) and find_tools'
// ranking priors, and encodes the profiles.generated.toml that results,
// with its provenance.
//
// Run does no rendering and writes no file: the caller prints the
// family's report (derive.Result), the groups' table (groups.Result), the
// summary against the current file (Output.Current), and decides whether
// to write Output.Encoded. What Run says on the way (sessions read, the
// solver's warnings, malformed trace lines) goes to Config.Log, as
// profiler derive prints it on stderr.
//
// Run refuses, with a *RefusedError, when the sessions cannot support a
// file: fewer unrestricted sessions than Config.MinSessions, or more than
// Config.MaxUnknownShare of the calls to tools the catalog lacks (the
// catalog is of another server version). Config.Force writes anyway.
//
// profiler derive and the evaluation tests (go test -tags eval) call Run,
// so that what make eval measures is what the command writes.
package generate
