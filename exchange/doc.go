// Package exchange captures and prices the initialize + tools/list exchange
// an MCP server holds with a client: every message in both directions, as
// it travels over stdio-framed pipes (the wire measure), the tools and
// instructions in the model measure of package price, and each tool's own
// entry.
//
// It imports no toolprof package but price, so the serving side
// (cmd/server's handshake budget) and the analysis side (profiler bench,
// derive's pricing of served tools) measure with the same code.
package exchange
