package main

import (
	"context"
	"flag"
	"fmt"
	"slices"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/profiles"
)

// deriveChooseFlags are profiler derive's --choose-default settings.
type deriveChooseFlags struct {
	enabled bool
	target  float64
}

func addDeriveChooseFlags(fl *flag.FlagSet) *deriveChooseFlags {
	c := &deriveChooseFlags{}
	fl.BoolVar(&c.enabled, "choose-default", false, "make the default the arm (full, the default profile, groups, or search over a profile) with the least held-out cost per session with caching that serves --served-target of needed tool uses (profiler evaluate's arms; needs --trace)")
	fl.Float64Var(&c.target, "served-target", evaluate.DefaultServedTarget, "--choose-default: the `share` of held-out needed tool uses the default must serve")
	return c
}

func (c *deriveChooseFlags) check(set map[string]bool, traces int) error {
	switch {
	case set["served-target"] && !c.enabled:
		return usagef("derive: --served-target needs --choose-default")
	case !(c.target > 0 && c.target <= 1):
		return usagef("derive: --served-target %v: want a share above 0, at most 1", c.target)
	case c.enabled && traces == 0:
		return usagef("derive: --choose-default needs --trace: the held-out sessions' turns are search's queries")
	}
	return nil
}

// apply chooses the default arm on derive's held-out sessions and makes it
// file's default; nil when --choose-default is not given.
func (c *deriveChooseFlags) apply(ctx context.Context, traces []string, cat *catalog.Catalog, policy *profiles.Policy, res *derive.Result, file *profiles.File, f *deriveFlags) (*evaluate.Choice, error) {
	if !c.enabled {
		return nil, nil
	}
	var all []evaluate.Session
	for _, path := range traces {
		ss, err := evaluate.LoadTrace(path)
		if err != nil {
			return nil, err
		}
		all = append(all, ss...)
	}
	held, err := evaluate.HeldOut(all, res.HoldoutSessions())
	if err != nil {
		return nil, fmt.Errorf("derive --choose-default: %w", err)
	}
	choice, err := evaluate.ChooseDefault(ctx, evaluate.ChooseConfig{Target: c.target,
		Config: evaluate.Config{Catalog: cat, Profiles: &profiles.Set{File: file, Policy: policy}, Sessions: held, Cache: *f.cache}})
	if err != nil {
		return nil, exitError{1, fmt.Errorf("derive --choose-default: %w; nothing written: lower --served-target or derive without --choose-default", err)}
	}
	if err := choice.Apply(file); err != nil {
		return nil, fmt.Errorf("derive --choose-default: %w", err)
	}
	if file.Provenance != nil {
		file.Provenance.Parameters = append(file.Provenance.Parameters, fmt.Sprintf("choose.served_target=%g", c.target), "choose.arm="+choice.Chosen.Name)
		slices.Sort(file.Provenance.Parameters)
	}
	return choice, nil
}
