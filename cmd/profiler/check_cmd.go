package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/policy"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// Verdicts of profiler check, one per session. A session is refused at its
// first refused call; the verdict names the reason of that call, and the
// detail lists every refused tool.
const (
	verdictCovered        = "covered"
	verdictExcluded       = "excluded"        // a tool the upstreams offer is outside the session's profile
	verdictUnknownTool    = "unknown-tool"    // a tool no upstream offers
	verdictUnknownProfile = "unknown-profile" // the session names a profile the file lacks
)

// runCheck answers, without a server, which sessions of a trace a profiles
// file would have refused, and why. It exits 0 and reports; --strict exits 1
// when any session would be refused (for CI before deploying new profiles).
func runCheck(_ context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newCommandFlags("check", "--profiles FILE --trace FILE.jsonl [flags]",
		"Says, without a server, which sessions of a trace the profiles file would refuse and why\n"+
			"(excluded, unknown-tool, unknown-profile). Exits 1 with --strict when any would be.", stderr)
	profilesPath := fs.String("profiles", "", "generated profiles `FILE` (its sibling profiles.toml is applied too) (required)")
	tracePath := fs.String("trace", "", "session trace `FILE.jsonl`, one session per line (required)")
	catalogPath := fs.String("catalog", "", "tools/list catalog `FILE`: what the upstreams offer; without it, the tools named in the profiles file")
	profile := fs.String("profile", "", "check every session against profile `NAME` instead of the one it names (or the default)")
	refusedOnly := fs.Bool("refused-only", false, "list only sessions that would be refused")
	strict := fs.Bool("strict", false, "exit 1 when any session would be refused")
	skipBad := fs.Bool("skip-bad", false, "skip malformed trace lines (reported on stderr) instead of failing")
	if help, err := parseCommandFlags("check", fs, args); help || err != nil {
		return err
	}
	switch {
	case fs.NArg() > 0:
		return usagef("check: unexpected argument %q", fs.Arg(0))
	case *profilesPath == "":
		return usagef("check: --profiles FILE is required")
	case *tracePath == "":
		return usagef("check: --trace FILE.jsonl is required")
	}

	set, err := profiles.Load(*profilesPath)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	var tools []*mcp.Tool
	if *catalogPath != "" {
		c, err := catalog.Load(*catalogPath)
		if err != nil {
			return fmt.Errorf("check: %w", err)
		}
		tools = c.Tools
	} else {
		tools = namedTools(set)
		fmt.Fprintf(stderr, "note: no --catalog: the offered tools are taken to be the %d named in %s; annotation-based destructive and read-only rules are not applied\n", len(tools), *profilesPath)
	}
	res, err := set.Resolve(tools)
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	for _, w := range res.Warnings {
		fmt.Fprintln(stderr, "warning:", w)
	}
	if *profile != "" {
		if _, ok := res.Profiles[*profile]; !ok {
			return usagef("check: --profile %q: no such profile; valid profiles: %s", *profile, strings.Join(res.Names(), ", "))
		}
	}

	f, err := os.Open(*tracePath)
	if err != nil {
		return fmt.Errorf("check: open trace: %w", err)
	}
	sessions, bad, err := telemetry.DecodeTrace(f, *tracePath, true)
	f.Close()
	if err != nil {
		return fmt.Errorf("check: %w", err)
	}
	if err := telemetry.DecodedTraceReport(sessions, bad).Write(stderr, "check", *skipBad, "nothing checked", "check the rest"); err != nil {
		return err
	}

	snap := &policy.Snapshot{Resolved: res, Tools: make(map[string]*mcp.Tool, len(tools))}
	for _, t := range tools {
		snap.Tools[t.Name] = t
	}
	verdicts := make([]verdict, len(sessions))
	for i, s := range sessions {
		name := s.Profile
		if *profile != "" {
			name = *profile
		} else if name == "" {
			name = res.Default
		}
		verdicts[i] = checkSession(snap, s, name)
	}
	if err := writeCheckTable(stdout, verdicts, *refusedOnly); err != nil {
		return fmt.Errorf("check: %w", err)
	}
	refused := writeCheckSummary(stdout, verdicts, *profilesPath, *tracePath)
	if *strict && refused > 0 {
		return exitError{code: 1, err: fmt.Errorf("check: %d of %d sessions would be refused (--strict)", refused, len(verdicts))}
	}
	return nil
}

// namedTools stands in for a catalog: every tool the profiles file or its
// policy names, without annotations.
func namedTools(set *profiles.Set) []*mcp.Tool {
	seen := map[string]bool{}
	add := func(names []string) {
		for _, n := range names {
			seen[n] = true
		}
	}
	for _, p := range set.File.Profiles {
		add(p.Tools)
	}
	for _, g := range set.File.Groups {
		add(g.Tools)
	}
	if set.Policy != nil {
		for _, p := range set.Policy.Profiles {
			add(p.Pin)
		}
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	slices.Sort(names)
	tools := make([]*mcp.Tool, len(names))
	for i, n := range names {
		tools[i] = &mcp.Tool{Name: n}
	}
	return tools
}

// verdict is what the profiles file would have done to one session.
type verdict struct {
	session, profile string
	calls            int
	status           string
	excluded         []string            // offered tools outside the profile, in call order
	includedIn       map[string][]string // excluded tool -> profiles holding it
	unknown          []string            // tools no upstream offers, in call order
	valid            []string            // for an unknown profile: the profiles that exist
}

// checkSession replays s's calls through the gateway's policy (package
// policy) as a session of profile, switching groups on as its enable_tools
// calls did.
func checkSession(snap *policy.Snapshot, s telemetry.TraceSession, profile string) verdict {
	res := snap.Resolved
	v := verdict{session: s.Session, profile: profile, calls: len(s.Calls), status: verdictCovered, includedIn: map[string][]string{}}
	if _, ok := res.Profiles[profile]; !ok {
		v.status = verdictUnknownProfile
		v.valid = res.Names()
		return v
	}
	// Tools switched on by enable_tools, which the gateway serves itself
	// in a profile offering groups (unless an upstream offers a tool of
	// that name).
	st := &policy.State{Profile: profile}
	groupsOffered := len(snap.OfferedGroups(st)) > 0
	for _, c := range s.Calls {
		if groupsOffered && c.Tool == profiles.EnableToolsName {
			for _, g := range switchedGroups(res, profile, c.Arguments) {
				tools, _ := res.GroupTools(profile, g)
				for _, t := range tools {
					if !slices.Contains(st.Switched, t) {
						st.Switched = append(st.Switched, t)
					}
				}
			}
			continue
		}
		switch policy.Decide(snap, st, c.Tool).Refusal {
		case policy.Allowed:
		case policy.UnknownTool:
			if !slices.Contains(v.unknown, c.Tool) {
				v.unknown = append(v.unknown, c.Tool)
			}
			if v.status == verdictCovered {
				v.status = verdictUnknownTool
			}
		default:
			if !slices.Contains(v.excluded, c.Tool) {
				v.excluded = append(v.excluded, c.Tool)
				v.includedIn[c.Tool] = res.ProfilesWith(c.Tool)
			}
			if v.status == verdictCovered {
				v.status = verdictExcluded
			}
		}
	}
	return v
}

// switchedGroups returns the groups an enable_tools call with arguments
// switched on: the group it names, or, when the trace does not say (exported
// telemetry never stores arguments), every group the profile offers, so that
// a session is refused only for what no switch could have served.
func switchedGroups(res *profiles.Resolved, profile string, arguments json.RawMessage) []string {
	offered := res.Profiles[profile].Groups
	var args struct {
		Group *string `json:"group"`
	}
	if len(arguments) == 0 || json.Unmarshal(arguments, &args) != nil || args.Group == nil {
		return offered
	}
	if slices.Contains(offered, *args.Group) {
		return []string{*args.Group}
	}
	return nil // the gateway refuses a group the profile does not offer
}

func (v verdict) detail() string {
	if v.status == verdictUnknownProfile {
		return fmt.Sprintf("no profile %q; valid profiles: %s", v.profile, strings.Join(v.valid, ", "))
	}
	var parts []string
	if len(v.excluded) > 0 {
		var ex []string
		for _, t := range v.excluded {
			ex = append(ex, fmt.Sprintf("%s (in %s)", t, strings.Join(v.includedIn[t], ", ")))
		}
		parts = append(parts, "excluded: "+strings.Join(ex, "; "))
	}
	if len(v.unknown) > 0 {
		parts = append(parts, "unknown: "+strings.Join(v.unknown, ", "))
	}
	return strings.Join(parts, " | ")
}

func writeCheckTable(w io.Writer, vs []verdict, refusedOnly bool) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "SESSION\tPROFILE\tCALLS\tVERDICT\tDETAIL")
	for _, v := range vs {
		if refusedOnly && v.status == verdictCovered {
			continue
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%s\t%s\n", v.session, v.profile, v.calls, v.status, v.detail())
	}
	return tw.Flush()
}

// writeCheckSummary prints the totals and returns how many sessions would
// be refused.
func writeCheckSummary(w io.Writer, vs []verdict, profilesPath, tracePath string) int {
	count := map[string]int{}
	type tally struct{ covered, total int }
	per := map[string]*tally{}
	var order []string
	for _, v := range vs {
		count[v.status]++
		t, ok := per[v.profile]
		if !ok {
			t = &tally{}
			per[v.profile] = t
			order = append(order, v.profile)
		}
		t.total++
		if v.status == verdictCovered {
			t.covered++
		}
	}
	refused := len(vs) - count[verdictCovered]
	share := 0.0
	if len(vs) > 0 {
		share = 100 * float64(count[verdictCovered]) / float64(len(vs))
	}
	fmt.Fprintf(w, "\n%d sessions of %s against %s: %d covered (%.1f%%), %d refused: %d tool excluded from profile, %d unknown tool, %d unknown profile\n",
		len(vs), tracePath, profilesPath, count[verdictCovered], share, refused, count[verdictExcluded], count[verdictUnknownTool], count[verdictUnknownProfile])
	slices.Sort(order)
	parts := make([]string, len(order))
	for i, p := range order {
		parts[i] = fmt.Sprintf("%s %d/%d", p, per[p].covered, per[p].total)
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "covered per profile: %s\n", strings.Join(parts, ", "))
	}
	return refused
}
