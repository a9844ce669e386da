// Package report builds the usage report: one static, self-contained HTML
// page (index.html) that says which tools earn their definition tokens, per
// upstream server and per tool, over a telemetry window.
//
// Build reads telemetry, a catalog and optionally a profiles file into a
// Report: aggregates only (per server, per tool, per outcome, per day, per
// profile), never calls, so the page stays small whatever the window holds.
// Write renders it with html/template (every name from telemetry, the
// catalog or the profiles file is escaped), draws its charts with
// gonum/plot as SVG inlined in the page, and embeds the Report as a JSON
// block beside the tables. The page fetches nothing and needs no server:
// it opens from a file URL, and a small inline script sorts the tables.
//
// The figures are those of profiler stats on the same window: per tool,
// calls and sessions are telemetry.Summarize's rows. A tool's definition
// tokens are the model measure (package price) of its entry as the gateway
// lists it, as profiler derive prices tools (o200k_base, the default
// client family). A tool's server is the part of its name before "__",
// the gateway's prefix; a catalog of one server, without prefixes, is one
// row.
//
// The cost/coverage frontier is drawn over every session of the window
// (profiler derive --plot draws it over the sessions derive learns from):
// the exact corners of the convex hull (derive.Frontier), the solver's own
// sets at the targets 0.05, 0.10, ..., 1 (derive.SolverGrid, as derive
// --plot draws them; they fill in the frontier between the corners, which
// need not be convex there), the top-k popularity baseline, and one point
// per profile of the profiles file.
package report
