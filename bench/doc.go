// Package bench measures what a served tool profile costs a client: the bytes
// and the tokens of the initialize + tools/list exchange as it travels (the
// wire measure), the tokens of what a client sends the model for the same
// tools and instructions (the model measure, package price), and the cost of
// each tool's own entry. It renders the per-profile report of profiler bench.
//
// Costs are measured, not estimated from the definitions: each profile's
// *mcp.Server (the gateway's own, through ServeFunc) is connected to a client
// over stdio-framed pipes and every message of the exchange is recorded and
// counted as it travels (package exchange, which cmd/server's handshake
// budget measures with too), so a figure includes what the gateway adds
// (effect _meta, instructions) and is what a client receives.
package bench
