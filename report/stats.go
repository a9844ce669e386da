package report

import (
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/mdtext"
	"github.com/toolprof/toolprof/internal/visible"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// The text forms of profiler stats: telemetry.Stats as a terminal table
// or as markdown, and the effect kinds of the catalogs' tools that its
// per-effect breakdown counts by.

// Stats summarises snap as profiler stats prints it: with catalogs, the
// calls per effect kind of their tools too (ToolEffects).
func Stats(snap *telemetry.Snapshot, catalogs []string, profilesPath string) (telemetry.Stats, error) {
	st := telemetry.Summarize(snap)
	if len(catalogs) > 0 {
		effects, err := ToolEffects(catalogs, profilesPath)
		if err != nil {
			return telemetry.Stats{}, err
		}
		st.Effects = telemetry.SummarizeEffects(snap, EffectKinds(), effects)
	}
	return st, nil
}

// ToolEffects classifies the tools of the catalogs (the first catalog
// holding a name wins) as the server would serve them: by annotations,
// corrected by profilesPath's profiles.toml when given.
func ToolEffects(catalogs []string, profilesPath string) ([]telemetry.ToolEffect, error) {
	var tools []*mcp.Tool
	seen := map[string]bool{}
	for _, path := range catalogs {
		c, err := catalog.Load(path)
		if err != nil {
			return nil, err
		}
		for _, t := range c.Tools {
			if t != nil && t.Name != "" && !seen[t.Name] {
				seen[t.Name] = true
				tools = append(tools, t)
			}
		}
	}
	r := profiles.Full(tools)
	if profilesPath != "" {
		set, err := profiles.Load(profilesPath)
		if err != nil {
			return nil, err
		}
		if r, err = set.Resolve(tools); err != nil {
			return nil, fmt.Errorf("profiles %s: %w", profilesPath, err)
		}
	}
	out := make([]telemetry.ToolEffect, 0, len(r.Tools))
	for _, name := range r.Tools {
		e := r.Effect(name)
		out = append(out, telemetry.ToolEffect{Name: name, Kind: string(e.Kind), External: e.External})
	}
	return out, nil
}

// EffectKinds are the effect kinds in the order stats prints them.
func EffectKinds() []string {
	return []string{string(profiles.KindRead), string(profiles.KindEvaluate), string(profiles.KindMutate), string(profiles.KindDestructive)}
}

// statsSummary is the totals table's rows.
func statsSummary(st telemetry.Stats) [][2]string {
	window := "(no sessions)"
	if st.Since != nil {
		window = st.Since.UTC().Format(time.RFC3339) + " .. " + st.Until.UTC().Format(time.RFC3339)
	}
	rows := [][2]string{
		{"window", window},
		{"sessions", fmt.Sprint(st.Sessions)},
		{"calls", fmt.Sprint(st.Calls)},
		{"dropped events", fmt.Sprint(st.Dropped)},
		{"segments", fmt.Sprint(st.Segments)},
	}
	if len(st.Skipped) > 0 {
		rows = append(rows, [2]string{"segments left out (being written)", fmt.Sprint(len(st.Skipped))})
	}
	return rows
}

// statsSection is one breakdown, titled.
type statsSection struct {
	title string
	rows  []telemetry.StatRow
}

// statsSections are the breakdowns in the order printed.
func statsSections(st telemetry.Stats) []statsSection {
	return []statsSection{{"tool", st.Tools}, {"client", st.Clients}, {"outcome", st.Outcomes}, {"attribution", st.Attribution}}
}

// WriteStatsTable writes st as profiler stats prints it on a terminal.
// Names are the callers' own strings: their control and format
// characters are shown as escapes (visible.String), so that none reaches
// the terminal as an escape sequence or a carriage return.
func WriteStatsTable(w io.Writer, st telemetry.Stats) error {
	render := func(header []string, rows [][]string) error {
		t := tablewriter.NewTable(w, tablewriter.WithHeaderAutoFormat(tw.Off),
			tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: []tw.Align{tw.AlignLeft}}))
		t.Header(header)
		if err := t.Bulk(rows); err != nil {
			return err
		}
		return t.Render()
	}
	var summary [][]string
	for _, r := range statsSummary(st) {
		summary = append(summary, []string{r[0], r[1]})
	}
	if err := render([]string{"telemetry", ""}, summary); err != nil {
		return err
	}
	for _, sec := range statsSections(st) {
		rows := make([][]string, 0, len(sec.rows))
		for _, r := range sec.rows {
			rows = append(rows, []string{visible.String(r.Name), fmt.Sprint(r.Calls), fmt.Sprint(r.Sessions)})
		}
		if err := render([]string{sec.title, "calls", "sessions"}, rows); err != nil {
			return err
		}
	}
	if len(st.Effects) > 0 {
		return render(effectRows(st.Effects))
	}
	return nil
}

// WriteStatsMarkdown writes st as GitHub markdown tables, for a pull
// request's body. Tool and client names are the callers' own strings
// (a tool no upstream offers, a handshake's clientInfo): each is written
// as code, so none renders as a link, an image or HTML, or leaves its cell.
func WriteStatsMarkdown(w io.Writer, st telemetry.Stats) error {
	var b strings.Builder
	b.WriteString("| telemetry | |\n| --- | ---: |\n")
	for _, r := range statsSummary(st) {
		fmt.Fprintf(&b, "| %s | %s |\n", r[0], r[1])
	}
	for _, sec := range statsSections(st) {
		fmt.Fprintf(&b, "\n| %s | calls | sessions |\n| --- | ---: | ---: |\n", sec.title)
		for _, r := range sec.rows {
			fmt.Fprintf(&b, "| %s | %d | %d |\n", mdtext.Code(r.Name), r.Calls, r.Sessions)
		}
	}
	if len(st.Effects) > 0 {
		writeEffectsMarkdown(&b, st.Effects)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// effectRows are the breakdown's header and cells, for table and markdown.
func effectRows(rows []telemetry.EffectStat) ([]string, [][]string) {
	header := []string{"effect", "tools", "external", "calls", "sessions"}
	cells := make([][]string, 0, len(rows))
	for _, r := range rows {
		tools, external := fmt.Sprint(r.Tools), fmt.Sprint(r.External)
		if r.Kind == telemetry.NotInCatalog {
			tools, external = "-", "-"
		}
		cells = append(cells, []string{r.Kind, tools, external, fmt.Sprint(r.Calls), fmt.Sprint(r.Sessions)})
	}
	return header, cells
}

// writeEffectsMarkdown appends the breakdown as a markdown table.
func writeEffectsMarkdown(b *strings.Builder, rows []telemetry.EffectStat) {
	header, cells := effectRows(rows)
	fmt.Fprintf(b, "\n| %s |\n| --- |%s\n", strings.Join(header, " | "), strings.Repeat(" ---: |", len(header)-1))
	for _, c := range cells { // kinds and counts: no caller's strings
		fmt.Fprintf(b, "| %s |\n", strings.Join(c, " | "))
	}
}
