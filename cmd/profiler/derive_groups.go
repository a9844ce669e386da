package main

import (
	"bytes"
	"flag"
	"io"

	"github.com/toolprof/toolprof/generate"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/internal/atomicfile"
	"github.com/toolprof/toolprof/profiles"
)

// deriveGroupsFlags are profiler derive's --groups settings: tool groups a
// session can switch on, chosen jointly with a base profile (see package
// groups).
type deriveGroupsFlags struct {
	enabled     bool
	profile     string
	maxSwitches float64
	report      string
}

// addDeriveGroupsFlags registers the --groups flags on derive's flag set.
func addDeriveGroupsFlags(fl *flag.FlagSet) *deriveGroupsFlags {
	g := &deriveGroupsFlags{}
	fl.BoolVar(&g.enabled, "groups", false, "also derive tool groups from co-usage and a grouped profile offering them (enable_tools)")
	fl.StringVar(&g.profile, "groups-profile", groups.DefaultProfile, "`NAME` of the grouped profile (a derived profile with exactly its base tools offers the groups instead)")
	fl.Float64Var(&g.maxSwitches, "groups-max-switches", groups.DefaultMaxSwitches, "most switches per session on average (95% upper bound on the derive part) the grouped profile may need")
	fl.StringVar(&g.report, "groups-report", "", "write the groups report (held-out figures) as JSON to `FILE` (replaces only a groups report)")
	return g
}

// check validates the --groups flags after parsing; set says which flags
// were given.
func (g *deriveGroupsFlags) check(set map[string]bool) error {
	for _, name := range []string{"groups-profile", "groups-max-switches", "groups-report"} {
		if set[name] && !g.enabled {
			return usagef("derive: --%s needs --groups", name)
		}
	}
	if g.report != "" {
		if err := groups.CheckReplaceReport(g.report); err != nil {
			return usageError{Err: err}
		}
	}
	if !(g.maxSwitches > 0) || g.maxSwitches > 1e6 {
		return usagef("derive: --groups-max-switches %v: want a mean number of switches > 0, e.g. 1.5", g.maxSwitches)
	}
	if g.profile == profiles.FullProfile {
		return usagef("derive: --groups-profile full: full holds every tool and offers no groups; name another profile")
	}
	if err := profiles.CheckProfileName(g.profile); err != nil {
		return usagef("derive: --groups-profile %q: %v", g.profile, err)
	}
	return nil
}

// config is the groups step's settings for generate.Run: nil without
// --groups.
func (g *deriveGroupsFlags) config() *generate.Groups {
	if g == nil || !g.enabled {
		return nil
	}
	return &generate.Groups{Profile: g.profile, MaxSwitches: g.maxSwitches}
}

// writeReport prints the groups step's held-out table to stdout when show, and
// writes the JSON report when asked and not checking. res is nil without
// --groups.
func (g *deriveGroupsFlags) writeReport(res *groups.Result, show, check bool, stdout io.Writer) error {
	if res == nil {
		return nil
	}
	if show {
		if err := generate.WriteGroupsTable(stdout, res); err != nil {
			return err
		}
	}
	if g.report == "" || check {
		return nil
	}
	var b bytes.Buffer
	if err := res.WriteJSON(&b); err != nil {
		return err
	}
	return atomicfile.Write(g.report, b.Bytes(), 0o644)
}
