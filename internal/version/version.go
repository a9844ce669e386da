// Package version is toolprof's identity as an MCP implementation: the name
// and version the server reports in serverInfo and records in telemetry,
// and that profiler bench serves so that a measured handshake is the one
// clients get.
package version

const (
	// Name is the implementation name in serverInfo.
	Name = "toolprof"
	// Version is toolprof's release version.
	Version = "0.1.0"
)
