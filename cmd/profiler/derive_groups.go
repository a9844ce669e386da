package main

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"slices"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/groups"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
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
	fl.StringVar(&g.report, "groups-report", "", "write the groups report (held-out figures) as JSON to `FILE`")
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
	if !(g.maxSwitches > 0) || g.maxSwitches > 1e6 {
		return usagef("derive: --groups-max-switches %v: want a mean number of switches > 0, e.g. 1.5", g.maxSwitches)
	}
	if g.profile == profiles.FullProfile {
		return usagef("derive: --groups-profile full: full holds every tool and offers no groups; name another profile")
	}
	probe := &profiles.File{Version: profiles.Version, Default: g.profile, Profiles: []profiles.Profile{{Name: g.profile}}}
	if err := profiles.Encode(io.Discard, probe); err != nil {
		return usagef("derive: --groups-profile %q: %v", g.profile, err)
	}
	return nil
}

// deriveGroupsInput is what the derive command hands the --groups step.
type deriveGroupsInput struct {
	Sessions []telemetry.Usage // the sessions derive read, in the same order (switches included)
	Catalog  *catalog.Catalog
	Policy   *profiles.Policy
	Result   *derive.Result
	Holdout  float64
	Paths    map[string]price.Session // calls in order with their turns, by session id
	Cache    price.CacheModel
	Out      string // the generated file; its current content defines the groups sessions switched on
	Check    bool   // --check: write nothing, not even the report
}

// apply is the --groups step of profiler derive. Called after the derived
// family's report is printed and before the --summary (which describes the
// file written, grouped profile included), it
// chooses the base and groups, writes them into file (File.Groups and the
// grouped profile) with their parameters in the provenance, re-encodes the
// file into encoded (when not nil) for --check and the write, prints the
// held-out report to stdout and writes the JSON report when asked. Without
// --groups it does nothing.
func (g *deriveGroupsFlags) apply(ctx context.Context, in deriveGroupsInput, file *profiles.File, encoded *bytes.Buffer, stdout io.Writer) error {
	if g == nil || !g.enabled {
		return nil
	}
	prior, _, err := loadCurrent(in.Out)
	if err != nil {
		return err
	}
	counter, err := price.NewCounter()
	if err != nil {
		return err
	}
	var bases []groups.Base
	for _, p := range in.Result.Profiles {
		if p.Name != profiles.FullProfile {
			bases = append(bases, groups.Base{Name: p.Name, Tools: p.Tools})
		}
	}
	allow := false
	if in.Policy != nil {
		for _, pp := range in.Policy.Profiles {
			if pp.Name == g.profile {
				allow = pp.AllowDestructive
			}
		}
	}
	// Price tools as derive does (as the gateway lists them), so that the
	// full catalog and the bases cost the same in both reports.
	costs, err := servedToolCosts(ctx, in.Catalog, in.Policy, counter)
	if err != nil {
		return err
	}
	res, err := groups.Choose(in.Sessions, groups.Config{Catalog: in.Catalog.Tools, Counter: counter, Costs: costs, Policy: in.Policy, AllowDestructive: allow,
		Holdout: in.Holdout, Bases: bases, MaxSwitches: g.maxSwitches, Prior: prior, Paths: in.Paths, Cache: in.Cache})
	if err != nil {
		return fmt.Errorf("derive --groups: %w", err)
	}
	if err := res.Apply(file, g.profile); err != nil {
		return fmt.Errorf("derive --groups: %w", err)
	}
	g.recordParameters(file, res)
	if encoded != nil {
		encoded.Reset()
		if err := profiles.Encode(encoded, file); err != nil {
			return fmt.Errorf("derive --groups: %w", err)
		}
	}
	fmt.Fprintln(stdout, "tool groups (expected tool-definition tokens per session, o200k_base):")
	if err := res.WriteTable(stdout); err != nil {
		return err
	}
	if g.report != "" && !in.Check {
		var b bytes.Buffer
		if err := res.WriteJSON(&b); err != nil {
			return err
		}
		if err := writeDerivedAtomic(g.report, b.Bytes()); err != nil {
			return err
		}
	}
	return nil
}

// recordParameters adds the groups' parameters to file's provenance.
func (g *deriveGroupsFlags) recordParameters(file *profiles.File, res *groups.Result) {
	if file.Provenance == nil {
		return
	}
	file.Provenance.Parameters = append(file.Provenance.Parameters,
		"groups.profile="+g.profile,
		fmt.Sprintf("groups.max_switches=%g", g.maxSwitches),
		"groups.base_from="+res.BaseFrom,
		fmt.Sprintf("groups.resolution=%g", res.Resolution),
		fmt.Sprintf("groups.switch_penalty=%d", res.Penalty),
		fmt.Sprintf("groups.count=%d", len(res.Groups)),
	)
	slices.Sort(file.Provenance.Parameters)
}
