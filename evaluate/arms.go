package evaluate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/version"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// The arms, in report order.
const (
	ArmFull       = "full"        // every tool listed
	ArmDefault    = "default"     // the file's default profile, as a 2026-07-28 client is served it
	ArmGroups     = "groups"      // the first profile offering groups, switched on as used
	ArmSearch     = "search"      // a base profile with find_tools and call_tool
	ArmAlwaysLoad = "always_load" // a base profile loaded, the rest found by the client's search
)

// The protocols an arm's figures are for (ArmReport.Protocols). A request
// of protocol 2026-07-28 or later is offered no tool groups, since its
// tools/list may not change as a side effect of other requests; a profile
// with groups therefore serves two lists.
const (
	// ProtocolsAll: the list never changes, and every protocol version is
	// served it alike.
	ProtocolsAll = "all"
	// ProtocolsModern: what a client of 2026-07-28 or later is served;
	// clients of 2025-11-25 and earlier are offered the profile's groups
	// as well.
	ProtocolsModern = "2026-07-28"
	// ProtocolsLegacy: clients of 2025-11-25 and earlier only; a client of
	// 2026-07-28 served the same profile gets it without its groups.
	ProtocolsLegacy = "2025-11-25"
)

// DefaultClientResults is the definitions a client's own tool search
// returns per missing tool in the always_load arm: Anthropic documents its
// tool search tool as returning 3 to 5 tool references per search, and
// the upper end keeps the arm's cost an upper bound.
const DefaultClientResults = 5

// Config is one evaluation.
type Config struct {
	Catalog *catalog.Catalog
	// Profiles is the profiles file (and its policy) the arms are taken
	// from; its [search] priors rank the search arms.
	Profiles *profiles.Set
	// Sessions are replayed: the held-out part only (Split), since the
	// file was learned from the rest.
	Sessions []Session
	// SearchBase is the profile the search and always_load arms list; ""
	// is the first profile with search = true, else the file's default.
	SearchBase string
	// Limit is find_tools' limit in the search arm; 0 is
	// toolsearch.DefaultLimit.
	Limit int
	// Cut is the share of its best hit's score a hit of find_tools'
	// answer reaches (toolsearch.Cut), as the gateway cuts it; 0 is
	// toolsearch.DefaultCut, negative none (up to Limit hits).
	Cut float64
	// ClientResults is the definitions the always_load arm's client
	// search returns per missing tool; 0 is DefaultClientResults.
	ClientResults int
	// RefuseMisses prices a needed use the search missed as a refusal
	// (the session on the full catalog from that turn) instead of found
	// by name: to judge search alone, as the tuning of find_tools'
	// defaults does, so that the names do not carry what search misses.
	RefuseMisses bool
	// Cache is the prompt-caching model the cost is priced under.
	Cache price.CacheModel
}

// Report is what an evaluation measured, per arm.
type Report struct {
	Sessions int `json:"sessions"`
	// Needed is the needed tool uses: each session's first call of each
	// catalog tool.
	Needed int         `json:"needed"`
	Arms   []ArmReport `json:"arms"`
}

// ArmReport is one arm's figures.
type ArmReport struct {
	Name    string `json:"name"`
	Profile string `json:"profile,omitempty"` // the profile it lists
	// Protocols is the protocol versions of the clients the figures are
	// for: ProtocolsAll, ProtocolsModern or ProtocolsLegacy.
	Protocols string `json:"protocols"`
	// ServedShare is the share of needed uses the arm served: listed,
	// switched on, or found by a search. Of no needed uses it is unknown:
	// 0 here, left out of the report's JSON and printed "-".
	ServedShare float64 `json:"served_share"`
	// RecoveredShare is the share of needed uses a search missed that the
	// model then found by name: it lists the names find_tools may still
	// return (toolsearch.ListQuery) once a session and asks for the tool
	// by name, both answers priced as conversation. Not part of
	// ServedShare; only for the search arm, left out when 0.
	RecoveredShare float64 `json:"recovered_share,omitempty"`
	// RecallAt is the share of the needed uses a search was made for whose
	// tool ranked within the top k, by k; only for the arms that search,
	// and left out (unknown) when they made no search.
	RecallAt           map[string]float64 `json:"recall_at,omitempty"`
	SearchesPerSession float64            `json:"searches_per_session"`
	// CostPerSession is the model-token cost of a session with prompt
	// caching (package price), in input-token equivalents.
	CostPerSession  Cost    `json:"cost_per_session"`
	CostShareOfFull float64 `json:"cost_share_of_full"`
}

// Cost is a summary of per-session costs.
type Cost struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P95  float64 `json:"p95"`
}

// Modern reports whether a client of protocol 2026-07-28 is served what
// the figures are of.
func (a *ArmReport) Modern() bool { return a.Protocols != ProtocolsLegacy }

// Arm returns the named arm's figures, or nil.
func (r *Report) Arm(name string) *ArmReport {
	for i := range r.Arms {
		if r.Arms[i].Name == name {
			return &r.Arms[i]
		}
	}
	return nil
}

// searchArmProfile is the name the search arm's profile is served under
// while measuring: not a name a profiles file can hold, so it never
// shadows one.
const searchArmProfile = "(search)"

// arm is how one arm serves a session.
type arm struct {
	name, profile string
	protocols     string
	listed        []string            // from the first turn
	groups        map[string][]string // switched on at the first call of one of their tools
	search        int                 // find_tools' limit; 0: no search
	cut           float64             // find_tools' cut (toolsearch.Cut)
	searchable    func(string) bool   // what find_tools may return; with search only
	client        int                 // definitions per client search; 0: none
	prices        price.Prices
}

// Run serves every arm with the gateway's own code over the catalog,
// measures what each lists, and replays the sessions against each.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	m, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	var arms []arm
	add := func(name, profile string, edit func(*arm)) error {
		a, err := m.armOf(name, profile)
		if err != nil {
			return err
		}
		if edit != nil {
			edit(&a)
		}
		arms = append(arms, a)
		return nil
	}
	// The listings were measured by a client of 2025-11-25, which is
	// offered a profile's groups; a 2026-07-28 one is offered none, nor
	// enable_tools.
	modern := func(a *arm) {
		if len(a.groups) > 0 {
			a.protocols = ProtocolsModern
		}
		a.groups = nil
		a.listed = slices.DeleteFunc(slices.Clone(a.listed), func(t string) bool { return t == profiles.EnableToolsName })
	}
	resolved := m.resolved
	if err := add(ArmFull, profiles.FullProfile, nil); err != nil {
		return nil, err
	}
	if err := add(ArmDefault, resolved.Default, modern); err != nil {
		return nil, err
	}
	if i := slices.IndexFunc(resolved.Order, func(p string) bool { return len(resolved.Profiles[p].Groups) > 0 }); i >= 0 {
		if err := add(ArmGroups, resolved.Order[i], func(a *arm) { a.protocols = ProtocolsLegacy }); err != nil {
			return nil, err
		}
	}
	if err := add(ArmSearch, searchArmProfile, func(a *arm) { a.profile = m.base }); err != nil {
		return nil, err
	}
	// always_load marks the base's own tools, never the gateway's, for the
	// client to load, on a list that never changes.
	if err := add(ArmAlwaysLoad, m.base, func(a *arm) {
		a.groups, a.search, a.searchable, a.client = nil, 0, nil, m.client
		a.listed = slices.DeleteFunc(slices.Clone(a.listed), func(t string) bool {
			return t == toolsearch.FindToolsName || t == toolsearch.CallToolName || t == profiles.EnableToolsName
		})
	}); err != nil {
		return nil, err
	}

	out := &Report{Sessions: len(cfg.Sessions)}
	var fullMean float64
	for _, a := range arms {
		r := m.replay(a)
		costs, err := r.sessions(cfg.Sessions)
		if err != nil {
			return nil, err
		}
		out.Needed = r.needed
		st := price.Summarise(costs)
		ar := ArmReport{Name: a.name, Profile: a.profile, Protocols: a.protocols, ServedShare: ratio(r.served, r.needed),
			SearchesPerSession: round4(ratio(r.recall.Needed, len(cfg.Sessions))),
			CostPerSession:     Cost{Mean: round2(st.Mean), P50: round2(st.P50), P95: round2(st.P95)}}
		ar.ServedShare, ar.RecoveredShare = round4(ar.ServedShare), round4(ratio(r.recovered, r.needed))
		if a.name == ArmFull {
			fullMean = st.Mean
		}
		if fullMean > 0 {
			ar.CostShareOfFull = round4(st.Mean / fullMean)
		}
		// Recall over no searches cannot be computed: left out, never 0.
		if (a.search > 0 || a.client > 0) && r.recall.Needed > 0 {
			ar.RecallAt = map[string]float64{}
			for _, k := range RecallRanks() {
				ar.RecallAt[strconv.Itoa(k)] = round4(r.recall.Share(k))
			}
		}
		out.Arms = append(out.Arms, ar)
	}
	return out, nil
}

// measured is cfg's profiles served and measured, and what replaying an
// arm over them needs: shared by Run and DeriveSearchBase, so that a base
// is chosen by the figures it is reported with.
type measured struct {
	limit, client int
	refuseMisses  bool
	cut           float64
	resolved      *profiles.Resolved
	// served is resolved with the search arm's profile (searchArmProfile):
	// base, served with search.
	served     *profiles.Resolved
	base       string
	rep        *bench.Report
	toolPrices map[string]int // model tokens of each catalog tool's entry
	ix         *toolsearch.Index
	cache      price.CacheModel
	// answerTokens prices find_tools' answer of names; namesTokens its
	// answer to toolsearch.ListQuery listing names.
	answerTokens, namesTokens func(names []string) (int, error)
	fallback                  int // the full catalog's prefix, listed after a refusal
}

// prepare checks cfg, serves its profiles with the gateway's own code and
// measures what each lists.
func prepare(ctx context.Context, cfg Config) (*measured, error) {
	if cfg.Catalog == nil || cfg.Profiles == nil {
		return nil, errors.New("evaluate: a catalog and a profiles file are needed")
	}
	if err := cfg.Cache.Check(); err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	limit := cfg.Limit
	if limit == 0 {
		limit = toolsearch.DefaultLimit
	}
	if limit < 1 || limit > toolsearch.MaxLimit {
		return nil, fmt.Errorf("evaluate: search limit %d: want 1 to %d", limit, toolsearch.MaxLimit)
	}
	if err := toolsearch.CheckCut(cutOf(cfg.Cut)); err != nil {
		return nil, fmt.Errorf("evaluate: search %w (0: %g, negative: none)", err, toolsearch.DefaultCut)
	}
	client := cmp.Or(cfg.ClientResults, DefaultClientResults)
	if client < 1 {
		return nil, fmt.Errorf("evaluate: client search results %d: want at least 1", client)
	}
	resolved, err := cfg.Profiles.Resolve(cfg.Catalog.Tools)
	if err != nil {
		return nil, fmt.Errorf("evaluate: profiles: %w", err)
	}
	base := cfg.SearchBase
	if base == "" {
		base = resolved.Default
		if i := slices.IndexFunc(resolved.Order, func(p string) bool { return resolved.Profiles[p].Search }); i >= 0 {
			base = resolved.Order[i]
		}
	}
	bp, ok := resolved.Profiles[base]
	if !ok {
		return nil, fmt.Errorf("evaluate: search base %q: no such profile; valid profiles: %v", base, resolved.Order)
	}
	served := *resolved
	served.Profiles = maps.Clone(resolved.Profiles)
	sp := *bp
	sp.Name, sp.Search, sp.Groups = searchArmProfile, true, nil
	served.Profiles[searchArmProfile] = &sp
	served.Order = append(slices.Clone(resolved.Order), searchArmProfile)

	counter, err := price.NewCounter()
	if err != nil {
		return nil, err
	}
	rep, err := measure(ctx, cfg.Catalog, &served, counter)
	if err != nil {
		return nil, err
	}
	defs := make(map[string]toolsearch.Definition, len(cfg.Catalog.Tools))
	for _, t := range cfg.Catalog.Tools {
		defs[t.Name] = toolsearch.Definition{Name: t.Name, Description: t.Description, InputSchema: t.InputSchema}
	}
	// find_tools' answer is text the model reads: priced as the gateway
	// writes it.
	// Tokenising is most of a replay's time, and the same answers recur
	// across arms and sessions: counted once each.
	answers := map[string]int{}
	answerTokens := func(names []string) (int, error) {
		key := strings.Join(names, "\x00")
		if n, ok := answers[key]; ok {
			return n, nil
		}
		ds := make([]toolsearch.Definition, len(names))
		for i, n := range names {
			ds[i] = defs[n]
		}
		text, err := toolsearch.Answer(ds)
		if err != nil {
			return 0, err
		}
		n, err := counter.Count(text)
		if err != nil {
			return 0, err
		}
		answers[key] = n[price.O200kBase]
		return n[price.O200kBase], nil
	}
	namesTokens := func(names []string) (int, error) {
		text, err := toolsearch.NamesAnswer(names)
		if err != nil {
			return 0, err
		}
		n, err := counter.Count(text)
		if err != nil {
			return 0, err
		}
		return n[price.O200kBase], nil
	}
	m := &measured{limit: limit, client: client, refuseMisses: cfg.RefuseMisses, cut: cutOf(cfg.Cut), resolved: resolved, served: &served, base: base, rep: rep,
		toolPrices: map[string]int{}, cache: cfg.Cache, answerTokens: answerTokens, namesTokens: namesTokens,
		ix: toolsearch.New(Docs(cfg.Catalog.Tools), resolved.SearchPriors.Priors(), toolsearch.Weights{})}
	for _, tc := range rep.ToolCosts {
		m.toolPrices[tc.Name] = tc.Model[price.DefaultFamily]
	}
	// A session refused a tool continues on the full catalog, as derive and
	// bench price it: the full arm's prefix from that turn, written again.
	full, err := m.armOf(ArmFull, profiles.FullProfile)
	if err != nil {
		return nil, err
	}
	m.fallback = full.prices.Overhead
	for _, t := range full.listed {
		m.fallback += full.prices.Tools[t]
	}
	return m, nil
}

// armOf is the arm name serving the measured profile as it lists it.
func (m *measured) armOf(name, profile string) (arm, error) {
	pc := m.rep.Profile(profile)
	if pc == nil {
		return arm{}, fmt.Errorf("evaluate: profile %q was not measured", profile)
	}
	p := price.Prices{Tools: maps.Clone(m.toolPrices), Overhead: pc.InstructionTokens[string(price.DefaultFamily)][price.O200kBase]}
	for t, n := range pc.EntryTokens() {
		if _, ok := p.Tools[t]; !ok {
			p.Tools[t] = n // the gateway's own tools
		}
	}
	a := arm{name: name, profile: profile, protocols: ProtocolsAll, listed: pc.ToolNames, groups: pc.Groups, prices: p}
	if m.served.Profiles[profile].Search {
		a.search, a.cut = m.limit, m.cut
		a.searchable = func(tool string) bool { return m.served.Searchable(profile, tool) }
	}
	return a, nil
}

// replay is a replay of a against the measured catalog.
func (m *measured) replay(a arm) *replay {
	return &replay{arm: a, refuseMisses: m.refuseMisses, ix: m.ix, cache: m.cache, answerTokens: m.answerTokens, namesTokens: m.namesTokens, fallback: m.fallback, recall: Recall{At: map[int]int{}}}
}

// measure serves every profile of r over cat with the gateway's code and
// measures what each lists (bench).
func measure(ctx context.Context, cat *catalog.Catalog, r *profiles.Resolved, counter *price.Counter) (*bench.Report, error) {
	g, err := gateway.New(ctx, gateway.Options{Upstream: gateway.NewCatalogUpstream(cat), Tools: cat.Tools, Profiles: r,
		ServerName: version.Name, ServerVersion: version.Version})
	if err != nil {
		return nil, fmt.Errorf("evaluate: serve the profiles: %w", err)
	}
	defer g.Close()
	rep, err := bench.MeasureProfiles(ctx, r, g.Server, counter, bench.MeasureOptions{})
	if err != nil {
		return nil, fmt.Errorf("evaluate: %w", err)
	}
	return rep, nil
}

// replay replays sessions against one arm and counts as it goes.
type replay struct {
	arm
	ix             *toolsearch.Index
	cache          price.CacheModel
	answerTokens   func(names []string) (int, error) // find_tools' answer of names
	namesTokens    func(names []string) (int, error) // its answer listing names
	fallback       int                               // the full catalog's prefix, listed after a refusal
	needed, served int
	// recovered counts the needed uses a search missed that the model
	// then found by name (toolsearch.ListQuery and Lookup).
	recovered    int
	refuseMisses bool   // Config.RefuseMisses
	recall       Recall // Needed counts the searches made
}

// sessions replays ss in order and returns their costs.
func (r *replay) sessions(ss []Session) ([]float64, error) {
	costs := make([]float64, 0, len(ss))
	for _, s := range ss {
		c, err := r.session(s)
		if err != nil {
			return nil, fmt.Errorf("evaluate: session %q: %w", s.ID, err)
		}
		costs = append(costs, c)
	}
	return costs, nil
}

// session replays s and returns its cost.
func (r *replay) session(s Session) (float64, error) {
	p, err := r.play(s)
	if err != nil {
		return 0, err
	}
	return r.cost(p), nil
}

// played is what replaying a session against an arm decided, before its
// pricing.
type played struct {
	ps        price.Session
	added     []int // find_tools' answers and loaded definitions, by turn
	refusedAt int   // the turn of the first needed use not served; -1: none
	// returned is every tool a search of the session returned: listing
	// one of them, or one the session calls, changes how it plays (but
	// for a tool whose words matched best, whose score the others'
	// are scaled by, which DeriveSearchBase replays to check; and but
	// for the names answer of a session that read it, a name shorter).
	returned map[string]bool
	// listedNames says the model read find_tools' answer listing the
	// names it may find (toolsearch.ListQuery), after a miss.
	listedNames bool
}

// play replays s's needed uses against the arm, counting as it goes.
func (r *replay) play(s Session) (*played, error) {
	var tools []string
	var turns []int
	for _, c := range s.Calls {
		if r.ix.Has(c.Tool) { // the trace may name a tool the catalog lacks: no listing holds it
			tools, turns = append(tools, c.Tool), append(turns, c.Turn)
		}
	}
	ps, err := price.NewSession(tools, turns, len(s.Turns))
	if err != nil {
		return nil, err
	}
	listed := map[string]bool{}
	for _, t := range r.listed {
		listed[t] = true
	}
	inGroup := map[string]bool{}
	for _, ts := range r.groups {
		for _, t := range ts {
			inGroup[t] = true
		}
	}
	found := map[string]bool{} // definitions a search returned: callable from then on
	p := &played{ps: ps, added: make([]int, ps.Turns), refusedAt: -1, returned: map[string]bool{}}
	added := p.added
	var history []string
	refuse := func(turn int) {
		if p.refusedAt < 0 {
			p.refusedAt = turn
		}
	}
	for _, c := range ps.Calls {
		if slices.Contains(history, c.Tool) {
			continue
		}
		r.needed++
		switch {
		case listed[c.Tool] || inGroup[c.Tool] || found[c.Tool]:
			r.served++
		case r.search > 0 && r.searchable(c.Tool):
			// Ranked as the gateway ranks for a session of the base: with
			// its measured demand, never a definition twice.
			hits, returned := find(r.ix, r.profile, s.query(c.Turn), history, r.search, r.cut, r.searchable, found)
			r.rank(hits, c.Tool)
			var names []string
			for _, h := range returned {
				p.returned[h.Name] = true
				names = append(names, h.Name)
			}
			n, err := r.answerTokens(names)
			if err != nil {
				return nil, err
			}
			if p.refusedAt < 0 { // on the full catalog the model reads no answer
				added[c.Turn] += n
			}
			if found[c.Tool] {
				r.served++
				break
			}
			if r.refuseMisses {
				refuse(c.Turn)
				break
			}
			// Missed: the model lists the names it may still find, once
			// a session, and asks for the tool by name (find_tools'
			// ListQuery, then Lookup), reading both answers.
			if p.refusedAt < 0 {
				if !p.listedNames {
					n, err := r.namesTokens(r.ix.Names(func(t string) bool { return r.searchable(t) && !found[t] }))
					if err != nil {
						return nil, err
					}
					added[c.Turn] += n
					p.listedNames = true
				}
				n, err := r.answerTokens([]string{c.Tool})
				if err != nil {
					return nil, err
				}
				added[c.Turn] += n
			}
			found[c.Tool], p.returned[c.Tool] = true, true
			r.recovered++
		case r.client > 0:
			// The client's search over the deferred tools: one search per
			// missing tool, which finds it, with the best others by this
			// ranking filling the result; the client loads their
			// definitions as the model reads tools (model entries).
			deferred := func(t string) bool { return !listed[t] }
			hits := r.ix.Search(s.query(c.Turn), history, max(r.client, slices.Max(RecallRanks())), deferred)
			r.rank(hits, c.Tool)
			result := []string{c.Tool}
			for _, h := range hits {
				if len(result) == r.client {
					break
				}
				if h.Name != c.Tool {
					result = append(result, h.Name)
				}
			}
			for _, t := range result {
				found[t] = true
				added[c.Turn] += r.prices.Tools[t]
			}
			r.served++
		default:
			refuse(c.Turn)
		}
		history = append(history, c.Tool)
	}
	return p, nil
}

// cost prices p with the arm's listing.
func (r *replay) cost(p *played) float64 {
	layout, _ := r.prices.Turns(p.ps, price.Listing{Base: r.listed, Groups: r.groups})
	for t := range layout {
		layout[t].Added = p.added[t]
		if p.refusedAt >= 0 && t >= p.refusedAt {
			layout[t].Prefix, layout[t].Changed = r.fallback, t == p.refusedAt
		}
	}
	return price.SessionCost(layout, r.cache)
}

// rank counts a search made for tool and where tool ranked in hits.
func (r *replay) rank(hits []toolsearch.Hit, tool string) { r.recall.count(hits, tool) }

func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

func round2(x float64) float64 { return math.Round(x*100) / 100 }
func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }
