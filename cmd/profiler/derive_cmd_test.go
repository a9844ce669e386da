package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/exchange"
	"github.com/toolprof/toolprof/internal/golden"
	"github.com/toolprof/toolprof/price"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
	"github.com/toolprof/toolprof/toolsearch"
)

// deriveFixture writes a catalog of six tools (e destructive) and a trace of
// n sessions with start times, mixing five tool sets.
func deriveFixture(t *testing.T, n int, extra ...string) (dir, catalogPath, tracePath string) {
	t.Helper()
	dir = t.TempDir()
	var tools []map[string]any
	for _, name := range []string{"a", "b", "c", "d", "e", "f"} {
		tool := map[string]any{"name": name, "description": strings.Repeat("does "+name+" ", 12+len(tools)), "inputSchema": map[string]any{"type": "object"}}
		if name == "e" {
			tool["annotations"] = map[string]any{"destructiveHint": true}
		}
		tools = append(tools, tool)
	}
	cat, _ := json.Marshal(map[string]any{"tools": tools})
	catalogPath = filepath.Join(dir, "catalog.json")
	if err := os.WriteFile(catalogPath, cat, 0o644); err != nil {
		t.Fatal(err)
	}
	sets := [][]string{{"a"}, {"a", "b"}, {"c"}, {"a"}, {"d", "e"}, {"a", "b"}, {"c"}, {"a"}, {"f"}, {}}
	var b strings.Builder
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		var calls []string
		for _, tl := range sets[i%len(sets)] {
			calls = append(calls, fmt.Sprintf(`{"tool":%q}`, tl))
		}
		fmt.Fprintf(&b, `{"session":"s%d","client":{"name":"test","version":"1"},"started":%q,"calls":[%s]}`+"\n",
			i, start.Add(time.Duration(i)*time.Hour).Format(time.RFC3339), strings.Join(calls, ","))
	}
	for _, line := range extra {
		b.WriteString(line + "\n")
	}
	tracePath = filepath.Join(dir, "trace.jsonl")
	if err := os.WriteFile(tracePath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, catalogPath, tracePath
}

// importTrace imports the sessions of trace into telemetry at tdir, after
// edit (if any) has changed them, and returns tdir.
func importTrace(t *testing.T, trace, tdir string, edit func([]telemetry.TraceSession)) string {
	t.Helper()
	f, err := os.Open(trace)
	if err != nil {
		t.Fatal(err)
	}
	ts, _, err := telemetry.DecodeTrace(f, trace, false)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	if edit != nil {
		edit(ts)
	}
	if _, err := telemetry.Import(context.Background(), tdir, ts, time.Now()); err != nil {
		t.Fatal(err)
	}
	return tdir
}

func runDeriveArgs(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"derive"}, args...), &out, &errb)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
}

func TestDeriveWritesGoldenAndIsDeterministic(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	outA, outB := filepath.Join(dir, "a", "profiles.generated.toml"), filepath.Join(dir, "b", "profiles.generated.toml")
	for _, out := range []string{outA, outB} {
		os.MkdirAll(filepath.Dir(out), 0o755)
		if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
	}
	a, _ := os.ReadFile(outA)
	b, _ := os.ReadFile(outB)
	if !bytes.Equal(a, b) {
		t.Fatalf("two runs differ:\n%s\n---\n%s", a, b)
	}
	golden.Assert(t, filepath.Join("testdata", "derive", "profiles.generated.toml"), a)
	f, err := profiles.LoadFile(outA)
	if err != nil {
		t.Fatalf("written file does not load: %v", err)
	}
	for _, p := range f.Profiles {
		if p.Name != profiles.FullProfile && strings.Contains(strings.Join(p.Tools, ","), "e") {
			t.Errorf("profile %s holds destructive e", p.Name)
		}
	}
	if f.Provenance.DataFrom != "2026-03-01T00:00:00Z" || f.Provenance.DataUntil != "2026-03-05T03:00:00Z" {
		t.Errorf("data window %s..%s", f.Provenance.DataFrom, f.Provenance.DataUntil)
	}
}

func TestDeriveCheck(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	args := []string{"--trace", trace, "--catalog", cat, "--out", out}
	if _, stderr, code := runDeriveArgs(t, append(args, "--check")...); code != 1 || !strings.Contains(stderr, "does not exist") {
		t.Errorf("check without file: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Fatal("--check wrote the file")
	}
	if _, stderr, code := runDeriveArgs(t, args...); code != 0 {
		t.Fatalf("write: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runDeriveArgs(t, append(args, "--check")...); code != 0 || !strings.Contains(stderr, "up to date") {
		t.Errorf("check of fresh file: exit %d, %s", code, stderr)
	}
	data, _ := os.ReadFile(out)
	os.WriteFile(out, bytes.Replace(data, []byte(`default = "`), []byte(`default = "x`), 1), 0o644)
	edited, _ := os.ReadFile(out)
	if _, stderr, code := runDeriveArgs(t, append(args, "--check")...); code != 1 || !strings.Contains(stderr, "differs from") {
		t.Errorf("check of edited file: exit %d, %s", code, stderr)
	}
	if now, _ := os.ReadFile(out); !bytes.Equal(now, edited) {
		t.Error("--check rewrote the file")
	}
}

func TestDeriveMinSessions(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 10)
	out := filepath.Join(dir, "profiles.generated.toml")
	_, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out)
	if code != 1 || !strings.Contains(stderr, "only 10 unrestricted sessions") || !strings.Contains(stderr, "--min-sessions 30") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
	if _, err := os.Stat(out); err == nil {
		t.Error("file written below --min-sessions")
	}
	_, stderr, code = runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--force")
	if code != 0 || !strings.Contains(stderr, "--force given") {
		t.Errorf("--force: exit %d, %s", code, stderr)
	}
	if _, err := os.Stat(out); err != nil {
		t.Errorf("--force did not write: %v", err)
	}
	// The small-sample warning reaches the summary (the nightly pull
	// request's body) too.
	stdout, _, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--force", "--summary", "markdown")
	if code != 0 || !strings.Contains(stdout, "> warning: only 10 unrestricted sessions (served full or exploration), below 30") {
		t.Errorf("--force --summary markdown: exit %d, summary lacks the small-sample warning:\n%s", code, stdout)
	}
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--min-sessions", "5"); code != 0 || strings.Contains(stderr, "unrestricted sessions (served full or exploration), below") {
		t.Errorf("--min-sessions 5: exit %d, want no small-sample warning: %s", code, stderr)
	}
}

func TestDeriveUnknownToolsAndBadLines(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 60,
		`{"session":"u1","client":{"name":"x"},"started":"2026-03-01T00:30:00Z","calls":[{"tool":"zz"},{"tool":"a"}]}`,
		`{"session":"u2","client":{"name":"x"},"calls":[{"tool":"yy","outcome":"unknown_tool"}]}`)
	out := filepath.Join(dir, "p.toml")
	_, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out)
	if code != 0 {
		t.Fatalf("unknown tools were fatal: exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "2 calling a tool the catalog lacks (yy, zz)") || !strings.Contains(stderr, "1 calls recorded as unknown_tool") {
		t.Errorf("unknown tools not counted: %s", stderr)
	}
	bad := filepath.Join(dir, "bad.jsonl")
	data, _ := os.ReadFile(trace)
	os.WriteFile(bad, append(data, []byte("{not json\n")...), 0o644)
	_, stderr, code = runDeriveArgs(t, "--trace", bad, "--catalog", cat, "--out", out)
	if code != 1 || !strings.Contains(stderr, "bad.jsonl:63:") || !strings.Contains(stderr, "--skip-bad") {
		t.Errorf("malformed line: exit %d, %s", code, stderr)
	}
	_, stderr, code = runDeriveArgs(t, "--trace", bad, "--catalog", cat, "--out", out, "--skip-bad")
	if code != 0 || !strings.Contains(stderr, "skipped") {
		t.Errorf("--skip-bad: exit %d, %s", code, stderr)
	}
}

func TestDeriveFromTelemetry(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 60)
	// Half the sessions served core: they must be skipped.
	tdir := importTrace(t, trace, filepath.Join(dir, "telemetry"), func(ts []telemetry.TraceSession) {
		for i := range ts {
			if i%2 == 1 {
				ts[i].Profile = "core"
			}
		}
	})
	out := filepath.Join(dir, "p.toml")
	_, stderr, code := runDeriveArgs(t, "--telemetry", tdir, "--catalog", cat, "--out", out, "--min-sessions", "30")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "learning from 30 (30 full or no profile recorded, 0 exploration); 30 served less than every tool (a smaller or read-only profile), skipped") {
		t.Errorf("session kinds not reported: %s", stderr)
	}
}

func TestDerivePolicyAndSummary(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	// profiles.toml beside --out is read by default.
	os.WriteFile(filepath.Join(dir, "profiles.toml"), []byte("version = 1\n\n[[profile]]\nname = \"core\"\npin = [\"f\"]\n"), 0o644)
	stdout, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--summary", "markdown")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"| `core` |", "- `core`: added `f`", "top-k baseline", "Learned from 100 sessions",
		"Cost per held-out session with prompt caching", "cache write 1.25x", "| profile | mean | p50 | p95 | share of full |"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary lacks %q:\n%s", want, stdout)
		}
	}
	// The cache flags are bench's, and the report states them.
	stdout, stderr, code = runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--check", "--cache-write", "2", "--cache-read", "0.5", "--turn-growth", "40")
	if code > 1 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if want := "cache write 2x on the first turn and from any turn whose list changed, read 0.5x on the other turns; 40 tokens of conversation added per turn"; !strings.Contains(stdout, want) {
		t.Errorf("report lacks %q:\n%s", want, stdout)
	}
	// An explicit --policy that does not exist is an error.
	_, stderr, code = runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--policy", filepath.Join(dir, "nope.toml"))
	if code != 1 || !strings.Contains(stderr, "nope.toml") {
		t.Errorf("missing --policy: exit %d, %s", code, stderr)
	}
}

func TestDerivePlot(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	png := filepath.Join(dir, "frontier.png")
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", filepath.Join(dir, "p.toml"), "--plot", png); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	data, err := os.ReadFile(png)
	if err != nil || !bytes.HasPrefix(data, []byte("\x89PNG")) {
		t.Errorf("plot not a PNG: %v", err)
	}
}

func TestDeriveProfilesAndBudgetFlags(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "p.toml")
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--profile", "small=0.5", "--profile", "big=0.9"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := profiles.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, p := range f.Profiles {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "small,big,full" {
		t.Errorf("profiles %v", names)
	}
	// Without a budget, core at 0.9 costs more than 40 tokens, so the
	// budget below is what holds it down.
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--target", "0.9"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, _ = profiles.LoadFile(out)
	if f.Profiles[0].Measured.TokensO200k <= 40 {
		t.Fatalf("core at 0.9 costs %d tokens: the fixture no longer tests the budget", f.Profiles[0].Measured.TokensO200k)
	}
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--budget-tokens", "40", "--target", "0.9"); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, _ = profiles.LoadFile(out)
	if f.Profiles[0].Name != "core" || f.Profiles[0].Measured.TokensO200k > 40 || len(f.Profiles[0].Tools) == 0 {
		t.Errorf("budget profile %v %+v, want core within 40 tokens", f.Profiles[0].Tools, f.Profiles[0].Measured)
	}
	if f.Provenance == nil || !slices.Contains(f.Provenance.Parameters, "profile.core.budget_tokens=40") {
		t.Errorf("provenance does not record the budget: %+v", f.Provenance)
	}
	// --default-target: the smallest profile reaching it, else full.
	for _, tt := range []struct{ target, want string }{{"0", "core"}, {"1", "full"}} {
		if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--default-target", tt.target); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if f, _ = profiles.LoadFile(out); f.Default != tt.want {
			t.Errorf("--default-target %s: default %q, want %q", tt.target, f.Default, tt.want)
		}
	}
}

func TestDeriveUsageErrors(t *testing.T) {
	_, cat, trace := deriveFixture(t, 10)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--catalog", cat}, "--telemetry DIR or --trace"},
		{[]string{"--trace", trace}, "--catalog FILE is required"},
		{[]string{"--trace", trace, "--telemetry", "x", "--catalog", cat}, "exclusive"},
		{[]string{"--trace", trace, "--catalog", cat, "--holdout", "1"}, "--holdout 1"},
		{[]string{"--trace", trace, "--catalog", cat, "--profile", "core"}, "NAME=SHARE"},
		{[]string{"--trace", trace, "--catalog", cat, "--profile", "core=2"}, "NAME=SHARE"},
		{[]string{"--trace", trace, "--catalog", cat, "--profile", "full=0.9"}, "full is always derived"},
		{[]string{"--trace", trace, "--catalog", cat, "--profile", "bad name=0.9"}, "not valid"},
		{[]string{"--trace", trace, "--catalog", cat, "--target", "0.5", "--profile", "a=0.5"}, "exclusive"},
		{[]string{"--trace", trace, "--catalog", cat, "--summary", "html"}, "want markdown"},
		{[]string{"--trace", trace, "--catalog", cat, "--budget-tokens", "-5"}, "--budget-tokens -5"},
		{[]string{"--trace", trace, "--catalog", cat, "--default-target", "1.5"}, "--default-target 1.5"},
		{[]string{"--trace", trace, "--catalog", cat, "extra"}, "unexpected argument"},
		{[]string{"--trace", trace, "--catalog", cat, "--cache-read", "-1"}, "--cache-read or --turn-growth: cache read multiplier -1"},
		{[]string{"--trace", trace, "--catalog", cat, "--turn-growth", "-3"}, "conversation growth -3"},
		{[]string{"--trace", trace, "--catalog", cat, "--served-target", "0.9"}, "--served-target needs --choose-default"},
		{[]string{"--trace", trace, "--catalog", cat, "--choose-default", "--served-target", "0"}, "--served-target 0"},
		{[]string{"--telemetry", t.TempDir(), "--catalog", cat, "--choose-default"}, "--choose-default needs --trace"},
		{[]string{"--trace", trace, "--catalog", cat, "--search-limit", "3"}, "--search-limit needs --choose-default"},
		{[]string{"--trace", trace, "--catalog", cat, "--choose-default", "--search-limit", "0"}, "--search-limit 0: want 1 to 20"},
		{[]string{"--trace", trace, "--catalog", cat, "--choose-default", "--search-limit", "21"}, "--search-limit 21: want 1 to 20"},
		{[]string{"--nope"}, "flag provided but not defined"},
	}
	for _, tt := range tests {
		_, stderr, code := runDeriveArgs(t, tt.args...)
		if code != 2 || !strings.Contains(stderr, tt.want) {
			t.Errorf("%v: exit %d, stderr %q, want 2 and %q", tt.args, code, stderr, tt.want)
		}
	}
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", filepath.Join(t.TempDir(), "none.json")); code != 1 || !strings.Contains(stderr, "none.json") {
		t.Errorf("missing catalog: exit %d, %s", code, stderr)
	}
}

// TestDeriveTelemetryEqualsTrace: the same sessions read from a trace or
// imported into telemetry give the same bytes.
func TestDeriveTelemetryEqualsTrace(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 60)
	tdir := importTrace(t, trace, filepath.Join(dir, "telemetry"), nil)
	fromTrace, fromTelemetry := filepath.Join(dir, "a.toml"), filepath.Join(dir, "b.toml")
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", fromTrace); code != 0 {
		t.Fatalf("trace: exit %d: %s", code, stderr)
	}
	if _, stderr, code := runDeriveArgs(t, "--telemetry", tdir, "--catalog", cat, "--out", fromTelemetry); code != 0 {
		t.Fatalf("telemetry: exit %d: %s", code, stderr)
	}
	a, _ := os.ReadFile(fromTrace)
	b, _ := os.ReadFile(fromTelemetry)
	if !bytes.Equal(a, b) {
		t.Errorf("trace and telemetry give different files:\n%s\n---\n%s", a, b)
	}
}

// The measured bytes and tokens derive writes for a profile are the sums of
// what profiler bench prices that profile's tools at as the gateway serves
// them (effect _meta included, under profiles.toml's [[effect]] rules),
// for every profile.
func TestDeriveMeasuredEqualsBenchServedCosts(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	policy := "version = 1\n\n[[effect]]\ntool = \"a\"\nkind = \"evaluate\"\nexternal = true\n\n[[effect]]\ntool = \"c\"\nkind = \"read\"\n"
	if err := os.WriteFile(filepath.Join(dir, "profiles.toml"), []byte(policy), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out); code != 0 {
		t.Fatalf("derive: exit %d: %s", code, stderr)
	}
	stdout, stderr, code := benchRun(t, "bench", "--catalog", cat, "--profiles", out, "--format", "json")
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	report := decodeBenchReport(t, stdout)
	served := map[string]exchange.ToolCost{}
	for _, c := range report.ToolCosts {
		served[c.Name] = c
	}
	f, err := profiles.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if len(f.Profiles) != 3 {
		t.Fatalf("derived %d profiles, want core, standard and full", len(f.Profiles))
	}
	for _, p := range f.Profiles {
		size, tokens := 0, 0
		for _, tool := range p.Tools {
			c, ok := served[tool]
			if !ok {
				t.Fatalf("bench priced no tool %q", tool)
			}
			size += c.Bytes
			tokens += c.Model[price.DefaultFamily]
		}
		if p.Measured == nil {
			t.Fatalf("profile %s: no [profile.measured]", p.Name)
		}
		if p.Measured.TokensO200k != tokens || p.Measured.Bytes != size {
			t.Errorf("profile %s %v: measured %d bytes, %d o200k tokens; bench's served entries %d bytes, %d tokens",
				p.Name, p.Tools, p.Measured.Bytes, p.Measured.TokensO200k, size, tokens)
		}
	}
}

// TestDeriveCheckWritesNothing: --check is documented to write nothing, so
// the --plot image and the --groups-report JSON asked for alongside it must
// not appear either.
func TestDeriveCheckWritesNothing(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	png, report := filepath.Join(dir, "frontier.png"), filepath.Join(dir, "groups.json")
	args := []string{"--trace", trace, "--catalog", cat, "--out", out, "--plot", png, "--groups", "--groups-report", report}
	if _, stderr, code := runDeriveArgs(t, append(args, "--check")...); code != 1 {
		t.Fatalf("check without file: exit %d, want 1: %s", code, stderr)
	}
	for _, p := range []string{out, png, report} {
		if _, err := os.Stat(p); err == nil {
			t.Errorf("--check wrote %s", filepath.Base(p))
		}
	}
	if _, stderr, code := runDeriveArgs(t, args...); code != 0 {
		t.Fatalf("write: exit %d: %s", code, stderr)
	}
	for _, p := range []string{out, png, report} {
		if _, err := os.Stat(p); err != nil {
			t.Errorf("without --check: %v", err)
		}
	}
}

// TestDeriveSummaryWithGroups: with --groups the written file holds the
// grouped profile, so the --summary markdown (the nightly pull request's
// body) must describe that file: it said "`lean`: profile removed" on every
// run after the first, while the grouped profile was kept.
func TestDeriveSummaryWithGroups(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	args := []string{"--trace", trace, "--catalog", cat, "--out", out, "--groups"}
	if _, stderr, code := runDeriveArgs(t, args...); code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := profiles.LoadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(f.Profiles, func(p profiles.Profile) bool { return p.Name == "lean" }) {
		t.Fatalf("fixture: no grouped profile lean in %s", out)
	}
	stdout, stderr, code := runDeriveArgs(t, append(args, "--summary", "markdown")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if strings.Contains(stdout, "`lean`: profile removed") {
		t.Errorf("summary says the kept grouped profile was removed:\n%s", stdout)
	}
	if !strings.Contains(stdout, "| `lean` |") {
		t.Errorf("summary has no row for the grouped profile lean:\n%s", stdout)
	}
}

// With a catalog that lacks tools the sessions call (another server
// version), derive refuses to write, names the tools and their share of
// calls, and with --force records the share in the provenance.
func TestDeriveRefusesMismatchedCatalog(t *testing.T) {
	var extra []string
	start := time.Date(2026, 3, 1, 0, 30, 0, 0, time.UTC)
	for i := range 20 {
		tool := "gone_a"
		if i%4 == 0 {
			tool = "gone_b"
		}
		extra = append(extra, fmt.Sprintf(`{"session":"x%d","started":%q,"calls":[{"tool":%q},{"tool":"get_operating_context"}]}`, i, start.Add(time.Duration(5*i)*time.Hour).Format(time.RFC3339), tool))
	}
	// 100 sessions make 120 calls to catalog tools; 20 more go to tools it
	// lacks: 20 of 140, 14.3%.
	dir, cat, trace := deriveFixture(t, 100, extra...)
	tdir := importTrace(t, trace, filepath.Join(dir, "telemetry"), nil)
	for _, input := range [][]string{{"--trace", trace}, {"--telemetry", tdir}} {
		t.Run(input[0], func(t *testing.T) {
			out := filepath.Join(t.TempDir(), "profiles.generated.toml")
			args := append(slices.Clone(input), "--catalog", cat, "--out", out)
			_, stderr, code := runDeriveArgs(t, args...)
			if code != 1 {
				t.Fatalf("exit %d, want 1: %s", code, stderr)
			}
			for _, want := range []string{"14.3% of 140 calls", "gone_a 10.7%, gone_b 3.6%", "--max-unknown-share 0.05", "another server version", "--force"} {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
			if _, err := os.Stat(out); err == nil {
				t.Errorf("%s written despite the refusal", out)
			}
			if _, stderr, code := runDeriveArgs(t, append(args, "--max-unknown-share", "0.2")...); code != 0 {
				t.Fatalf("--max-unknown-share 0.2: exit %d: %s", code, stderr)
			}
			os.Remove(out)
			if _, stderr, code := runDeriveArgs(t, append(args, "--force")...); code != 0 || !strings.Contains(stderr, "--force given: writing with 14.3% of calls") {
				t.Fatalf("--force: exit %d: %s", code, stderr)
			}
			f, err := profiles.LoadFile(out)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Contains(f.Provenance.Parameters, "calls.unknown_tool_share=0.1429") {
				t.Errorf("provenance parameters %v lack calls.unknown_tool_share=0.1429", f.Provenance.Parameters)
			}
			full := f.Profiles[len(f.Profiles)-1]
			if c := full.Measured.Coverage; full.Name != profiles.FullProfile || c == nil || *c >= 1 {
				t.Errorf("full coverage %v: want below 1, sessions calling tools the catalog lacks are not covered", c)
			}
		})
	}
}

// TestDeriveSearchPriors: --search writes the [search] priors, learned from
// the derive part (80 of the 100 sessions, 72 with a call), the same bytes on every run, and
// --check holds them to that; without it the file has none.
func TestDeriveSearchPriors(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	var files [][]byte
	for i, extra := range [][]string{{"--search"}, {"--search"}, nil} {
		out := filepath.Join(dir, fmt.Sprint(i), "profiles.generated.toml")
		os.MkdirAll(filepath.Dir(out), 0o755)
		args := append([]string{"--trace", trace, "--catalog", cat, "--out", out}, extra...)
		if _, stderr, code := runDeriveArgs(t, args...); code != 0 {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		if _, stderr, code := runDeriveArgs(t, append(args, "--check")...); code != 0 {
			t.Fatalf("--check after writing: exit %d: %s", code, stderr)
		}
		b, _ := os.ReadFile(out)
		files = append(files, b)
	}
	if !bytes.Equal(files[0], files[1]) {
		t.Fatalf("two runs differ:\n%s\n---\n%s", files[0], files[1])
	}
	f, err := profiles.DecodeFile(bytes.NewReader(files[0]), "generated")
	if err != nil {
		t.Fatalf("written file does not load: %v", err)
	}
	s := f.Search
	if s == nil || s.Sessions != 72 || len(s.Tools) == 0 || len(s.Pairs) == 0 {
		t.Fatalf("[search] = %+v, want priors from the 72 derive sessions with a call", s)
	}
	// The fixture's sets repeat every 10 sessions: a is used in 4 of the 9
	// with a call.
	if s.Tools[0].Name != "a" || s.Tools[0].Weight != 0.5556 {
		t.Errorf("first tool prior %+v, want a at 0.5556", s.Tools[0])
	}
	if bytes.Contains(files[2], []byte("[search]")) {
		t.Errorf("without --search the file has priors:\n%s", files[2])
	}
}

// TestDeriveChooseDefault: --choose-default makes the default the arm
// Choose picks on derive's held-out sessions, and says why; with no
// held-out sessions it writes nothing and says so.
func TestDeriveChooseDefault(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	stdout, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--search", "--groups", "--choose-default")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	f, err := profiles.Load(out)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(stdout, "Default arm for clients of protocol 2026-07-28, whose tool list never changes: ") || !strings.Contains(stdout, "`"+f.File.Default+"`") && f.File.Default != profiles.FullProfile {
		t.Errorf("default %q, report:\n%s", f.File.Default, stdout)
	}
	if !slices.Contains(f.File.Provenance.Parameters, "choose.served_target=0.95") || !slices.Contains(f.File.Provenance.Parameters, fmt.Sprintf("choose.search_limit=%d", toolsearch.DefaultLimit)) {
		t.Errorf("provenance %v lacks the target or the search limit", f.File.Provenance.Parameters)
	}
	limited := filepath.Join(dir, "limited.toml")
	stdout, stderr, code = runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", limited, "--search", "--groups", "--choose-default", "--search-limit", "2")
	if code != 0 {
		t.Fatalf("--search-limit 2: exit %d: %s", code, stderr)
	}
	if lf, err := profiles.Load(limited); err != nil || !slices.Contains(lf.File.Provenance.Parameters, "choose.search_limit=2") ||
		!strings.Contains(stdout, fmt.Sprintf("- search measured at find_tools' limit 2: the model chooses the limit of each find_tools call, and without one the gateway returns %d (", toolsearch.DefaultLimit)) {
		t.Errorf("--search-limit 2: %v, report:\n%s", err, stdout)
	}
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--search", "--groups", "--choose-default", "--check"); code != 0 {
		t.Errorf("--check after writing: exit %d: %s", code, stderr)
	}
	// The newest sessions call only a tool the catalog lacks: held out,
	// they need nothing any arm serves.
	var late []string
	start := time.Date(2027, 3, 1, 0, 0, 0, 0, time.UTC)
	for i := range 40 {
		late = append(late, fmt.Sprintf(`{"session":"late%d","client":{"name":"test","version":"1"},"started":%q,"calls":[{"tool":"zz"}]}`, i, start.Add(time.Duration(i)*time.Hour).Format(time.RFC3339)))
	}
	_, lateCat, lateTrace := deriveFixture(t, 100, late...)
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no held-out sessions", []string{"--trace", trace, "--catalog", cat, "--holdout", "0"}, "no held-out sessions"},
		{"no arm meets the target", []string{"--trace", lateTrace, "--catalog", lateCat, "--force"}, "no arm served to clients of protocol 2026-07-28 serves 0.95"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			none := filepath.Join(t.TempDir(), "none.toml")
			_, stderr, code := runDeriveArgs(t, append(tc.args, "--out", none, "--choose-default")...)
			if _, err := os.Stat(none); code != 1 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "nothing written") || err == nil {
				t.Errorf("exit %d, stat %v, stderr %s; want 1, nothing written and %q", code, err, stderr, tc.want)
			}
		})
	}
}

// TestDeriveChooseDefaultUnderPolicyDefault: a profiles.toml default is
// served over any chosen one, so --choose-default refuses it as a usage
// error naming the file, line and key, and writes nothing.
func TestDeriveChooseDefaultUnderPolicyDefault(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	policy := filepath.Join(dir, profiles.PolicyFile)
	if err := os.WriteFile(policy, []byte("version = 1\n\ndefault = \"core\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--search", "--choose-default")
	want := policy + `:3: default: profiles.toml's default "core" is served over any chosen one: remove the default key`
	if _, err := os.Stat(out); code != 2 || !strings.Contains(stderr, want) || err == nil {
		t.Errorf("exit %d, stat %v, stderr %s; want 2, nothing written and %q", code, err, stderr, want)
	}
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--search"); code != 0 {
		t.Errorf("without --choose-default: exit %d: %s", code, stderr)
	}
}
