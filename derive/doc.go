// Package derive chooses tool profiles from measured session usage.
//
// # Problem
//
// A session is covered by a tool set when every tool it called is in the
// set. Choosing the cheapest set (in o200k_base tokens of the tools' list
// entries) that covers a target share of sessions is the set-union knapsack
// problem, NP-hard; adding tools one by one by popularity stalls because a
// session counts only once all of its tools are in.
//
// # Objective
//
// A target profile is chosen by what the model pays per session with
// prompt caching (price's cache model, Config.Cache, over each session's
// calls and turns, Config.Paths), not by one listing's tokens: the target
// stays a floor on coverage, and SolveSession goes above it wherever
// serving more sessions costs less than sending them to the full catalog
// from their refused turn. The listing-cheapest set below (Solve) is its
// first candidate; docs/derive.md gives the algorithm. Budget profiles
// keep the listing objective, since their budget is one listing's tokens.
//
// # Method
//
// Sessions are reduced to weighted signatures: each distinct tool set with
// the number of sessions that used it. Sessions with no tool call need no
// tool and are covered by every profile (they are counted and reported).
// Solve then takes the best of several candidates:
//
//   - Exact enumeration when the instance is small: an optimal set is always
//     the pinned tools plus a union of signatures, so the solver enumerates
//     every subset of signatures or of tools, whichever is smaller, when
//     2^k times the signature count stays under Options.ExactWork.
//   - Lagrangian relaxation: pricing coverage at mu tokens per session turns
//     the problem into a maximum-weight closure, solved exactly by a minimum
//     s-t cut (Dinic). Searching mu by the slope between two known optima
//     (Eisner-Severance) finds the two adjacent corners of the convex
//     cost/coverage frontier around the target; each is optimal for its own
//     coverage. The one above the target is a candidate, the one below is
//     completed greedily.
//   - Signature-level greedy: repeatedly add the signature with the most
//     newly covered sessions per marginal token (adding a signature adds all
//     its missing tools and may complete others). On large instances only
//     the 64 best signatures by their own weight per token get their exact
//     gain computed at each step. On the way it records the cheapest single
//     signature that would finish the target, as an alternative.
//   - The top-k-by-popularity baseline, so the result is never worse than it.
//
// The best candidate is then improved by local search: drop (remove tools,
// dearest first, while the target still holds), destroy-and-repair swaps
// (remove one tool, forbid it, complete greedily, drop; keep if cheaper),
// then iterated local search (remove two or three tools drawn by a seeded
// generator, forbid, repair, drop), all bounded by a deterministic work
// budget so that large instances stay fast and every run gives the same
// answer.
//
// The two hull corners around the target also give a certificate: the
// interpolated hull cost at the target is a lower bound no tool set can
// beat (Solution.LowerBound), so Cost/LowerBound bounds the optimality gap
// of every derived profile. The budget mode (most sessions
// within a token budget) uses the same pieces with the roles of cost and
// coverage exchanged.
//
// Pinned tools are forced in and their cost counted; denied tools are forced
// out and signatures needing them become uncoverable, which can make a target
// unreachable (reported, with the best reachable set kept).
//
// # Family, data and validation
//
// Derive builds a nested family, by default core (target 0.80) within
// standard (0.95) within full (every tool, destructive ones included),
// solving the smallest first and each larger one with the smaller set
// pinned. Destructive tools are denied to every profile except full and
// those profiles.toml allows (allow_destructive), and tools that change
// state to a profile it makes read_only; since profiles nest, a tool denied
// in a larger profile is denied in every smaller one too.
//
// Only sessions that saw every tool teach anything about demand: sessions
// served full, with no profile recorded (imports), or by exploration served
// full. Denied calls count as demand. Sessions served a smaller profile are
// counted and skipped, and so are exploration sessions served the
// --max-profile ceiling and sessions served read-only: neither saw every
// tool. A session calling a tool the catalog lacks is counted and covered
// by no profile, not even full: none can serve it. Config.ToolCalls gives
// the share of calls to such tools (Counts.UnknownCallShare), which tells a
// catalog of another server version.
//
// Sessions are ordered by start time (stable; a session without a start
// keeps its place after the one recorded before it); the oldest part derives,
// the newest Holdout share tests. Each profile records coverage on both
// parts, the held-out 95% Wilson interval, tool count, bytes and tokens. A
// figure without sessions behind it is left out and named in not_evaluable,
// never written as 100%. The file's default is, of the profiles whose
// held-out coverage reaches DefaultTarget (0.80, the default core target),
// the one costing least per derive session with prompt caching (the
// smaller on a tie), full when none other does; an empty profile only when no session learned
// from called a tool.
package derive
