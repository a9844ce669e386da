package derive

import (
	"fmt"
	"slices"
	"strings"

	"github.com/toolprof/toolprof/internal/mdtext"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
)

// Markdown describes, for a pull request, what a newly derived file changes
// against the current one (nil when there is none): per profile the tools
// added and removed and the token and coverage deltas, with the top-k
// baseline beside each derived profile.
func Markdown(name string, cur, next *profiles.File, res *Result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "### toolprof: %s\n\n", name)
	c := res.Counts
	fmt.Fprintf(&b, "Learned from %d sessions (%d full or unrecorded profile, %d exploration); %d restricted sessions skipped; %d with no tool call (covered by every profile); %d calling a tool the catalog lacks. Derive part %d, held-out part %d.\n\n",
		c.Used(), c.Full, c.Exploration, c.Restricted, c.ZeroCalls, c.UnknownToolSessions, c.Derive, c.Holdout)
	if cur == nil {
		b.WriteString("No current file: everything below is new.\n\n")
	} else if cur.Default != next.Default {
		fmt.Fprintf(&b, "Default profile: %s → %s.\n\n", mdtext.Code(cur.Default), mdtext.Code(next.Default))
	}
	old := map[string]*profiles.Profile{}
	if cur != nil {
		for i := range cur.Profiles {
			old[cur.Profiles[i].Name] = &cur.Profiles[i]
		}
	}
	b.WriteString("| profile | tools | tokens o200k | Δ tokens | held-out coverage | Δ held-out coverage | top-k baseline: tools, tokens, held-out coverage |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---|\n")
	for _, p := range next.Profiles {
		o := old[p.Name]
		dTok, dCov := "new", "new"
		if o != nil {
			dTok = fmt.Sprintf("%+d", p.Measured.TokensO200k-measuredTokens(o))
			dCov = deltaShare(o.Measured, p.Measured)
		}
		base := "—"
		// By name: next may hold profiles the derived family lacks (the
		// grouped profile of derive --groups).
		if j := slices.IndexFunc(res.Profiles, func(r ProfileResult) bool { return r.Name == p.Name }); j >= 0 && res.Profiles[j].Baseline != nil {
			bl := res.Profiles[j].Baseline
			base = fmt.Sprintf("%d, %d, %s", len(bl.Tools), bl.Tokens, shareText(bl.Holdout))
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %s | %s |\n", mdtext.Code(p.Name), p.Measured.Tools, p.Measured.TokensO200k, dTok, holdoutText(p.Measured), dCov, base)
	}
	b.WriteString("\n")
	writeSessionCost(&b, res)
	for _, p := range next.Profiles {
		o := old[p.Name]
		if o == nil {
			continue
		}
		added, removed := diff(o.Tools, p.Tools)
		if len(added)+len(removed) == 0 {
			continue
		}
		fmt.Fprintf(&b, "- %s:", mdtext.Code(p.Name))
		if len(added) > 0 {
			fmt.Fprintf(&b, " added %s", codeList(added))
		}
		if len(removed) > 0 {
			if len(added) > 0 {
				b.WriteString(";")
			}
			fmt.Fprintf(&b, " removed %s", codeList(removed))
		}
		b.WriteString("\n")
	}
	if cur != nil {
		for _, p := range cur.Profiles {
			if !slices.ContainsFunc(next.Profiles, func(q profiles.Profile) bool { return q.Name == p.Name }) {
				fmt.Fprintf(&b, "- %s: profile removed\n", mdtext.Code(p.Name))
			}
		}
	}
	for _, w := range res.Warnings {
		fmt.Fprintf(&b, "\n> warning: %s\n", mdtext.Text(w))
	}
	return b.String()
}

func measuredTokens(p *profiles.Profile) int {
	if p.Measured == nil {
		return 0
	}
	return p.Measured.TokensO200k
}

func holdoutText(m *profiles.Measured) string {
	if m == nil || m.HoldoutCoverage == nil {
		return "not evaluable"
	}
	s := fmt.Sprintf("%.1f%%", 100**m.HoldoutCoverage)
	if len(m.HoldoutCI) == 2 {
		s += fmt.Sprintf(" [%.1f, %.1f]", 100*m.HoldoutCI[0], 100*m.HoldoutCI[1])
	}
	return s
}

func deltaShare(o, n *profiles.Measured) string {
	if o == nil || n == nil || o.HoldoutCoverage == nil || n.HoldoutCoverage == nil {
		return "not evaluable"
	}
	return fmt.Sprintf("%+.1f pts", 100*(*n.HoldoutCoverage-*o.HoldoutCoverage))
}

func shareText(s Score) string {
	v, ok := s.Share()
	if !ok {
		return "not evaluable"
	}
	return fmt.Sprintf("%.1f%%", 100*v)
}

func diff(old, next []string) (added, removed []string) {
	for _, t := range next {
		if !slices.Contains(old, t) {
			added = append(added, t)
		}
	}
	for _, t := range old {
		if !slices.Contains(next, t) {
			removed = append(removed, t)
		}
	}
	slices.Sort(added)
	slices.Sort(removed)
	return added, removed
}

func codeList(ts []string) string {
	q := make([]string, len(ts))
	for i, t := range ts {
		q[i] = mdtext.Code(t)
	}
	return strings.Join(q, ", ")
}

// CostAssumptions states what the cost per session is priced with.
func CostAssumptions(c price.CacheModel) string {
	return fmt.Sprintf("model measure, o200k_base tokens of the tool list entries; cache write %gx on the first turn and from any turn whose list changed, read %gx on the other turns; %d tokens of conversation added per turn; turns from the trace's turns, else one per call plus one; a session calling a tool outside the profile is served full from that turn", c.Write, c.Read, c.Growth)
}

// writeSessionCost adds the cost per held-out session with prompt caching
// of each derived profile and full, and the assumptions it rests on.
func writeSessionCost(b *strings.Builder, res *Result) {
	if len(res.Profiles) == 0 || res.Profiles[0].HoldoutCost.Sessions == 0 {
		return
	}
	fmt.Fprintf(b, "Cost per held-out session with prompt caching (%s):\n\n", CostAssumptions(res.Cache))
	b.WriteString("| profile | mean | p50 | p95 | share of full |\n|---|---:|---:|---:|---:|\n")
	for _, p := range res.Profiles {
		c := p.HoldoutCost
		fmt.Fprintf(b, "| %s | %.0f | %.0f | %.0f | %.1f%% |\n", mdtext.Code(p.Name), c.Mean, c.P50, c.P95, 100*c.ShareOfFull)
	}
	b.WriteString("\n")
}
