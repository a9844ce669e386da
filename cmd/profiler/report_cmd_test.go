package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/bench/sessiongen"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/derive"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/report"
	"github.com/toolprof/toolprof/telemetry"
)

const (
	reportTrace    = "../../report/testdata/trace.jsonl"
	reportCatalog  = "../../report/testdata/catalog.json"
	reportProfiles = "../../report/testdata/profiles.generated.toml"
)

// runOK runs a profiler command and fails the test on an error.
func runOK(t *testing.T, args ...string) string {
	t.Helper()
	var out, errb bytes.Buffer
	if err := run(context.Background(), args, &out, &errb); err != nil {
		t.Fatalf("profiler %s: %v\n%s", strings.Join(args, " "), err, errb.String())
	}
	return out.String()
}

// statsJSON is profiler stats --format json on dir.
func statsJSON(t *testing.T, dir string) telemetry.Stats {
	t.Helper()
	var st telemetry.Stats
	if err := json.Unmarshal([]byte(runOK(t, "stats", "--telemetry", dir, "--format", "json")), &st); err != nil {
		t.Fatal(err)
	}
	return st
}

var (
	cellRE  = regexp.MustCompile(`(?s)<td[^>]*\bdata-k="([^"]*)"[^>]*>(.*?)</td>`)
	tagRE   = regexp.MustCompile(`(?s)<[^>]*>`)
	badgeRE = regexp.MustCompile(`(?s)<span class="badge">.*?</span>`)
	countRE = regexp.MustCompile(`<dd data-k="([^"]*)" data-v="[^"]*">([^<]*)</dd>`)
)

// visibleText is what a browser shows of an HTML fragment: its text, tags
// and the never-called badge left out, entities decoded.
func visibleText(s string) string {
	return strings.TrimSpace(html.UnescapeString(tagRE.ReplaceAllString(badgeRE.ReplaceAllString(s, ""), "")))
}

// htmlTable reads the rows of the table with id: per row, each cell's
// visible text by its data-k column key.
func htmlTable(t *testing.T, page, id string) []map[string]string {
	t.Helper()
	start := strings.Index(page, `<table id="`+id+`"`)
	if start < 0 {
		t.Fatalf("no table %q in the page", id)
	}
	end := strings.Index(page[start:], "</table>")
	body := page[start : start+end]
	var rows []map[string]string
	for _, tr := range strings.Split(body, "<tr")[2:] { // [0] before the header, [1] the header
		row := map[string]string{}
		for _, m := range cellRE.FindAllStringSubmatch(tr, -1) {
			row[m[1]] = visibleText(m[2])
		}
		rows = append(rows, row)
	}
	return rows
}

type statRow struct {
	Name            string
	Calls, Sessions string
}

func statRows(rows []telemetry.StatRow) []statRow {
	out := []statRow{}
	for _, r := range rows {
		out = append(out, statRow{r.Name, fmt.Sprint(r.Calls), fmt.Sprint(r.Sessions)})
	}
	return out
}

func pageRows(rows []map[string]string, keep func(map[string]string) bool) []statRow {
	out := []statRow{}
	for _, r := range rows {
		if keep == nil || keep(r) {
			out = append(out, statRow{r["name"], r["calls"], r["sessions"]})
		}
	}
	return out
}

// TestReportMatchesStats: the page's visible tables (counts, per tool, per
// outcome, per client) are profiler stats --format json of the same
// telemetry; per server, the declared tools are the catalog's, calls the
// sum over its tools, sessions the distinct sessions calling one; catalog
// tools never called are rows with 0 calls, marked.
func TestReportMatchesStats(t *testing.T) {
	cat, err := catalog.Load(reportCatalog)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		sessions int // of the fixture's, first ones kept; -1 all
	}{{"empty", 0}, {"one session", 1}, {"every session", -1}} {
		t.Run(tc.name, func(t *testing.T) {
			tdir := t.TempDir()
			if tc.sessions != 0 {
				trace := reportTrace
				if tc.sessions > 0 {
					b, err := os.ReadFile(reportTrace)
					if err != nil {
						t.Fatal(err)
					}
					lines := strings.SplitAfter(string(b), "\n")
					trace = filepath.Join(t.TempDir(), "trace.jsonl")
					if err := os.WriteFile(trace, []byte(strings.Join(lines[:tc.sessions], "")), 0o644); err != nil {
						t.Fatal(err)
					}
				}
				importTrace(t, trace, tdir, nil)
			}
			out := t.TempDir()
			runOK(t, "report", "--telemetry", tdir, "--catalog", reportCatalog, "--profiles", reportProfiles, "--out", out)
			b, err := os.ReadFile(filepath.Join(out, report.IndexFile))
			if err != nil {
				t.Fatal(err)
			}
			page := string(b)
			st := statsJSON(t, tdir)

			counts := map[string]string{}
			for _, m := range countRE.FindAllStringSubmatch(page, -1) {
				counts[m[1]] = m[2]
			}
			for k, want := range map[string]string{"sessions": fmt.Sprint(st.Sessions), "calls": fmt.Sprint(st.Calls),
				"dropped_events": fmt.Sprint(st.Dropped), "segments": fmt.Sprint(st.Segments)} {
				if counts[k] != want {
					t.Errorf("counts %s = %q, stats says %s", k, counts[k], want)
				}
			}
			if st.Since != nil && !strings.Contains(page, `data-k="since" data-v="`+st.Since.UTC().Format(time.RFC3339)+`"`) {
				t.Errorf("window start %s not on the page", st.Since)
			}

			tools := htmlTable(t, page, "tools")
			called := func(r map[string]string) bool { return r["calls"] != "0" }
			if got, want := pageRows(tools, called), statRows(st.Tools); !slices.Equal(got, want) {
				t.Errorf("tools table\n got %v\nwant %v (stats)", got, want)
			}
			if got, want := pageRows(htmlTable(t, page, "outcomes"), nil), statRows(st.Outcomes); !slices.Equal(got, want) {
				t.Errorf("outcomes table\n got %v\nwant %v", got, want)
			}
			if got, want := pageRows(htmlTable(t, page, "clients"), nil), statRows(st.Clients); !slices.Equal(got, want) {
				t.Errorf("clients table\n got %v\nwant %v", got, want)
			}
			calledTools := map[string]bool{}
			for _, r := range st.Tools {
				calledTools[r.Name] = true
			}
			never := 0
			for _, tool := range cat.Tools {
				if !calledTools[tool.Name] {
					never++
					if !strings.Contains(page, html.EscapeString(tool.Name)+` <span class="badge">never called</span>`) {
						t.Errorf("catalog tool %s, never called, is not marked", tool.Name)
					}
				}
			}
			if got := len(tools) - len(st.Tools); got != never {
				t.Errorf("%d rows for tools never called, want %d", got, never)
			}

			_, calls, err := telemetry.ReadAll(context.Background(), []string{tdir}, telemetry.Window{})
			if err != nil {
				t.Fatal(err)
			}
			type srv struct{ declared, calls, sessions int }
			want := map[string]*srv{}
			get := func(name string) *srv {
				if want[name] == nil {
					want[name] = &srv{}
				}
				return want[name]
			}
			for _, tool := range cat.Tools {
				get(report.ServerOf(tool.Name)).declared++
			}
			seen := map[string]bool{}
			for _, c := range calls {
				s := get(report.ServerOf(c.Tool))
				s.calls++
				if k := report.ServerOf(c.Tool) + "\x00" + c.Session; !seen[k] {
					seen[k] = true
					s.sessions++
				}
			}
			servers := htmlTable(t, page, "servers")
			if len(servers) != len(want) {
				t.Errorf("%d server rows, want %d", len(servers), len(want))
			}
			for _, r := range servers {
				w := want[r["name"]]
				if w == nil {
					t.Errorf("server row %q: no such server", r["name"])
					continue
				}
				if got := [3]string{r["tools_declared"], r["calls"], r["sessions"]}; got != [3]string{fmt.Sprint(w.declared), fmt.Sprint(w.calls), fmt.Sprint(w.sessions)} {
					t.Errorf("server %s: declared, calls, sessions = %v, want %v", r["name"], got, *w)
				}
			}
		})
	}
}

// TestReportEscapes: names from telemetry (a client, a tool) and catalog
// text never reach the page as markup.
func TestReportEscapes(t *testing.T) {
	tdir := importTrace(t, reportTrace, t.TempDir(), nil)
	out := t.TempDir()
	runOK(t, "report", "--telemetry", tdir, "--catalog", reportCatalog, "--out", out)
	b, err := os.ReadFile(filepath.Join(out, report.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"<img src=x", "<script>alert", "<b>Cannot"} {
		if bytes.Contains(b, []byte(bad)) {
			t.Errorf("the page holds %q unescaped", bad)
		}
	}
	if !bytes.Contains(b, []byte("gh__&lt;img src=x onerror=alert(1)&gt;")) {
		t.Error("the tool name from telemetry is not shown, escaped")
	}
}

// TestReportDenyLines: the profiles.toml lines the page offers, added to
// profiles.toml, take exactly the never-called tools out of their profiles
// and leave every called tool in.
func TestReportDenyLines(t *testing.T) {
	tdir := importTrace(t, reportTrace, t.TempDir(), nil)
	dir := t.TempDir()
	for _, name := range []string{"profiles.generated.toml", "profiles.toml"} {
		b, err := os.ReadFile(filepath.Join("../../report/testdata", name))
		if err != nil {
			t.Fatal(err)
		}
		if name == "profiles.toml" {
			b = []byte("version = 1\n") // the deny entries below are the whole policy
		}
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gen := filepath.Join(dir, "profiles.generated.toml")
	out := t.TempDir()
	runOK(t, "report", "--telemetry", tdir, "--catalog", reportCatalog, "--profiles", gen, "--out", out)
	b, err := os.ReadFile(filepath.Join(out, report.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, m := range regexp.MustCompile(`(?s)<pre class="deny"[^>]*>(.*?)</pre>`).FindAllStringSubmatch(string(b), -1) {
		lines = append(lines, html.UnescapeString(m[1]))
	}
	if len(lines) != 2 {
		t.Fatalf("%d deny entries, want 2 (core and standard hold mem__forget):\n%s", len(lines), strings.Join(lines, "\n"))
	}
	f, err := os.OpenFile(filepath.Join(dir, "profiles.toml"), os.O_APPEND|os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Fprintln(f, strings.Join(lines, "\n"))
	f.Close()
	set, err := profiles.Load(gen)
	if err != nil {
		t.Fatalf("the page's deny lines do not load: %v", err)
	}
	cat, err := catalog.Load(reportCatalog)
	if err != nil {
		t.Fatal(err)
	}
	res, err := set.Resolve(cat.Tools)
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][]string{
		"core":     {"fs__read_file", "mem__recall"},
		"standard": {"fs__read_file", "fs__write_file", "mem__recall"},
	} {
		if got := res.Profiles[name].Tools; !slices.Equal(got, want) {
			t.Errorf("%s after the deny lines: %v, want %v", name, got, want)
		}
	}
}

// TestReportSolverGrid: the page holds the solver's sets at derive
// --plot's grid of targets (its data block's solver_grid: target k/n,
// each covering the sessions its target asks for) and the frontier chart
// draws them as their own series, one glyph per point in the grid's
// colour and a legend entry naming the targets.
func TestReportSolverGrid(t *testing.T) {
	tdir := importTrace(t, reportTrace, t.TempDir(), nil)
	out := t.TempDir()
	runOK(t, "report", "--telemetry", tdir, "--catalog", reportCatalog, "--profiles", reportProfiles, "--out", out)
	b, err := os.ReadFile(filepath.Join(out, report.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	page := string(b)
	m := regexp.MustCompile(`(?s)<script type="application/json" id="report-data">(.*?)</script>`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no report-data block in the page")
	}
	var data report.Report
	if err := json.Unmarshal([]byte(m[1]), &data); err != nil {
		t.Fatal(err)
	}
	n := derive.PlotGridTargets
	if len(data.Grid) != n {
		t.Fatalf("solver_grid has %d points, want %d", len(data.Grid), n)
	}
	most := 0 // what the grid covers at best: a session calling a tool outside the catalog cannot be
	for _, g := range data.Grid {
		most = max(most, g.Covered)
	}
	for k, g := range data.Grid {
		if want := float64(k+1) / float64(n); math.Abs(g.Target-want) > 1e-12 {
			t.Errorf("point %d at target %v, want %v", k, g.Target, want)
		}
		if need := min(derive.Need(g.Target, data.Sessions), most); g.Covered < need || g.Tokens > data.FullTokens {
			t.Errorf("point %d: %d tokens covering %d sessions, want at least %d of %d within %d tokens", k, g.Tokens, g.Covered, need, data.Sessions, data.FullTokens)
		}
	}
	start := strings.Index(page, `<div class="chart" id="frontier">`)
	end := strings.Index(page[start:], "</div>")
	chart := page[start : start+end]
	c := derive.GridColor()
	fill := fmt.Sprintf("fill:#%02X%02X%02X", c.R, c.G, c.B)
	if got := strings.Count(chart, fill); got != n+1 {
		t.Errorf("the frontier chart has %d glyphs in the grid's colour (%s), want %d (one per point, one in the legend)", got, fill, n+1)
	}
	if !strings.Contains(chart, "solver at targets 0.05..1") {
		t.Error("the frontier chart's legend does not name the solver grid")
	}
}

// TestReportScale: 100k generated sessions make a page under 2 MB whose
// totals are profiler stats'.
func TestReportScale(t *testing.T) {
	if testing.Short() {
		t.Skip("100k sessions: not with -short")
	}
	dir := t.TempDir()
	names := sessiongen.ToolNames(120)
	var cat, trace bytes.Buffer
	if err := sessiongen.WriteCatalog(&cat, names, 1); err != nil {
		t.Fatal(err)
	}
	cfg := sessiongen.Config{Seed: 1, Sessions: 100_000, Tools: names, Spacing: 9 * time.Second}
	if err := sessiongen.WriteTrace(&trace, cfg); err != nil {
		t.Fatal(err)
	}
	catPath, tracePath, tdir := filepath.Join(dir, "catalog.json"), filepath.Join(dir, "trace.jsonl"), filepath.Join(dir, "telemetry")
	for p, b := range map[string][]byte{catPath: cat.Bytes(), tracePath: trace.Bytes()} {
		if err := os.WriteFile(p, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	runOK(t, "import", "--telemetry", tdir, tracePath)
	out := filepath.Join(dir, "report")
	runOK(t, "report", "--telemetry", tdir, "--catalog", catPath, "--out", out)
	fi, err := os.Stat(filepath.Join(out, report.IndexFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Size() >= 2<<20 {
		t.Errorf("page of 100k sessions is %d bytes, want under 2 MB", fi.Size())
	}
	b, _ := os.ReadFile(filepath.Join(out, report.IndexFile))
	st := statsJSON(t, tdir)
	if st.Sessions != 100_000 {
		t.Fatalf("stats: %d sessions, want 100000", st.Sessions)
	}
	if got, want := pageRows(htmlTable(t, string(b), "tools"), func(r map[string]string) bool { return r["calls"] != "0" }), statRows(st.Tools); !slices.Equal(got, want) {
		t.Errorf("tools table differs from stats at 100k sessions")
	}
	if days := htmlTable(t, string(b), "days"); len(days) != 11 {
		t.Errorf("%d days, want 11 (100k sessions 9 s apart)", len(days))
	}
	t.Logf("100k sessions: page %d bytes", fi.Size())
}

// browserCheck runs in the page, in Chromium: it reads the per-server and
// per-tool tables from the DOM, checks them against the page's JSON block,
// sorts the tools by tokens (descending, then ascending), and writes what
// it found into the DOM for --dump-dom.
const browserCheck = `<script>
(function () {
  function read(id) {
    var rows = [];
    document.getElementById(id).tBodies[0].querySelectorAll("tr").forEach(function (tr) {
      var o = {};
      Array.prototype.forEach.call(tr.cells, function (td) {
        o[td.getAttribute("data-k")] = td.childNodes.length ? td.childNodes[0].textContent.trim() : "";
      });
      rows.push(o);
    });
    return rows;
  }
  var data = JSON.parse(document.getElementById("report-data").textContent);
  var out = {servers: read("servers"), tools: read("tools"), problems: []};
  out.tools.forEach(function (r, i) {
    var d = data.tools[i];
    if (r.name !== d.name || r.calls !== String(d.calls) || r.sessions !== String(d.sessions) || r.tokens !== String(d.tokens))
      out.problems.push("tool row " + i + ": " + JSON.stringify(r) + " vs " + JSON.stringify(d));
  });
  out.servers.forEach(function (r, i) {
    var d = data.servers[i];
    if (r.name !== d.name || r.tools_declared !== String(d.tools_declared) || r.tools_used !== String(d.tools_used) || r.sessions !== String(d.sessions))
      out.problems.push("server row " + i + ": " + JSON.stringify(r) + " vs " + JSON.stringify(d));
  });
  var th = document.querySelectorAll("#tools thead th")[6];
  th.click();
  out.byTokensDesc = read("tools").map(function (r) { return r.name; });
  th.click();
  out.byTokensAsc = read("tools").map(function (r) { return r.name; });
  var pre = document.createElement("pre");
  pre.id = "browser-check";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
</body>`

// TestReportBrowser opens the page in headless Chromium from a file URL:
// the tables the DOM holds are stats' figures and the JSON block's, a
// click on a heading sorts the rows, and a screenshot is kept in
// out/report-test/ at the repository root.
func TestReportBrowser(t *testing.T) {
	chromium, err := exec.LookPath("chromium")
	if err != nil {
		t.Skip("chromium not installed (apt-get install -y chromium; .ci/run installs it)")
	}
	tdir := importTrace(t, reportTrace, t.TempDir(), nil)
	out := t.TempDir()
	runOK(t, "report", "--telemetry", tdir, "--catalog", reportCatalog, "--profiles", reportProfiles, "--out", out)
	index := filepath.Join(out, report.IndexFile)
	b, err := os.ReadFile(index)
	if err != nil {
		t.Fatal(err)
	}
	check := filepath.Join(out, "check.html")
	if err := os.WriteFile(check, bytes.Replace(b, []byte("</body>"), []byte(browserCheck), 1), 0o644); err != nil {
		t.Fatal(err)
	}
	browse := func(args ...string) []byte {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
		defer cancel()
		cmd := exec.CommandContext(ctx, chromium, append([]string{"--headless", "--disable-gpu", "--no-sandbox",
			"--user-data-dir=" + t.TempDir(), "--virtual-time-budget=5000"}, args...)...)
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		dom, err := cmd.Output()
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, stderr.String())
		}
		return dom
	}
	dom := browse("--dump-dom", "file://"+check)
	m := regexp.MustCompile(`(?s)<pre id="browser-check">(.*?)</pre>`).FindSubmatch(dom)
	if m == nil {
		t.Fatalf("the check script left no result in the DOM:\n%.2000s", dom)
	}
	var got struct {
		Servers, Tools            []map[string]string
		Problems                  []string
		ByTokensDesc, ByTokensAsc []string
	}
	if err := json.Unmarshal([]byte(html.UnescapeString(string(m[1]))), &got); err != nil {
		t.Fatal(err)
	}
	for _, p := range got.Problems {
		t.Errorf("in the browser: %s", p)
	}
	st := statsJSON(t, tdir)
	if rows, want := pageRows(got.Tools, func(r map[string]string) bool { return r["calls"] != "0" }), statRows(st.Tools); !slices.Equal(rows, want) {
		t.Errorf("tools in the DOM\n got %v\nwant %v (stats)", rows, want)
	}
	if len(got.Servers) != 3 {
		t.Errorf("%d server rows in the DOM, want 3 (fs, mem, gh)", len(got.Servers))
	}
	tokens := map[string]int{}
	for _, r := range got.Tools {
		var n int
		fmt.Sscan(r["tokens"], &n)
		tokens[r["name"]] = n
	}
	if len(got.ByTokensDesc) != len(got.Tools) || !slices.IsSortedFunc(got.ByTokensDesc, func(a, b string) int { return tokens[b] - tokens[a] }) {
		t.Errorf("one click on tokens: %v, want by tokens, most first (%v)", got.ByTokensDesc, tokens)
	}
	if !slices.IsSortedFunc(got.ByTokensAsc, func(a, b string) int { return tokens[a] - tokens[b] }) {
		t.Errorf("a second click: %v, want by tokens, fewest first", got.ByTokensAsc)
	}

	shots, err := filepath.Abs("../../out/report-test")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(shots, 0o755); err != nil {
		t.Fatal(err)
	}
	shot := filepath.Join(shots, "screenshot.png")
	os.Remove(shot)
	browse("--screenshot="+shot, "--window-size=1280,2400", "file://"+index)
	if fi, err := os.Stat(shot); err != nil || fi.Size() == 0 {
		t.Fatalf("no screenshot at %s: %v", shot, err)
	}
	t.Logf("screenshot: %s", shot)
}
