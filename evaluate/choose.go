package evaluate

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/toolsearch"
)

// DefaultServedTarget is the share of needed tool uses the default arm
// must serve on the held-out sessions.
const DefaultServedTarget = 0.95

// SearchProfileSuffix names the profile a chosen search arm is served
// under: its base's name with this suffix, its base's tools and search =
// true, so that the base stays as it was for the sessions that ask for it.
const SearchProfileSuffix = "-search"

// Choice is the arm chosen to serve the file's default and why.
type Choice struct {
	Target float64
	Needed int // the held-out needed tool uses the shares are of
	// Limit is find_tools' limit the search arms were measured at.
	Limit  int
	Chosen ArmReport
	// Beaten met the target at a higher cost; Missed served less than the
	// target, whatever they cost. Cheapest first. Both are arms a client
	// of protocol 2026-07-28 is served.
	Beaten, Missed []ArmReport
	// LegacyOnly are the arms only clients of 2025-11-25 and earlier are
	// served (groups), never chosen: a 2026-07-28 client served the same
	// profile is offered no groups. Cheapest first.
	LegacyOnly []ArmReport
	// AlwaysLoad is the always_load arm's figures, never chosen: its
	// served share assumes the client's own search finds every tool, and
	// only profiles.toml can serve it (always_load).
	AlwaysLoad *ArmReport
	// SearchBase is the base derived from the learning sessions
	// (ChooseConfig.Learn) the search arm over DerivedSearchProfile
	// lists; nil without them.
	SearchBase *SearchBase
	// NoSearchBase says why no base was derived from the learning
	// sessions although there were some; "" otherwise.
	NoSearchBase string
}

// Choose picks, of the candidate arms a client of protocol 2026-07-28 is
// served (full, default, search; in that order of preference on equal
// cost), the one with the least mean cost per session that serves at
// least target of the needed uses. Arms only earlier clients are served
// (groups) are never chosen, whatever they cost: a default chosen for
// them would refuse a 2026-07-28 client every tool outside the groups'
// base. No arm meeting the target is an error: the caller writes nothing
// rather than a default that misses what sessions need.
func Choose(arms []ArmReport, needed int, target float64) (*Choice, error) {
	if !(target > 0 && target <= 1) {
		return nil, fmt.Errorf("served-share target %v: want a share above 0, at most 1", target)
	}
	c := &Choice{Target: target, Needed: needed}
	var candidates []ArmReport
	for _, a := range arms {
		switch {
		case a.Name == ArmAlwaysLoad:
			if c.AlwaysLoad == nil || a.CostPerSession.Mean < c.AlwaysLoad.CostPerSession.Mean {
				al := a
				c.AlwaysLoad = &al
			}
		case !a.Modern():
			c.LegacyOnly = append(c.LegacyOnly, a)
		case a.Name == ArmFull || a.Name == ArmDefault || a.Name == ArmSearch:
			candidates = append(candidates, a)
		}
	}
	byCost := func(a, b ArmReport) int { return cmp.Compare(a.CostPerSession.Mean, b.CostPerSession.Mean) }
	slices.SortStableFunc(candidates, byCost)
	slices.SortStableFunc(c.LegacyOnly, byCost)
	chosen := slices.IndexFunc(candidates, func(a ArmReport) bool { return a.ServedShare >= target })
	if chosen < 0 {
		if needed == 0 {
			// No share can be computed, so none meets the target.
			return nil, fmt.Errorf("no arm served to clients of protocol %s serves %v of the needed tool uses: the held-out sessions have no needed tool uses, so no served share can be measured", ProtocolsModern, target)
		}
		best := "none"
		if i := bestServed(candidates); i >= 0 {
			best = fmt.Sprintf("%s %.4f", armText(candidates[i]), candidates[i].ServedShare)
		}
		return nil, fmt.Errorf("no arm served to clients of protocol %s serves %v of the %d needed tool uses of the held-out sessions (best: %s)", ProtocolsModern, target, needed, best)
	}
	c.Chosen = candidates[chosen]
	for i, a := range candidates {
		switch {
		case i == chosen:
		case a.ServedShare < target:
			c.Missed = append(c.Missed, a)
		default:
			c.Beaten = append(c.Beaten, a)
		}
	}
	return c, nil
}

func bestServed(arms []ArmReport) int {
	best := -1
	for i, a := range arms {
		if best < 0 || a.ServedShare > arms[best].ServedShare {
			best = i
		}
	}
	return best
}

// Profile is the profile the chosen arm serves as the default.
func (c *Choice) Profile() string {
	if c.Chosen.Name == ArmSearch {
		if c.derived() {
			return DerivedSearchProfile
		}
		return c.Chosen.Profile + SearchProfileSuffix
	}
	return c.Chosen.Profile
}

// derived reports whether the chosen arm is search over the derived base.
func (c *Choice) derived() bool {
	return c.Chosen.Name == ArmSearch && c.Chosen.Profile == DerivedSearchProfile && c.SearchBase != nil
}

// Apply makes the chosen arm f's default: for a search arm it adds the
// profile Profile names (its base's tools, search = true, no groups) and
// a copy of its base's measured demand under that name, so that
// find_tools ranks for its sessions as the arm was measured.
func (c *Choice) Apply(f *profiles.File) error {
	name := c.Profile()
	if !c.Chosen.Modern() {
		return fmt.Errorf("arm %s over %q is served to clients of protocol %s and earlier only: not a default", c.Chosen.Name, c.Chosen.Profile, ProtocolsLegacy)
	}
	if c.derived() {
		if slices.ContainsFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == name }) {
			return fmt.Errorf("profile %q exists already; the search arm over the derived base is served under that name: rename the profile", name)
		}
		set, err := withSearchBase(&profiles.Set{File: f}, c.SearchBase.Start, c.SearchBase.Tools)
		if err != nil {
			return err
		}
		*f = *set.File
	} else if c.Chosen.Name == ArmSearch {
		i := slices.IndexFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == c.Chosen.Profile })
		if i < 0 {
			return fmt.Errorf("search base %q is not a profile of the file", c.Chosen.Profile)
		}
		if slices.ContainsFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == name }) {
			return fmt.Errorf("profile %q exists already; the search arm over %q is served under that name: rename the profile", name, c.Chosen.Profile)
		}
		p := f.Profiles[i]
		p.Name, p.Search, p.Groups = name, true, nil
		p.Tools = slices.Clone(p.Tools)
		if p.Measured != nil {
			m := *p.Measured
			p.Measured = &m
		}
		f.Profiles = append(f.Profiles, p)
		if f.Search != nil {
			has := func(n string) func(profiles.SearchProfile) bool {
				return func(d profiles.SearchProfile) bool { return d.Name == n }
			}
			if j := slices.IndexFunc(f.Search.Profiles, has(c.Chosen.Profile)); j >= 0 && !slices.ContainsFunc(f.Search.Profiles, has(name)) {
				d := f.Search.Profiles[j]
				d.Name, d.Tools = name, slices.Clone(d.Tools)
				f.Search.Profiles = append(f.Search.Profiles, d)
			}
		}
	} else if !slices.ContainsFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == name }) && name != profiles.FullProfile {
		return fmt.Errorf("arm %s: profile %q is not in the file", c.Chosen.Name, name)
	}
	f.Default = name
	return nil
}

// Markdown says which arm serves the default and why: for which clients,
// the arms that missed the target, those it beat, and those only clients
// of protocol 2025-11-25 and earlier are served.
func (c *Choice) Markdown() string {
	var b strings.Builder
	served := ""
	if c.Chosen.Name == ArmSearch {
		served = fmt.Sprintf(" (served as `%s`)", c.Profile())
	}
	if c.derived() {
		served = fmt.Sprintf(" (served as `%s`, its tools below)", c.Profile())
	}
	same := ""
	if c.Chosen.Protocols == ProtocolsAll {
		same = fmt.Sprintf(" Clients of %s and earlier are served the same list.", ProtocolsLegacy)
	}
	fmt.Fprintf(&b, "Default arm for clients of protocol %s, whose tool list never changes: %s%s: %.1f%% of full's cost per held-out session with prompt caching, serving %.1f%% of the %d needed tool uses (target %.1f%%).%s\n",
		ProtocolsModern, armText(c.Chosen), served, 100*c.Chosen.CostShareOfFull, 100*c.Chosen.ServedShare, c.Needed, 100*c.Target, same)
	figures := func(a ArmReport) string {
		return fmt.Sprintf("%s (cost %.1f%%, served %.1f%%)", armText(a), 100*a.CostShareOfFull, 100*a.ServedShare)
	}
	list := func(what string, arms []ArmReport) {
		if len(arms) == 0 {
			return
		}
		parts := make([]string, len(arms))
		for i, a := range arms {
			parts[i] = figures(a)
		}
		fmt.Fprintf(&b, "- %s: %s\n", what, strings.Join(parts, "; "))
	}
	list("missed the target", c.Missed)
	list("met it at a higher cost", c.Beaten)
	modern := append(append([]ArmReport{c.Chosen}, c.Missed...), c.Beaten...)
	for _, a := range c.LegacyOnly {
		fmt.Fprintf(&b, "- not eligible: %s is served to clients of protocol %s and earlier only", figures(a), ProtocolsLegacy)
		if i := slices.IndexFunc(modern, func(m ArmReport) bool { return m.Name == ArmDefault && m.Profile == a.Profile }); i >= 0 {
			fmt.Fprintf(&b, "; a %s client served `%s` is offered no groups: %s", ProtocolsModern, a.Profile, figures(modern[i]))
		}
		if c.Chosen.Name == ArmDefault && c.Chosen.Profile == a.Profile {
			fmt.Fprintf(&b, "; earlier clients served the chosen default are offered these groups")
		}
		b.WriteString("\n")
	}
	if c.Limit != 0 {
		fmt.Fprintf(&b, "- search measured at find_tools' limit %d", c.Limit)
		if c.Limit != toolsearch.DefaultLimit {
			fmt.Fprintf(&b, ": the model chooses the limit of each find_tools call, and without one the gateway returns %d (a profile carries no limit)", toolsearch.DefaultLimit)
		}
		b.WriteString("\n")
	}
	if sb := c.SearchBase; sb != nil {
		fmt.Fprintf(&b, "- search base `%s` derived from the learning sessions, from `%s`'s tools: %d listed beside find_tools and call_tool (%s); search over it costs %.0f per learning session, %.0f over `%s`\n",
			DerivedSearchProfile, sb.Start, len(sb.Tools), strings.Join(sb.Tools, ", "), sb.Cost, sb.StartCost, sb.Start)
	}
	if c.NoSearchBase != "" {
		fmt.Fprintf(&b, "- no search base derived from the learning sessions: %s\n", c.NoSearchBase)
	}
	if a := c.AlwaysLoad; a != nil && a.CostPerSession.Mean < c.Chosen.CostPerSession.Mean {
		fmt.Fprintf(&b, "- not chosen: %s (cost %.1f%%) assumes the client's own search finds every tool; to serve it, set always_load = %q on a profile in profiles.toml\n",
			armText(*a), 100*a.CostShareOfFull, a.Profile)
	}
	return b.String()
}

func armText(a ArmReport) string {
	switch {
	case a.Name == ArmSearch && a.Profile == DerivedSearchProfile:
		return "search over the derived base" // no profile of the file holds that name
	case a.Name == ArmSearch || a.Name == ArmAlwaysLoad:
		return fmt.Sprintf("%s over `%s`", a.Name, a.Profile)
	case a.Name == ArmFull:
		return a.Name
	}
	return fmt.Sprintf("%s `%s`", a.Name, a.Profile)
}

// ChooseConfig is a choice of the default arm.
type ChooseConfig struct {
	Config
	// Target is the served share the default must reach; 0 is
	// DefaultServedTarget.
	Target float64
	// Learn are the sessions the file was learned from, never held-out
	// ones; when given, search over a base derived from them
	// (DeriveSearchBase, from the smallest profile) is a candidate too,
	// served as DerivedSearchProfile, unless the file has a profile of
	// that name (Choice.NoSearchBase says so).
	Learn []Session
}

// ChooseDefault evaluates the arms on cfg's (held-out) sessions with each
// profile of the file but full as the default and as the search base, and
// chooses (Choose): full, each profile as a 2026-07-28 client is served it
// (default), search over each profile and, with cfg.Learn, search over
// the base derived from them; the groups arm is reported, never chosen.
func ChooseDefault(ctx context.Context, cfg ChooseConfig) (*Choice, error) {
	if cfg.Profiles == nil || cfg.Profiles.File == nil {
		return nil, errors.New("evaluate: a profiles file is needed")
	}
	if len(cfg.Sessions) == 0 {
		return nil, errors.New("evaluate: no held-out sessions to choose the default arm by")
	}
	target := cfg.Target
	if target == 0 {
		target = DefaultServedTarget
	}
	var arms []ArmReport
	needed := 0
	first := true
	for _, p := range cfg.Profiles.File.Profiles {
		if p.Name == profiles.FullProfile {
			continue
		}
		f := *cfg.Profiles.File
		f.Default = p.Name
		set := *cfg.Profiles
		set.File = &f
		if set.Policy != nil { // the policy's default would shadow p's
			pol := *set.Policy
			pol.Default = ""
			set.Policy = &pol
		}
		run := cfg.Config
		run.Profiles, run.SearchBase = &set, p.Name
		rep, err := Run(ctx, run)
		if err != nil {
			return nil, err
		}
		needed = rep.Needed
		for _, a := range rep.Arms {
			if (first && (a.Name == ArmFull || a.Name == ArmGroups)) || a.Name == ArmDefault || a.Name == ArmSearch || a.Name == ArmAlwaysLoad {
				arms = append(arms, a)
			}
		}
		first = false
	}
	if first {
		return nil, errors.New("evaluate: the file has no profile but full to choose from")
	}
	var sb *SearchBase
	noBase := ""
	if len(cfg.Learn) > 0 && slices.ContainsFunc(cfg.Profiles.File.Profiles, func(p profiles.Profile) bool { return p.Name == DerivedSearchProfile }) {
		// The other arms still compete: the file's own search profile is
		// one of them.
		noBase = fmt.Sprintf("the file has a profile named `%s`, the name it would be served under: rename that profile to have it derived", DerivedSearchProfile)
	} else if len(cfg.Learn) > 0 {
		learn := cfg.Config
		learn.Sessions, learn.SearchBase = cfg.Learn, ""
		var err error
		if sb, err = DeriveSearchBase(ctx, learn); err != nil {
			return nil, err
		}
		set, err := sb.Served(cfg.Profiles)
		if err != nil {
			return nil, err
		}
		run := cfg.Config
		run.Profiles, run.SearchBase = set, DerivedSearchProfile
		rep, err := Run(ctx, run)
		if err != nil {
			return nil, err
		}
		arms = append(arms, *rep.Arm(ArmSearch))
	}
	c, err := Choose(arms, needed, target)
	if err != nil {
		return nil, err
	}
	c.SearchBase, c.NoSearchBase = sb, noBase
	if err := c.CheckServed(cfg.Profiles); err != nil {
		return nil, err
	}
	c.Limit = cmp.Or(cfg.Limit, toolsearch.DefaultLimit)
	return c, nil
}
