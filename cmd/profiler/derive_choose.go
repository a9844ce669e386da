package main

import (
	"flag"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/generate"
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

// config is the default-arm step's settings for generate.Run: nil without
// --choose-default.
func (c *deriveChooseFlags) config() *generate.Choose {
	if !c.enabled {
		return nil
	}
	return &generate.Choose{ServedTarget: c.target}
}
