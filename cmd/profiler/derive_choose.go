package main

import (
	"flag"
	"fmt"

	"github.com/toolprof/toolprof/evaluate"
	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/toolsearch"
)

// deriveChooseFlags are profiler derive's --choose-default settings.
type deriveChooseFlags struct {
	enabled bool
	target  float64
	limit   int
}

func addDeriveChooseFlags(fl *flag.FlagSet) *deriveChooseFlags {
	c := &deriveChooseFlags{}
	fl.BoolVar(&c.enabled, "choose-default", false, "make the default the arm a client of protocol 2026-07-28 is served (full, a profile, or search over a profile; groups are offered to earlier clients only) with the least held-out cost per session with caching that serves --served-target of needed tool uses (profiler evaluate's arms; needs --trace)")
	fl.Float64Var(&c.target, "served-target", evaluate.DefaultServedTarget, "--choose-default: the `share` of held-out needed tool uses the default must serve")
	fl.IntVar(&c.limit, "search-limit", toolsearch.DefaultLimit, fmt.Sprintf("--choose-default: find_tools' `limit` the search arms are measured at (1 to %d); the model passes it with each find_tools call, and without one the gateway returns %d", toolsearch.MaxLimit, toolsearch.DefaultLimit))
	return c
}

func (c *deriveChooseFlags) check(set map[string]bool, traces int) error {
	switch {
	case set["served-target"] && !c.enabled:
		return usagef("derive: --served-target needs --choose-default")
	case set["search-limit"] && !c.enabled:
		return usagef("derive: --search-limit needs --choose-default")
	case !(c.target > 0 && c.target <= 1):
		return usagef("derive: --served-target %v: want a share above 0, at most 1", c.target)
	case c.limit < 1 || c.limit > toolsearch.MaxLimit:
		return usagef("derive: --search-limit %d: want 1 to %d, find_tools' limit", c.limit, toolsearch.MaxLimit)
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
	return &generate.Choose{ServedTarget: c.target, SearchLimit: c.limit}
}
