// Package groups derives tool groups a session can switch on (enable_tools)
// and chooses them jointly with a base profile, from measured sessions.
//
// # Groups from co-usage
//
// Tools are nodes of a weighted co-usage graph whose edge weight is the
// number of derive sessions that used both tools. Communities come from
// Louvain modularity (gonum graph/community, seeded, over a graph type that
// iterates in ID order, so the same input always gives the same groups).
// Groups never cross upstreams: the upstream is the name's prefix before
// "__" (gateway namespacing) or "." (bfcl's group.function); tools without
// one form one pool. Louvain runs on each upstream's own graph.
//
// Tools no derive session used go to one catch-all group per upstream
// ("<upstream>-other", or "other"), never into a co-usage group (they would
// make every switch of it dearer) and never nowhere: base and groups then
// reach every tool the profile may hold, so no session is stuck and a
// session served the grouped profile still shows demand for every tool,
// which keeps the next derivation uncensored. Destructive tools are
// grouped only when the profile may hold them; a session needing one is
// priced at the full catalog (it must be served full).
//
// Names are deterministic and readable: the upstream when one group holds
// all of its grouped tools, else the upstream and the common word prefix of
// the tools' names ("update_reservation") or the most used tool's name; a
// name equal to a tool gets "-group", a repeated one "-2", "-3". The
// description lists the upstream, up to eight tool names most used first
// and the count: "gorilla_file_system: cd, ls, mkdir, … (18 tools)".
//
// # Expected tokens
//
// A session served base B with groups G costs, in o200k_base tokens of the
// tools/list entries: B's tools, plus the enable_tools definition exactly
// as profiles.EnableToolsTool builds it (the gateway serves that definition), plus
// for each group holding a tool it used outside B, once: the enable_tools
// call request (its tools/call params, which the model writes), the result
// (profiles.EnableToolsResult, which the model reads) and the newly listed tools.
// That is the context model: on notifications/tools/list_changed a client
// re-lists and replaces its tool definitions, so the tools it already had
// are not paid again. The wire model, reported beside it, counts each
// re-listed tools/list response whole (base, enable_tools and every group
// on so far, groups switched smallest first), as a client appending every
// listing to the context would pay. Both assume the model switches on the
// right group first time (no failed call before the switch) and count
// definitions once per session, as the static profiles' figures do.
//
// # Choosing base and groups
//
// Sessions are split by time with derive.Split (oldest part to choose, newest
// Holdout share to test). Starting from each candidate base (empty, and the
// bases given, such as the derived core and standard) and each Louvain
// resolution in a sweep, best-improvement local search merges groups of one
// upstream, moves a used tool into the base, or moves a base tool out into
// a group; every move is priced by its exact change to the summed expected
// tokens. Switches are bounded, since each is a round trip and a chance to
// pick the wrong group: the search is repeated with a per-switch token
// penalty (a Lagrange multiplier, swept upwards in steps of about √2 and
// stopped at the first penalty meeting the budget, since larger ones buy
// fewer switches with more tokens; every penalty is kept as a candidate).
// Of the candidates whose derive switches per session have a 95% upper
// confidence bound within MaxSwitches (default 1.5), the one with the
// least cost per derive session with prompt caching is chosen (cached.go:
// the sessions' calls in time from Config.Paths, a switch writing the
// whole prefix again from its turn), and improved by local search on that
// cost within the budget. Starts that a different resolution already
// produced are searched once. Serving
// full (no groups) is always a candidate, so the choice is never worse than
// full on the derive part. Figures on the held-out part are then measured
// with the final names and the exact enable_tools definition.
//
// Demand is taken from sessions that saw every tool (served full, with no
// profile recorded, or exploring) and from sessions served a profile whose
// base and groups reach every tool (its groups defined by the prior
// generated file); a group such a session switched on counts as demand for
// all of that group's tools, since the session asked for them.
package groups
