package bench

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/olekukonko/tablewriter"
	"github.com/olekukonko/tablewriter/tw"
	"github.com/toolprof/toolprof/price"
)

// Report is the per-profile cost report. Its JSON encoding is the shape
// other tools read; fields tagged "-" only shape the table and markdown.
type Report struct {
	Tokenizers []string      `json:"tokenizers"`
	Profiles   []ProfileCost `json:"profiles"`
	ToolCosts  []ToolCost    `json:"tool_costs"`

	// Missing lists, per profile, the tools it names that the catalog lacks.
	Missing map[string][]string `json:"-"`
	// Incomplete lists the profiles whose listing left a cursor unfollowed.
	Incomplete []string `json:"-"`
}

// ProfileCost is what one served profile costs a client.
type ProfileCost struct {
	Name              string `json:"name"`
	Tools             int    `json:"tools"`
	InstructionsChars int    `json:"instructions_chars"`
	// Bytes and Tokens are those of the whole initialize + tools/list exchange.
	Bytes  int            `json:"bytes"`
	Tokens map[string]int `json:"tokens"`
	// ShareOfFull is Tokens[o200k_base] over the same figure for the full
	// catalog served through the same server code.
	ShareOfFull     float64  `json:"share_of_full"`
	Coverage        *float64 `json:"coverage"`
	HoldoutCoverage *float64 `json:"holdout_coverage"`
	// Effects counts the profile's tools per effect kind, when known.
	Effects map[string]int `json:"-"`
	// ToolNames are the tools served, for sums of entry costs.
	ToolNames []string `json:"-"`
}

// ProfileInput is one measured profile for BuildReport.
type ProfileInput struct {
	Name     string
	Exchange *Exchange
	// Coverage and HoldoutCoverage come from the profiles file's measured
	// figures; nil when the file has none.
	Coverage, HoldoutCoverage *float64
	// Missing names tools the profile lists that the catalog lacks.
	Missing []string
	// Effects counts the profile's tools per effect kind; nil when unknown.
	Effects map[string]int
}

// BuildReport assembles the report of the profiles, in the order given, with
// shares against full (the whole catalog served by the same server code) and
// the cost of every catalog tool.
func BuildReport(inputs []ProfileInput, full *Exchange, catalogTools []*mcp.Tool, c *Counter) (*Report, error) {
	if full == nil || full.Tokens[price.O200kBase] == 0 {
		return nil, errors.New("build report: no measured full-catalog exchange to compare against")
	}
	costs, err := ToolCosts(catalogTools, c)
	if err != nil {
		return nil, fmt.Errorf("build report: %w", err)
	}
	r := &Report{Tokenizers: price.TokenizerNames(), ToolCosts: costs, Missing: map[string][]string{}}
	for _, in := range inputs {
		ex := in.Exchange
		if ex == nil {
			return nil, fmt.Errorf("build report: profile %q has no measured exchange", in.Name)
		}
		names := make([]string, len(ex.Tools))
		for i, t := range ex.Tools {
			names[i] = t.Name
		}
		r.Profiles = append(r.Profiles, ProfileCost{
			ToolNames:         names,
			Name:              in.Name,
			Tools:             len(ex.Tools),
			InstructionsChars: utf8.RuneCountInString(ex.Instructions),
			Bytes:             ex.Bytes,
			Tokens:            ex.Tokens,
			ShareOfFull:       round4(float64(ex.Tokens[price.O200kBase]) / float64(full.Tokens[price.O200kBase])),
			Coverage:          in.Coverage,
			HoldoutCoverage:   in.HoldoutCoverage,
			Effects:           in.Effects,
		})
		if len(in.Missing) > 0 {
			r.Missing[in.Name] = in.Missing
		}
		if ex.NextCursor != "" {
			r.Incomplete = append(r.Incomplete, in.Name)
		}
	}
	return r, nil
}

func round4(x float64) float64 { return math.Round(x*1e4) / 1e4 }

// Profile returns the named profile's row, or nil.
func (r *Report) Profile(name string) *ProfileCost {
	for i := range r.Profiles {
		if r.Profiles[i].Name == name {
			return &r.Profiles[i]
		}
	}
	return nil
}

// WriteJSON writes the report in its JSON shape.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// DecodeReport reads a report written by WriteJSON.
func DecodeReport(rd io.Reader) (*Report, error) {
	var r Report
	if err := json.NewDecoder(rd).Decode(&r); err != nil {
		return nil, fmt.Errorf("decode report: %w", err)
	}
	if r.Profiles == nil {
		return nil, errors.New(`decode report: no "profiles" array (want the JSON of profiler bench --format json)`)
	}
	for i, p := range r.Profiles {
		if p.Name == "" {
			return nil, fmt.Errorf("decode report: profiles[%d]: missing name", i)
		}
	}
	return &r, nil
}

// Unit is what a budget counts.
type Unit string

// Budget units: o200k_base tokens of the exchange, or its bytes.
const (
	UnitTokens Unit = price.O200kBase
	UnitBytes  Unit = "bytes"
)

// Budget is a limit on one profile's exchange.
type Budget struct {
	Profile string
	Unit    Unit
	Limit   int
}

// OverBudget is a profile whose exchange costs more than its budget.
type OverBudget struct {
	Profile     string
	Unit        Unit
	Used, Limit int
}

func (o OverBudget) Error() string {
	return fmt.Sprintf("profile %q costs %d %s, %d over its budget of %d",
		o.Profile, o.Used, unitText(o.Unit), o.Used-o.Limit, o.Limit)
}

func unitText(u Unit) string {
	if u == UnitTokens {
		return "o200k_base tokens"
	}
	return string(u)
}

// used is what p's exchange costs in unit u.
func (p *ProfileCost) used(u Unit) int {
	if u == UnitBytes {
		return p.Bytes
	}
	return p.Tokens[price.O200kBase]
}

// CheckBudgets returns the budgets exceeded, in the order given. A budget
// naming a profile the report lacks, or an unknown unit, is an error.
func (r *Report) CheckBudgets(budgets []Budget) ([]OverBudget, error) {
	var over []OverBudget
	for _, b := range budgets {
		if b.Unit != UnitTokens && b.Unit != UnitBytes {
			return nil, fmt.Errorf("budget for %q: unit %q (want %s or %s)", b.Profile, b.Unit, UnitTokens, UnitBytes)
		}
		p := r.Profile(b.Profile)
		if p == nil {
			return nil, fmt.Errorf("budget for unknown profile %q (profiles: %s)", b.Profile, strings.Join(r.names(), ", "))
		}
		if used := p.used(b.Unit); used > b.Limit {
			over = append(over, OverBudget{Profile: b.Profile, Unit: b.Unit, Used: used, Limit: b.Limit})
		}
	}
	return over, nil
}

func (r *Report) names() []string {
	names := make([]string, len(r.Profiles))
	for i, p := range r.Profiles {
		names[i] = p.Name
	}
	return names
}

// RenderOptions adds optional columns to the table and markdown.
type RenderOptions struct {
	// Budgets adds budget and headroom columns per unit used.
	Budgets []Budget
	// Baseline adds before and delta columns.
	Baseline *Baseline
}

// cells returns the header and rows shared by the table and the markdown.
func (r *Report) cells(opts RenderOptions) ([]string, [][]string) {
	header := []string{"profile", "tools", "instr chars", "bytes", "o200k_base", "cl100k_base", "bytes/4 (estimate)", "share of full", "saved vs full", "coverage", "holdout coverage"}
	effects := r.effectKinds()
	for _, k := range effects {
		header = append(header, k)
	}
	// Budget columns, tokens first, for the units any budget uses.
	budget := map[Unit]map[string]int{}
	for _, b := range opts.Budgets {
		if budget[b.Unit] == nil {
			budget[b.Unit] = map[string]int{}
		}
		budget[b.Unit][b.Profile] = b.Limit
	}
	var units []Unit
	for _, u := range []Unit{UnitTokens, UnitBytes} {
		if budget[u] != nil {
			units = append(units, u)
			if u == UnitTokens {
				header = append(header, "budget (o200k)", "headroom")
			} else {
				header = append(header, "budget (bytes)", "headroom (bytes)")
			}
		}
	}
	if opts.Baseline != nil {
		if opts.Baseline.Entries {
			header = append(header, "tools before", "o200k entries before", "o200k entries after", "delta", "delta %")
		} else {
			header = append(header, "tools before", "o200k before", "o200k after", "delta", "delta %")
		}
	}
	entryTokens := make(map[string]int, len(r.ToolCosts))
	for _, tc := range r.ToolCosts {
		entryTokens[tc.Name] = tc.Tokens[price.O200kBase]
	}
	fullTokens := -1
	if full := r.Profile("full"); full != nil {
		fullTokens = full.Tokens[price.O200kBase]
	}
	var rows [][]string
	for _, p := range r.Profiles {
		row := []string{
			p.Name,
			strconv.Itoa(p.Tools),
			strconv.Itoa(p.InstructionsChars),
			strconv.Itoa(p.Bytes),
			strconv.Itoa(p.Tokens[price.O200kBase]),
			strconv.Itoa(p.Tokens[price.Cl100kBase]),
			"~" + strconv.Itoa(price.EstimateTokens(p.Bytes)),
			percent(&p.ShareOfFull),
			saved(p, fullTokens),
			percent(p.Coverage),
			percent(p.HoldoutCoverage),
		}
		for _, k := range effects {
			row = append(row, strconv.Itoa(p.Effects[k]))
		}
		for _, u := range units {
			if b, ok := budget[u][p.Name]; ok {
				row = append(row, strconv.Itoa(b), strconv.Itoa(b-p.used(u)))
			} else {
				row = append(row, "-", "-")
			}
		}
		if opts.Baseline != nil {
			after := p.Tokens[price.O200kBase]
			if opts.Baseline.Entries {
				after = 0
				for _, t := range p.ToolNames {
					after += entryTokens[t]
				}
			}
			if before, ok := opts.Baseline.Profiles[p.Name]; ok {
				d := after - before.TokensO200k
				pct := "-"
				if before.TokensO200k > 0 {
					pct = fmt.Sprintf("%+.1f%%", 100*float64(d)/float64(before.TokensO200k))
				}
				row = append(row, strconv.Itoa(before.Tools), strconv.Itoa(before.TokensO200k), strconv.Itoa(after), fmt.Sprintf("%+d", d), pct)
			} else {
				row = append(row, "-", "-", strconv.Itoa(after), "new", "-")
			}
		}
		rows = append(rows, row)
	}
	return header, rows
}

// effectKinds returns the effect kinds counted in any profile, sorted.
func (r *Report) effectKinds() []string {
	seen := map[string]bool{}
	for _, p := range r.Profiles {
		for k := range p.Effects {
			seen[k] = true
		}
	}
	return slices.Sorted(maps.Keys(seen))
}

// notes are the remarks printed under the table: missing tools, listings
// left incomplete, baseline profiles that are gone.
func (r *Report) notes(opts RenderOptions) []string {
	var notes []string
	for _, p := range r.Profiles {
		if m := r.Missing[p.Name]; len(m) > 0 {
			notes = append(notes, fmt.Sprintf("profile %q names %d tool(s) the catalog lacks, measured without them: %s",
				p.Name, len(m), strings.Join(m, ", ")))
		}
	}
	for _, name := range r.Incomplete {
		notes = append(notes, fmt.Sprintf("profile %q: the server offered a nextCursor the single tools/list request did not follow; figures cover the first page only", name))
	}
	if opts.Baseline != nil && opts.Baseline.Entries {
		notes = append(notes, fmt.Sprintf("baseline %s is a profiles file: its measured figures are sums of the tools' own entries (as the derivation counts them), so before and after here are such sums too, not whole exchanges", opts.Baseline.Source))
	}
	if opts.Baseline != nil {
		var gone []string
		for name := range opts.Baseline.Profiles {
			if r.Profile(name) == nil {
				gone = append(gone, name)
			}
		}
		sort.Strings(gone)
		for _, name := range gone {
			notes = append(notes, fmt.Sprintf("profile %q is in the baseline (%s) but no longer served", name, opts.Baseline.Source))
		}
	}
	return notes
}

// saved is how many o200k tokens p's exchange saves against full's.
func saved(p ProfileCost, fullTokens int) string {
	if fullTokens < 0 {
		return "-"
	}
	return strconv.Itoa(fullTokens - p.Tokens[price.O200kBase])
}

func percent(x *float64) string {
	if x == nil {
		return "-"
	}
	return fmt.Sprintf("%.1f%%", 100**x)
}

// WriteTable writes the report as a text table, then its notes.
func (r *Report) WriteTable(w io.Writer, opts RenderOptions) error {
	header, rows := r.cells(opts)
	t := tablewriter.NewTable(w,
		tablewriter.WithHeaderAutoFormat(tw.Off),
		tablewriter.WithRowAlignmentConfig(tw.CellAlignment{Global: tw.AlignRight, PerColumn: []tw.Align{tw.AlignLeft}}),
	)
	t.Header(header)
	if err := t.Bulk(rows); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	if err := t.Render(); err != nil {
		return fmt.Errorf("render table: %w", err)
	}
	for _, n := range r.notes(opts) {
		if _, err := fmt.Fprintln(w, "note:", n); err != nil {
			return err
		}
	}
	return nil
}

// WriteMarkdown writes the report as a GitHub-flavoured markdown table (for
// a pull request body), then its notes as a list.
func (r *Report) WriteMarkdown(w io.Writer, opts RenderOptions) error {
	header, rows := r.cells(opts)
	var b strings.Builder
	writeMarkdownRow(&b, header)
	b.WriteString("|")
	for i := range header {
		if i == 0 {
			b.WriteString(" --- |")
		} else {
			b.WriteString(" ---: |")
		}
	}
	b.WriteString("\n")
	for _, row := range rows {
		writeMarkdownRow(&b, row)
	}
	if notes := r.notes(opts); len(notes) > 0 {
		b.WriteString("\n")
		for _, n := range notes {
			b.WriteString("- " + markdownInline(n) + "\n")
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func writeMarkdownRow(b *strings.Builder, cells []string) {
	b.WriteString("|")
	for _, c := range cells {
		b.WriteString(" " + markdownCell(c) + " |")
	}
	b.WriteString("\n")
}

// markdownCell escapes a table cell: a bare '|' would end the cell, a
// newline the row. Backslashes are doubled first so that a '\' already
// before a '|' cannot cancel its escape.
func markdownCell(s string) string {
	return strings.NewReplacer(`\`, `\\`, "|", `\|`).Replace(markdownInline(s))
}

// markdownInline keeps text on one line.
func markdownInline(s string) string {
	return strings.NewReplacer("\r\n", " ", "\n", " ", "\r", " ").Replace(s)
}
