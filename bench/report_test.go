package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/price"
)

func ptr(f float64) *float64 { return &f }

// exchangeOf is a measured exchange reduced to what the report reads.
func exchangeOf(tools int, bytes, o200k, cl100k int, instructions string) *exchange.Exchange {
	ex := &exchange.Exchange{Bytes: bytes, Tokens: map[string]int{price.O200kBase: o200k, price.Cl100kBase: cl100k}, Instructions: instructions}
	for range tools {
		ex.Tools = append(ex.Tools, &mcp.Tool{Name: "t"})
	}
	return ex
}

func sampleReport(t *testing.T) *Report {
	t.Helper()
	c := newTestCounter(t)
	cat := loadTiny(t)
	full := exchangeOf(3, 4000, 1000, 1100, "")
	r, err := BuildReport([]ProfileInput{
		{Name: "core", Exchange: exchangeOf(1, 1200, 250, 270, "Für Notizen."), Coverage: ptr(0.95), HoldoutCoverage: ptr(0.9375),
			Missing: []string{"gone_tool"}, Effects: map[string]int{"read": 1}},
		{Name: "full", Exchange: full, Effects: map[string]int{"read": 1, "mutate": 1, "destructive": 1}},
	}, full, cat.Tools, c)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestReportJSONShape pins the JSON other tools read: exactly these keys.
func TestReportJSONShape(t *testing.T) {
	r := sampleReport(t)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(buf.Bytes(), &doc); err != nil {
		t.Fatal(err)
	}
	keysOf := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		slices.Sort(ks)
		return ks
	}
	if got := keysOf(doc); !slices.Equal(got, []string{"profiles", "tokenizers", "tool_costs"}) {
		t.Fatalf("top-level keys %v", got)
	}
	if got := doc["tokenizers"].([]any); len(got) != 2 || got[0] != "o200k_base" || got[1] != "cl100k_base" {
		t.Errorf("tokenizers = %v", got)
	}
	profs := doc["profiles"].([]any)
	core := profs[0].(map[string]any)
	wantKeys := []string{"bytes", "coverage", "holdout_coverage", "icons_tokens", "instructions_chars", "instructions_tokens", "model", "model_share_of_full", "name", "share_of_full", "tokens", "tools"}
	if got := keysOf(core); !slices.Equal(got, wantKeys) {
		t.Errorf("profile keys %v, want %v", got, wantKeys)
	}
	want := map[string]any{"name": "core", "tools": 1.0, "instructions_chars": 12.0, "bytes": 1200.0,
		"share_of_full": 0.25, "coverage": 0.95, "holdout_coverage": 0.9375}
	for k, v := range want {
		if core[k] != v {
			t.Errorf("core %s = %v, want %v", k, core[k], v)
		}
	}
	if tok := core["tokens"].(map[string]any); tok["o200k_base"] != 250.0 || tok["cl100k_base"] != 270.0 || len(tok) != 2 {
		t.Errorf("core tokens = %v", tok)
	}
	model := core["model"].(map[string]any)
	if got := keysOf(model); !slices.Equal(got, []string{"anthropic", "openai"}) {
		t.Errorf("model keys %v, want anthropic, openai", got)
	}
	for f, m := range model {
		if got := keysOf(m.(map[string]any)); !slices.Equal(got, []string{"cl100k_base", "o200k_base"}) {
			t.Errorf("model.%s keys %v, want both tokenizers", f, got)
		}
	}
	if got := keysOf(core["instructions_tokens"].(map[string]any)); !slices.Equal(got, []string{"anthropic", "openai", "wire"}) {
		t.Errorf("instructions_tokens keys %v", got)
	}
	if _, ok := core["session_cost"]; ok {
		t.Error("session_cost present without a trace")
	}
	full := profs[1].(map[string]any)
	if full["coverage"] != nil || full["holdout_coverage"] != nil || full["share_of_full"] != 1.0 {
		t.Errorf("full: coverage %v holdout %v share %v; want null, null, 1", full["coverage"], full["holdout_coverage"], full["share_of_full"])
	}
	costs := doc["tool_costs"].([]any)
	if len(costs) != 3 {
		t.Fatalf("%d tool costs, want 3", len(costs))
	}
	if got := keysOf(costs[0].(map[string]any)); !slices.Equal(got, []string{"bytes", "model_o200k", "name", "tokens"}) {
		t.Errorf("tool cost keys %v", got)
	}

	// The JSON reads back as a report, so it can be a later baseline.
	back, err := DecodeReport(&buf)
	if err != nil {
		t.Fatal(err)
	}
	if back.Profile("core").Tokens[price.O200kBase] != 250 {
		t.Errorf("decoded core o200k = %d", back.Profile("core").Tokens[price.O200kBase])
	}
}

func TestBuildReportNeedsFull(t *testing.T) {
	c := newTestCounter(t)
	if _, err := BuildReport(nil, nil, nil, c); err == nil {
		t.Error("no full exchange: want an error")
	}
	if _, err := BuildReport([]ProfileInput{{Name: "x"}}, exchangeOf(1, 1, 1, 1, ""), nil, c); err == nil || !strings.Contains(err.Error(), `"x"`) {
		t.Errorf("profile without exchange: err = %v, want one naming it", err)
	}
}

func TestCheckBudgets(t *testing.T) {
	r := sampleReport(t) // core's model measure: m tokens; 1200 bytes on the wire
	m := r.Profile("core").modelTokens()
	if m == 0 || m == 250 {
		t.Fatalf("core's model measure is %d: want it apart from its wire tokens (250)", m)
	}
	for _, tc := range []struct {
		name     string
		unit     Unit
		limit    int
		wantOver int // over by, 0 for within
		wantText string
	}{
		{"tokens under budget", UnitTokens, m + 1, 0, ""},
		{"tokens exactly at budget", UnitTokens, m, 0, ""},
		{"tokens over budget", UnitTokens, m - 5, 5, fmt.Sprintf("costs %d o200k_base tokens (model measure, anthropic), 5 over its budget of %d", m, m-5)},
		{"bytes under budget", UnitBytes, 1500, 0, ""},
		{"bytes over budget", UnitBytes, 1000, 200, "costs 1200 bytes, 200 over its budget of 1000"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			over, err := r.CheckBudgets([]Budget{{Profile: "core", Unit: tc.unit, Limit: tc.limit}})
			if err != nil {
				t.Fatal(err)
			}
			if tc.wantOver == 0 {
				if len(over) != 0 {
					t.Errorf("over = %v, want none", over)
				}
				return
			}
			if len(over) != 1 || over[0].Used-over[0].Limit != tc.wantOver {
				t.Fatalf("over = %v, want core %d over", over, tc.wantOver)
			}
			if msg := over[0].Error(); !strings.Contains(msg, `"core"`) || !strings.Contains(msg, tc.wantText) {
				t.Errorf("message %q should name the profile and say %q", msg, tc.wantText)
			}
		})
	}
	if _, err := r.CheckBudgets([]Budget{{Profile: "core", Unit: "lines", Limit: 1}}); err == nil || !strings.Contains(err.Error(), `"lines"`) {
		t.Errorf("unknown unit: err = %v", err)
	}
	_, err := r.CheckBudgets([]Budget{{Profile: "nope", Unit: UnitTokens, Limit: 1}})
	if err == nil || !strings.Contains(err.Error(), "core, full") {
		t.Errorf("unknown profile: err = %v, want one listing core, full", err)
	}
}

// splitMarkdownRow splits a table row as GitHub does: a backslash escapes the
// next character, an unescaped '|' separates cells.
func splitMarkdownRow(row string) []string {
	row = strings.TrimSpace(row)
	row = strings.TrimPrefix(row, "|")
	var cells []string
	var cur strings.Builder
	for i := 0; i < len(row); i++ {
		switch row[i] {
		case '\\':
			cur.WriteByte(row[i])
			if i+1 < len(row) {
				i++
				cur.WriteByte(row[i])
			}
		case '|':
			cells = append(cells, strings.TrimSpace(cur.String()))
			cur.Reset()
		default:
			cur.WriteByte(row[i])
		}
	}
	return cells
}

func TestMarkdownEscaping(t *testing.T) {
	for _, tc := range []struct{ in, want string }{
		{"plain", "plain"},
		{"a|b", `a\|b`},
		{`a\|b`, `a\\\|b`},
		{"two\nlines", "two lines"},
	} {
		if got := markdownCell(tc.in); got != tc.want {
			t.Errorf("markdownCell(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}

	c := newTestCounter(t)
	full := exchangeOf(3, 4000, 1000, 1100, "")
	r, err := BuildReport([]ProfileInput{
		{Name: "read|write", Exchange: exchangeOf(2, 100, 50, 60, "")},
		{Name: `back\|slash`, Exchange: exchangeOf(2, 100, 50, 60, "")},
		{Name: "full", Exchange: full},
	}, full, nil, c)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := r.WriteMarkdown(&buf, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	width := len(splitMarkdownRow(lines[0]))
	for i, l := range lines {
		if n := len(splitMarkdownRow(l)); n != width {
			t.Errorf("line %d has %d cells, header %d: %s", i, n, width, l)
		}
	}
	if !strings.Contains(buf.String(), `| read\|write |`) || !strings.Contains(buf.String(), `| back\\\|slash |`) {
		t.Errorf("escaped names not found:\n%s", buf.String())
	}
}

func TestRenderColumnsAndNotes(t *testing.T) {
	r := sampleReport(t)
	m, fullM := r.Profile("core").modelTokens(), r.Profile("full").modelTokens()
	base := &Baseline{Source: "old.json", Profiles: map[string]BaselineProfile{
		"core":    {Tools: 2, TokensO200k: 2 * m},
		"retired": {Tools: 9, TokensO200k: 900},
	}}
	opts := RenderOptions{Budgets: []Budget{{Profile: "core", Unit: UnitTokens, Limit: 300}, {Profile: "full", Unit: UnitBytes, Limit: 4100}}, Baseline: base}
	for _, format := range []string{"table", "markdown"} {
		t.Run(format, func(t *testing.T) {
			var buf bytes.Buffer
			var err error
			if format == "table" {
				err = r.WriteTable(&buf, opts)
			} else {
				err = r.WriteMarkdown(&buf, opts)
			}
			if err != nil {
				t.Fatal(err)
			}
			out := buf.String()
			for _, want := range []string{
				"model anthropic", "model openai", "wire o200k", "wire cl100k", "bytes/4 (estimate)", "~300", // 1200 bytes / 4, labelled
				"25.0%", "saved vs full (model)", strconv.Itoa(fullM - m), "95.0%", "93.8%", // wire share, saved, coverage, holdout
				"instr (model)", "instr (wire)", "icons (wire)",
				"destructive", "mutate", "read", // effect kinds
				"budget (model)", "headroom", strconv.Itoa(300 - m),
				"budget (wire bytes)", "headroom (bytes)", "4100", "100", // full: 4100 - 4000
				"model before", strconv.Itoa(2 * m), strconv.Itoa(-m), "-50.0%", "new", // baseline: core halved, full new
				"gone_tool", // missing tool reported
				`profile "retired" is in the baseline (old.json) but no longer served`,
			} {
				if !strings.Contains(out, want) {
					t.Errorf("%s output lacks %q:\n%s", format, want, out)
				}
			}
		})
	}
	// Without options the optional columns are absent.
	var buf bytes.Buffer
	if err := r.WriteTable(&buf, RenderOptions{}); err != nil {
		t.Fatal(err)
	}
	for _, absent := range []string{"headroom", "model before", "session mean"} {
		if strings.Contains(buf.String(), absent) {
			t.Errorf("plain table has %q:\n%s", absent, buf.String())
		}
	}
}

func TestLoadBaseline(t *testing.T) {
	dir := t.TempDir()
	r := sampleReport(t)
	var buf bytes.Buffer
	if err := r.WriteJSON(&buf); err != nil {
		t.Fatal(err)
	}
	jsonPath := filepath.Join(dir, "before.json")
	if err := os.WriteFile(jsonPath, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	// A report from before the model measure: its figures are wire tokens.
	oldPath := filepath.Join(dir, "old.json")
	if err := os.WriteFile(oldPath, []byte(`{"profiles":[{"name":"core","tools":1,"bytes":1200,"tokens":{"o200k_base":250}}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if b, err := LoadBaseline(oldPath); err != nil || !b.Wire {
		t.Errorf("old report: wire = %v, err %v; want its figures read as wire", b != nil && b.Wire, err)
	}
	tomlPath := filepath.Join(dir, "profiles.generated.toml")
	if err := os.WriteFile(tomlPath, []byte(`version = 1
default = "core"

[[profile]]
name = "core"
tools = ["read_note"]

[profile.measured]
sessions = 10
holdout_sessions = 0
tools = 1
bytes = 700
tokens_o200k = 180

[[profile]]
name = "unmeasured"
tools = ["read_note"]
`), 0o644); err != nil {
		t.Fatal(err)
	}
	badPath := filepath.Join(dir, "bad.toml")
	if err := os.WriteFile(badPath, []byte("version = 1\nnonsense = 3\n"), 0o644); err != nil {
		t.Fatal(err)
	}

	for _, tc := range []struct {
		path      string
		want      map[string]BaselineProfile
		wantError string
	}{
		{jsonPath, map[string]BaselineProfile{"core": {1, 1200, r.Profile("core").modelTokens()}, "full": {3, 4000, r.Profile("full").modelTokens()}}, ""},
		{oldPath, map[string]BaselineProfile{"core": {1, 1200, 250}}, ""},
		{tomlPath, map[string]BaselineProfile{"core": {1, 700, 180}}, ""},
		{badPath, nil, "nonsense"},
		{filepath.Join(dir, "absent.json"), nil, "absent.json"},
	} {
		b, err := LoadBaseline(tc.path)
		if tc.wantError != "" {
			if err == nil || !strings.Contains(err.Error(), tc.wantError) {
				t.Errorf("%s: err = %v, want one mentioning %q", tc.path, err, tc.wantError)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.path, err)
		}
		if len(b.Profiles) != len(tc.want) {
			t.Errorf("%s: %v, want %v", tc.path, b.Profiles, tc.want)
		}
		for name, w := range tc.want {
			if b.Profiles[name] != w {
				t.Errorf("%s: %s = %+v, want %+v", tc.path, name, b.Profiles[name], w)
			}
		}
	}
}

// TestBaselineOfEntries: a profiles file's figures are sums of tool entries,
// so the comparison sums the served tools' entries, not the exchange.
func TestBaselineOfEntries(t *testing.T) {
	c := newTestCounter(t)
	cat := loadTiny(t)
	full := &exchange.Exchange{Bytes: 5000, Tokens: map[string]int{price.O200kBase: 2000, price.Cl100kBase: 2100}, Tools: cat.Tools}
	core := &exchange.Exchange{Bytes: 900, Tokens: map[string]int{price.O200kBase: 400, price.Cl100kBase: 420}, Tools: cat.Tools[:2]}
	r, err := BuildReport([]ProfileInput{{Name: "core", Exchange: core}, {Name: "full", Exchange: full}}, full, cat.Tools, c)
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]int{}
	for _, tc := range r.ToolCosts {
		byName[tc.Name] = tc.Model[price.Anthropic]
	}
	entries := byName[cat.Tools[0].Name] + byName[cat.Tools[1].Name]
	if byName[cat.Tools[0].Name] == 0 {
		t.Fatalf("no model entry price for %q", cat.Tools[0].Name)
	}
	for _, tc := range []struct {
		entries    bool
		wantHeader string
		wantAfter  int
	}{
		{false, "model before", r.Profile("core").modelTokens()},
		{true, "model entries before", entries},
	} {
		base := &Baseline{Source: "b", Entries: tc.entries, Profiles: map[string]BaselineProfile{"core": {Tools: 2, TokensO200k: 100}}}
		header, rows := r.cells(RenderOptions{Baseline: base})
		col := slices.Index(header, tc.wantHeader)
		if col < 0 {
			t.Fatalf("entries=%v: header %v lacks %q", tc.entries, header, tc.wantHeader)
		}
		if got := rows[0][col+1]; got != strconv.Itoa(tc.wantAfter) {
			t.Errorf("entries=%v: after = %s, want %d", tc.entries, got, tc.wantAfter)
		}
		if got := rows[0][col+2]; got != fmt.Sprintf("%+d", tc.wantAfter-100) {
			t.Errorf("entries=%v: delta = %s, want %+d", tc.entries, got, tc.wantAfter-100)
		}
	}
}

// TestIncompleteListingNoted: a profile whose single tools/list left a
// cursor is flagged, since its figures cover the first page only.
func TestIncompleteListingNoted(t *testing.T) {
	c := newTestCounter(t)
	full := exchangeOf(3, 4000, 1000, 1100, "")
	paged := exchangeOf(2, 900, 200, 210, "")
	paged.NextCursor = "next"
	for _, tc := range []struct {
		ex       *exchange.Exchange
		wantNote bool
	}{{paged, true}, {exchangeOf(2, 900, 200, 210, ""), false}} {
		r, err := BuildReport([]ProfileInput{{Name: "core", Exchange: tc.ex}, {Name: "full", Exchange: full}}, full, nil, c)
		if err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := r.WriteTable(&buf, RenderOptions{}); err != nil {
			t.Fatal(err)
		}
		if got := strings.Contains(buf.String(), `profile "core": the server offered a nextCursor`); got != tc.wantNote {
			t.Errorf("cursor left %q: note present %v, want %v:\n%s", tc.ex.NextCursor, got, tc.wantNote, buf.String())
		}
	}
}
