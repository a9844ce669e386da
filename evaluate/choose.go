package evaluate

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/toolprof/toolprof/profiles"
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
	Chosen ArmReport
	// Beaten met the target at a higher cost; Missed served less than the
	// target, whatever they cost. Cheapest first.
	Beaten, Missed []ArmReport
	// AlwaysLoad is the always_load arm's figures, never chosen: its
	// served share assumes the client's own search finds every tool, and
	// only profiles.toml can serve it (always_load).
	AlwaysLoad *ArmReport
}

// Choose picks, of the candidate arms (full, default, groups, search; in
// that order of preference on equal cost), the one with the least mean
// cost per session that serves at least target of the needed uses. No
// arm meeting the target is an error: the caller writes nothing rather
// than a default that misses what sessions need.
func Choose(arms []ArmReport, needed int, target float64) (*Choice, error) {
	if !(target > 0 && target <= 1) {
		return nil, fmt.Errorf("served-share target %v: want a share above 0, at most 1", target)
	}
	c := &Choice{Target: target, Needed: needed}
	var candidates []ArmReport
	for _, a := range arms {
		switch a.Name {
		case ArmFull, ArmDefault, ArmGroups, ArmSearch:
			candidates = append(candidates, a)
		case ArmAlwaysLoad:
			if c.AlwaysLoad == nil || a.CostPerSession.Mean < c.AlwaysLoad.CostPerSession.Mean {
				al := a
				c.AlwaysLoad = &al
			}
		}
	}
	slices.SortStableFunc(candidates, func(a, b ArmReport) int {
		switch {
		case a.CostPerSession.Mean < b.CostPerSession.Mean:
			return -1
		case a.CostPerSession.Mean > b.CostPerSession.Mean:
			return 1
		}
		return 0
	})
	chosen := slices.IndexFunc(candidates, func(a ArmReport) bool { return a.ServedShare >= target })
	if chosen < 0 {
		best := "none"
		if i := bestServed(candidates); i >= 0 {
			best = fmt.Sprintf("%s %.4f", armText(candidates[i]), candidates[i].ServedShare)
		}
		return nil, fmt.Errorf("no arm serves %v of the %d needed tool uses of the held-out sessions (best: %s)", target, needed, best)
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
		return c.Chosen.Profile + SearchProfileSuffix
	}
	return c.Chosen.Profile
}

// Apply makes the chosen arm f's default: for a search arm it adds the
// profile Profile names (its base's tools, search = true, no groups).
func (c *Choice) Apply(f *profiles.File) error {
	name := c.Profile()
	if c.Chosen.Name == ArmSearch {
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
	} else if !slices.ContainsFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == name }) && name != profiles.FullProfile {
		return fmt.Errorf("arm %s: profile %q is not in the file", c.Chosen.Name, name)
	}
	f.Default = name
	return nil
}

// Markdown says which arm serves the default and why.
func (c *Choice) Markdown() string {
	var b strings.Builder
	served := ""
	if c.Chosen.Name == ArmSearch {
		served = fmt.Sprintf(" (served as `%s`)", c.Profile())
	}
	fmt.Fprintf(&b, "Default arm: %s%s: %.1f%% of full's cost per held-out session with prompt caching, serving %.1f%% of the %d needed tool uses (target %.1f%%).\n",
		armText(c.Chosen), served, 100*c.Chosen.CostShareOfFull, 100*c.Chosen.ServedShare, c.Needed, 100*c.Target)
	list := func(what string, arms []ArmReport) {
		if len(arms) == 0 {
			return
		}
		parts := make([]string, len(arms))
		for i, a := range arms {
			parts[i] = fmt.Sprintf("%s (cost %.1f%%, served %.1f%%)", armText(a), 100*a.CostShareOfFull, 100*a.ServedShare)
		}
		fmt.Fprintf(&b, "- %s: %s\n", what, strings.Join(parts, "; "))
	}
	list("missed the target", c.Missed)
	list("met it at a higher cost", c.Beaten)
	if a := c.AlwaysLoad; a != nil && a.CostPerSession.Mean < c.Chosen.CostPerSession.Mean {
		fmt.Fprintf(&b, "- not chosen: %s (cost %.1f%%) assumes the client's own search finds every tool; to serve it, set always_load = %q on a profile in profiles.toml\n",
			armText(*a), 100*a.CostShareOfFull, a.Profile)
	}
	return b.String()
}

func armText(a ArmReport) string {
	switch a.Name {
	case ArmSearch, ArmAlwaysLoad:
		return fmt.Sprintf("%s over `%s`", a.Name, a.Profile)
	case ArmFull:
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
}

// ChooseDefault evaluates the arms on cfg's (held-out) sessions, search
// over each profile of the file but full as the base, and chooses
// (Choose).
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
		run := cfg.Config
		run.SearchBase = p.Name
		rep, err := Run(ctx, run)
		if err != nil {
			return nil, err
		}
		needed = rep.Needed
		for _, a := range rep.Arms {
			if first || a.Name == ArmSearch || a.Name == ArmAlwaysLoad {
				arms = append(arms, a)
			}
		}
		first = false
	}
	if first {
		return nil, errors.New("evaluate: the file has no profile but full to choose from")
	}
	return Choose(arms, needed, target)
}
