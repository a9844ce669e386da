package groups

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"

	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/internal/ownfile"
	"github.com/toolprof/toolprof/profiles"
)

// WriteTable prints the result for a person: the chosen layout, then the
// figures on both parts, then the static candidates.
func (r *Result) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "base from %s (resolution %g): %d tools, %d tokens; enable_tools %d tokens; %d groups\n",
		r.BaseFrom, r.Resolution, len(r.Base), r.BaseTokens, r.EnableTokens, len(r.Groups))
	if len(r.Groups) > 0 {
		fmt.Fprintln(tw, "group\ttools\ttokens\tswitch exchange\tdescription")
		for i, g := range r.Groups {
			f := r.GroupFigures[i]
			fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\n", g.Name, f.Tools, f.Tokens, f.ExchangeTokens, g.Description)
		}
	}
	fmt.Fprintln(tw)
	fmt.Fprintln(tw, "part\tsessions\ttokens/session\tof full\tx floor\twire tokens/session\tswitches mean\tp95\tno switch\tserved full\tcached cost/session\tof full (cached)")
	for _, row := range []struct {
		name string
		f    Figures
	}{{"derive", r.Derive}, {"held-out", r.Holdout}} {
		f := row.f
		if f.Sessions == 0 {
			fmt.Fprintf(tw, "%s\t0\tnot evaluable\t\t\t\t\t\t\t\t\t\n", row.name)
			continue
		}
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f%%\t%.2f\t%.1f\t%.2f\t%d\t%.1f%%\t%d\t%.1f\t%.1f%%\n", row.name, f.Sessions, f.MeanTokens, 100*f.ShareOfFull,
			f.OverFloor, f.MeanTokensWire, f.MeanSwitches, f.P95Switches, 100*f.NoSwitchShare, f.Fallback, f.SessionCost, 100*f.SessionShareOfFull)
	}
	if len(r.Static) > 0 {
		fmt.Fprintln(tw)
		fmt.Fprintln(tw, "static profile\ttools\ttokens\tof full\theld-out coverage")
		for _, s := range r.Static {
			fmt.Fprintf(tw, "%s\t%d\t%d\t%.1f%%\t%.1f%%\n", s.Name, s.Tools, s.Tokens, 100*s.ShareOfFull, 100*s.HoldoutCoverage)
		}
	}
	return tw.Flush()
}

// WriteJSON writes the result as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// DefaultProfile is the name of the grouped profile Apply adds.
const DefaultProfile = "lean"

// Apply writes the groups into f: File.Groups (sorted by name), and the
// chosen base as the profile offering them. When a profile of f holds
// exactly the base's tools that profile offers the groups; otherwise a
// profile called name is added (an existing profile of that name with other
// tools is an error). The file's default is left as it is. Without groups
// (full won) f is left unchanged.
func (r *Result) Apply(f *profiles.File, name string) error {
	if len(r.Groups) == 0 {
		return nil
	}
	names := make([]string, len(r.Groups))
	for i, g := range r.Groups {
		names[i] = g.Name
	}
	for _, g := range f.Groups {
		if slices.Contains(names, g.Name) {
			return fmt.Errorf("groups: the file already defines group %q", g.Name)
		}
	}
	base := slices.Sorted(slices.Values(r.Base))
	target := -1
	for i, p := range f.Profiles {
		if p.Name != profiles.FullProfile && slices.Equal(slices.Sorted(slices.Values(p.Tools)), base) {
			target = i
			break
		}
	}
	if target < 0 {
		for _, p := range f.Profiles {
			if p.Name == name {
				return fmt.Errorf("groups: profile %q exists with other tools than the chosen base; name the grouped profile otherwise", name)
			}
		}
		p := profiles.Profile{Name: name, Tools: base}
		m := &profiles.Measured{Sessions: r.Derive.Sessions, HoldoutSessions: r.Holdout.Sessions, Tools: len(base), Bytes: r.BaseBytes, TokensO200k: r.BaseTokens}
		// A grouped profile's coverage is the share it serves without a
		// switch: not the fallback sessions, which need no switch but a
		// tool it cannot reach; its figures are its base's, without
		// enable_tools.
		if d := r.Derive; d.Sessions > 0 {
			v := round4(float64(d.NoSwitch-d.Fallback) / float64(d.Sessions))
			m.Coverage = &v
		} else {
			m.NotEvaluable = append(m.NotEvaluable, "coverage")
		}
		if h := r.Holdout; h.Sessions > 0 {
			v := round4(float64(h.NoSwitch-h.Fallback) / float64(h.Sessions))
			m.HoldoutCoverage = &v
			lo, hi := derive.Wilson(h.NoSwitch-h.Fallback, h.Sessions)
			m.HoldoutCI = []float64{round4(lo), round4(hi)}
		} else {
			m.NotEvaluable = append(m.NotEvaluable, "holdout_ci", "holdout_coverage")
		}
		p.Measured = m
		f.Profiles = append(f.Profiles, p)
		target = len(f.Profiles) - 1
	}
	f.Profiles[target].Groups = names
	f.Groups = append(f.Groups, r.Groups...)
	slices.SortFunc(f.Groups, func(a, b profiles.Group) int {
		if a.Name < b.Name {
			return -1
		}
		if a.Name > b.Name {
			return 1
		}
		return 0
	})
	return nil
}

func round4(v float64) float64 {
	return float64(int64(v*1e4+0.5)) / 1e4
}

// CheckReplaceReport reports whether derive --groups-report may write
// path: nothing is there, or a groups report is (a JSON object with
// exactly the keys WriteJSON writes). Anything else would be lost.
func CheckReplaceReport(path string) error {
	return ownfile.Check(path, ownfile.JSONLike(Result{}), ownfile.Wording{
		Unreadable: func(err error) error { return fmt.Errorf("derive: --groups-report %s: %w", path, err) },
		Foreign: func(why error) error {
			return fmt.Errorf("derive: --groups-report %s exists and is no groups report derive wrote (%v), which writing would replace: remove it or name another file", path, why)
		},
	})
}
