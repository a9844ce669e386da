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
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
)

// Report is the per-profile cost report. Its JSON encoding is the shape
// other tools read; fields tagged "-" only shape the table and markdown.
type Report struct {
	Tokenizers []string            `json:"tokenizers"`
	Profiles   []ProfileCost       `json:"profiles"`
	ToolCosts  []exchange.ToolCost `json:"tool_costs"`
	// Sessions is the per-session cost summary, when a trace was priced.
	Sessions *SessionSummary `json:"sessions,omitempty"`

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
	// Model is the model measure: the tokens of what a client sends the
	// model (package price), per family and tokenizer.
	Model map[price.Family]map[string]int `json:"model"`
	// ModelShareOfFull is the headline share: Model under
	// price.DefaultFamily in o200k_base over full's.
	ModelShareOfFull float64 `json:"model_share_of_full"`
	// InstructionTokens prices the instructions alone, under "wire" (the
	// JSON string in the initialize result) and under each family.
	InstructionTokens map[string]map[string]int `json:"instructions_tokens"`
	// IconTokens are the tokens of the tool entries' "icons" members on
	// the wire; the model measure sends none of them.
	IconTokens map[string]int `json:"icons_tokens"`
	// SessionCost is the per-session cost with prompt caching, when a
	// trace was priced.
	SessionCost *SessionCost `json:"session_cost,omitempty"`
	// Groups are the profile's tool groups, by name: a session switches one
	// on to list its tools.
	Groups map[string][]string `json:"-"`
	// Effects counts the profile's tools per effect kind, when known.
	Effects map[string]int `json:"-"`
	// ToolNames are the tools served, for sums of entry costs.
	ToolNames []string `json:"-"`
	// entries are the model entries (price.DefaultFamily, o200k_base) of
	// the tools served, by name, the gateway's own included.
	entries map[string]int
}

// ProfileInput is one measured profile for BuildReport.
type ProfileInput struct {
	Name     string
	Exchange *exchange.Exchange
	// Coverage and HoldoutCoverage come from the profiles file's measured
	// figures; nil when the file has none.
	Coverage, HoldoutCoverage *float64
	// Missing names tools the profile lists that the catalog lacks.
	Missing []string
	// Effects counts the profile's tools per effect kind; nil when unknown.
	Effects map[string]int
	// Groups are the profile's tool groups and their tools.
	Groups map[string][]string
}

// BuildReport assembles the report of the profiles, in the order given, with
// shares against full (the whole catalog served by the same server code) and
// the cost of every catalog tool.
func BuildReport(inputs []ProfileInput, full *exchange.Exchange, catalogTools []*mcp.Tool, c *price.Counter) (*Report, error) {
	if full == nil || full.Tokens[price.O200kBase] == 0 {
		return nil, errors.New("build report: no measured full-catalog exchange to compare against")
	}
	// The tools as full served them, where it did: their schemas' key order
	// as they travelled.
	costs, err := exchange.ListedToolCosts(catalogTools, full, c)
	if err != nil {
		return nil, fmt.Errorf("build report: %w", err)
	}
	fullModel, err := exchange.ModelMeasure(full, c)
	if err != nil {
		return nil, fmt.Errorf("build report: full: %w", err)
	}
	r := &Report{Tokenizers: price.TokenizerNames(), ToolCosts: costs, Missing: map[string][]string{}}
	for _, in := range inputs {
		ex := in.Exchange
		if ex == nil {
			return nil, fmt.Errorf("build report: profile %q has no measured exchange", in.Name)
		}
		model, err := exchange.ModelMeasure(ex, c)
		if err != nil {
			return nil, fmt.Errorf("build report: profile %q: %w", in.Name, err)
		}
		icons, err := exchange.IconTokens(ex, c)
		if err != nil {
			return nil, fmt.Errorf("build report: profile %q: %w", in.Name, err)
		}
		wireInstr := map[string]int{}
		if ex.Instructions != "" {
			b, _ := exchange.EncodeAsServed(ex.Instructions) // a string always encodes
			if wireInstr, err = c.Count(string(b)); err != nil {
				return nil, fmt.Errorf("build report: profile %q: %w", in.Name, err)
			}
		}
		pc := ProfileCost{
			Model:             map[price.Family]map[string]int{},
			InstructionTokens: map[string]map[string]int{"wire": wireInstr},
			IconTokens:        icons,
			Groups:            in.Groups,
		}
		mt, err := exchange.ModelTools(ex)
		if err != nil {
			return nil, fmt.Errorf("build report: profile %q: %w", in.Name, err)
		}
		tt, err := price.ToolTokens(c, price.DefaultFamily, mt)
		if err != nil {
			return nil, fmt.Errorf("build report: profile %q: %w", in.Name, err)
		}
		pc.entries = make(map[string]int, len(mt))
		for i, t := range mt {
			pc.entries[t.Name] = tt[i]
		}
		for f, m := range model {
			pc.Model[f] = m.Total
			pc.InstructionTokens[string(f)] = m.Instructions
		}
		if d := fullModel[price.DefaultFamily].Total[price.O200kBase]; d > 0 {
			pc.ModelShareOfFull = round4(float64(pc.Model[price.DefaultFamily][price.O200kBase]) / float64(d))
		}
		names := make([]string, len(ex.Tools))
		for i, t := range ex.Tools {
			names[i] = t.Name
		}
		pc.ToolNames, pc.Name, pc.Tools = names, in.Name, len(ex.Tools)
		pc.InstructionsChars = utf8.RuneCountInString(ex.Instructions)
		pc.Bytes, pc.Tokens = ex.Bytes, ex.Tokens
		pc.ShareOfFull = round4(float64(ex.Tokens[price.O200kBase]) / float64(full.Tokens[price.O200kBase]))
		pc.Coverage, pc.HoldoutCoverage, pc.Effects = in.Coverage, in.HoldoutCoverage, in.Effects
		r.Profiles = append(r.Profiles, pc)
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

// EntryTokens returns the model entry (price.DefaultFamily, o200k_base)
// of each tool the profile served, the gateway's own included, by name.
func (p *ProfileCost) EntryTokens() map[string]int { return maps.Clone(p.entries) }

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

// Client tool limits the report flags.
const (
	// CursorMaxTools is how many tools Cursor sends the model; it drops
	// the rest.
	CursorMaxTools = 40
	// VSCodeMaxTools is the most tools VS Code accepts in a request.
	VSCodeMaxTools = 128
)

// Unit is what a budget counts.
type Unit string

// Budget units: o200k_base tokens of the model measure (price.DefaultFamily),
// or the bytes of the exchange on the wire.
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
		return "o200k_base tokens (model measure, " + string(price.DefaultFamily) + ")"
	}
	return string(u)
}

// used is what p costs in unit u.
func (p *ProfileCost) used(u Unit) int {
	if u == UnitBytes {
		return p.Bytes
	}
	return p.modelTokens()
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

// BudgetError is the error of the budgets exceeded, each named, or nil
// when none is. The budgets are taken as valid: CheckBudgets says when
// they are not.
func (r *Report) BudgetError(budgets []Budget) error {
	over, _ := r.CheckBudgets(budgets)
	if len(over) == 0 {
		return nil
	}
	errs := make([]error, len(over))
	for i, o := range over {
		errs[i] = o
	}
	return fmt.Errorf("over budget: %w", errors.Join(errs...))
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

// cells returns the header and rows shared by the table and the markdown:
// the model measure first (the headline), the wire measure beside it.
func (r *Report) cells(opts RenderOptions) ([]string, [][]string) {
	header := append(slices.Clone(leadColumns), "share of full (model)", "saved vs full (model)", "instr (model)",
		"wire o200k", "wire cl100k", "wire bytes", "bytes/4 (estimate)", "share of full (wire)", "instr (wire)", "icons (wire)")
	if r.Sessions != nil {
		header = append(header, "session mean", "session p50", "session p95", "session share of full", "refused sessions")
	}
	header = append(header, "coverage", "holdout coverage")
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
				header = append(header, "budget (model)", "headroom")
			} else {
				header = append(header, "budget (wire bytes)", "headroom (bytes)")
			}
		}
	}
	if opts.Baseline != nil {
		switch {
		case opts.Baseline.Entries:
			header = append(header, "tools before", "model entries before", "model entries after", "delta", "delta %")
		case opts.Baseline.Wire:
			header = append(header, "tools before", "wire o200k before", "wire o200k after", "delta", "delta %")
		default:
			header = append(header, "tools before", "model before", "model after", "delta", "delta %")
		}
	}
	entryTokens := make(map[string]int, len(r.ToolCosts))
	for _, tc := range r.ToolCosts {
		entryTokens[tc.Name] = tc.Model[price.DefaultFamily]
	}
	fullModel := -1
	if full := r.Profile("full"); full != nil {
		fullModel = full.modelTokens()
	}
	var rows [][]string
	for _, p := range r.Profiles {
		row := []string{
			p.Name,
			strconv.Itoa(p.Tools),
			strconv.Itoa(p.Model[price.Anthropic][price.O200kBase]),
			strconv.Itoa(p.Model[price.OpenAI][price.O200kBase]),
			percent(&p.ModelShareOfFull),
			saved(p.modelTokens(), fullModel),
			strconv.Itoa(p.InstructionTokens[string(price.DefaultFamily)][price.O200kBase]),
			strconv.Itoa(p.Tokens[price.O200kBase]),
			strconv.Itoa(p.Tokens[price.Cl100kBase]),
			strconv.Itoa(p.Bytes),
			"~" + strconv.Itoa(price.EstimateTokens(p.Bytes)),
			percent(&p.ShareOfFull),
			strconv.Itoa(p.InstructionTokens["wire"][price.O200kBase]),
			strconv.Itoa(p.IconTokens[price.O200kBase]),
		}
		if r.Sessions != nil {
			if sc := p.SessionCost; sc != nil {
				row = append(row, fmt.Sprintf("%.0f", sc.Mean), fmt.Sprintf("%.0f", sc.P50), fmt.Sprintf("%.0f", sc.P95), percent(&sc.ShareOfFull), strconv.Itoa(sc.Refused))
			} else {
				row = append(row, "-", "-", "-", "-", "-")
			}
		}
		row = append(row, percent(p.Coverage), percent(p.HoldoutCoverage))
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
			after := p.modelTokens()
			switch {
			case opts.Baseline.Entries:
				after = 0
				for _, t := range p.ToolNames {
					after += entryTokens[t]
				}
			case opts.Baseline.Wire:
				after = p.Tokens[price.O200kBase]
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

// modelTokens is the headline figure: the model measure under
// price.DefaultFamily in o200k_base.
func (p *ProfileCost) modelTokens() int { return p.Model[price.DefaultFamily][price.O200kBase] }

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
	for _, p := range r.Profiles {
		switch {
		case p.Tools > VSCodeMaxTools:
			notes = append(notes, fmt.Sprintf("profile %q lists %d tools: VS Code refuses more than %d tools, and Cursor sends only the first %d to the model", p.Name, p.Tools, VSCodeMaxTools, CursorMaxTools))
		case p.Tools > CursorMaxTools:
			notes = append(notes, fmt.Sprintf("profile %q lists %d tools: Cursor sends only the first %d to the model", p.Name, p.Tools, CursorMaxTools))
		}
		if icons, wire := p.IconTokens[price.O200kBase], p.Tokens[price.O200kBase]; wire > 0 && 4*icons > wire {
			notes = append(notes, fmt.Sprintf("profile %q: icons are %d of the exchange's %d o200k_base tokens on the wire (%.0f%%); no client sends them to the model", p.Name, icons, wire, 100*float64(icons)/float64(wire)))
		}
	}
	if s := r.Sessions; s != nil {
		notes = append(notes, fmt.Sprintf("session cost: %d sessions, model measure (%s, o200k_base) of the tool prefix with prompt caching: first turn and any turn whose tools changed write it at %gx, other turns read it at %gx, %d tokens of conversation per turn; a session calling a tool outside the profile and its groups is priced on full from that turn and counted as refused",
			s.Sessions, price.DefaultFamily, s.Cache.Write, s.Cache.Read, s.Cache.Growth))
		notes = append(notes, fmt.Sprintf("session cost floor (each session's own tools, listed from its first turn): mean %.0f, p50 %.0f, p95 %.0f, %.1f%% of full",
			s.Floor.Mean, s.Floor.P50, s.Floor.P95, 100*s.FloorShareOfFull))
		if s.IgnoredCalls > 0 {
			notes = append(notes, fmt.Sprintf("session cost: %d call(s) to tools full does not list (the gateway's own, or tools the catalog lacks) change no listing", s.IgnoredCalls))
		}
	}
	for _, name := range r.Incomplete {
		notes = append(notes, fmt.Sprintf("profile %q: the server offered a nextCursor the single tools/list request did not follow; figures cover the first page only", name))
	}
	if opts.Baseline != nil && opts.Baseline.Entries {
		notes = append(notes, fmt.Sprintf("baseline %s is a profiles file: its measured figures are sums of the tools' own model entries (as the derivation counts them), so before and after here are such sums too, not whole exchanges", opts.Baseline.Source))
	}
	if opts.Baseline != nil && opts.Baseline.Wire {
		notes = append(notes, fmt.Sprintf("baseline %s has no model measure: before and after are wire o200k_base tokens", opts.Baseline.Source))
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

// saved is how many tokens used saves against full's.
func saved(used, full int) string {
	if full < 0 {
		return "-"
	}
	return strconv.Itoa(full - used)
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
