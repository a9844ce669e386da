package main

import (
	"bytes"
	"context"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/bench"
	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/internal/testupstream"
	"github.com/toolprof/toolprof/price"
)

// Fixtures shared with the bench package's tests: three tools, and a
// profiles file whose "notes" profile names a tool the catalog lacks.
var (
	benchTinyCatalog  = filepath.Join("..", "..", "bench", "testdata", "tiny-catalog.json")
	benchTinyProfiles = filepath.Join("..", "..", "bench", "testdata", "profiles.generated.toml")
)

// benchRun runs the profiler as main does and returns its output and exit
// status.
func benchRun(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errOut bytes.Buffer
	err := run(context.Background(), args, &out, &errOut)
	code = exitCode(err, &errOut)
	return out.String(), errOut.String(), code
}

func decodeBenchReport(t *testing.T, s string) *bench.Report {
	t.Helper()
	r, err := bench.DecodeReport(strings.NewReader(s))
	if err != nil {
		t.Fatalf("%v in:\n%s", err, s)
	}
	return r
}

func TestBenchCommand(t *testing.T) {
	dir := t.TempDir()
	src := []string{"--catalog", benchTinyCatalog, "--profiles", benchTinyProfiles}
	with := func(extra ...string) []string { return append(append([]string{"bench"}, src...), extra...) }

	// A JSON report of this very run, as a baseline.
	out, stderr, code := benchRun(t, with("--format", "json")...)
	if code != 0 {
		t.Fatalf("json: exit %d: %s", code, stderr)
	}
	baseline := filepath.Join(dir, "before.json")
	if err := os.WriteFile(baseline, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	notesTokens := decodeBenchReport(t, out).Profile("notes").Tokens[price.O200kBase]

	// The tiny catalog without delete_note: not the catalog the profiles
	// file says it was derived on.
	tiny, err := catalog.Load(benchTinyCatalog)
	if err != nil {
		t.Fatal(err)
	}
	tiny.Tools = tiny.Tools[:2]
	twoTools := filepath.Join(dir, "two-tools.json")
	var twoBuf bytes.Buffer
	if err := tiny.Write(&twoBuf); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(twoTools, twoBuf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}

	tests := []struct {
		name       string
		args       []string
		wantCode   int
		wantOut    []string
		wantErr    []string
		checkJSON  func(t *testing.T, r *bench.Report)
		checkFiles func(t *testing.T)
	}{
		{name: "table with a missing tool reported", args: with(), wantOut: []string{
			"profile", "model anthropic", "wire o200k", "wire cl100k", "bytes/4 (estimate)", "notes", "reader", "full", "95.0%", "80.0%",
			`profile "notes" names 1 tool(s) the catalog lacks, measured without them: vanished_tool`},
			wantErr: []string{`warning: profile "notes" names tool "vanished_tool"`}},
		{name: "json", args: with("--format", "json"), checkJSON: func(t *testing.T, r *bench.Report) {
			var names []string
			for _, p := range r.Profiles {
				names = append(names, p.Name)
			}
			if !slices.Equal(names, []string{"notes", "reader", "full"}) || len(r.ToolCosts) != 3 {
				t.Errorf("profiles %v, %d tool costs", names, len(r.ToolCosts))
			}
			if !slices.Equal(r.Tokenizers, []string{"o200k_base", "cl100k_base"}) {
				t.Errorf("tokenizers %v", r.Tokenizers)
			}
			if n := r.Profile("notes"); n.Tools != 2 || n.InstructionsChars != 51 || *n.Coverage != 0.95 {
				t.Errorf("notes = %+v", n)
			}
		}},
		{name: "markdown", args: with("--format", "markdown"), wantOut: []string{"| profile | tools |", "| notes | 2 | 115 |", "- profile \"notes\" names 1 tool(s)"}},
		{name: "within budget", args: with("--max-tokens", "notes=100000", "--max-tokens", "full=100000"), wantOut: []string{"headroom"}},
		{name: "at budget exactly", args: with("--max-tokens", "notes="+strconv.Itoa(notesTokens))},
		{name: "over budget exits 1 naming the profile", args: with("--max-tokens", "notes=10", "--max-tokens", "full=100000"), wantCode: 1,
			wantOut: []string{"headroom"},
			wantErr: []string{`profile "notes" costs`, "over its budget of 10"}},
		{name: "bytes over budget exits 1", args: with("--max-bytes", "reader=100", "--max-tokens", "reader=100000"), wantCode: 1,
			wantOut: []string{"budget (wire bytes)", "headroom (bytes)", "budget (model)"},
			wantErr: []string{`profile "reader" costs`, "bytes,", "over its budget of 100"}},
		{name: "bytes within budget", args: with("--max-bytes", "reader=100000"), wantOut: []string{"headroom (bytes)"}},
		{name: "same budget twice", args: with("--max-bytes", "reader=1", "--max-bytes", "reader=2"), wantCode: 2, wantErr: []string{"already has a budget"}},
		{name: "baseline adds before and delta", args: with("--baseline", baseline, "--format", "markdown"),
			wantOut: []string{"model before", "delta %", "+0.0%"}},
		{name: "baseline from a profiles file", args: with("--baseline", benchTinyProfiles),
			wantOut: []string{"model entries before", "250", "new", "sums of the tools' own model entries"}},
		{name: "results document", args: with("--results", "--out", filepath.Join(dir, "RESULTS.md")), checkFiles: func(t *testing.T) {
			b, err := os.ReadFile(filepath.Join(dir, "RESULTS.md"))
			if err != nil {
				t.Fatal(err)
			}
			for _, want := range []string{"Generated by `profiler bench --catalog", " UTC.", "- Tools: catalog ", "tiny-catalog.json (3 tools, sha256:",
				"- Tokenizers: o200k_base, cl100k_base", "| notes |", "2025-11-25",
				"- Derived by hand-written test fixture from 25 sessions; method: none", "the catalog the profiles were derived on"} {
				if !strings.Contains(string(b), want) {
					t.Errorf("RESULTS.md lacks %q:\n%s", want, b)
				}
			}
		}},
		{name: "catalog other than the one derived on", args: []string{"bench", "--catalog", twoTools, "--profiles", benchTinyProfiles, "--results", "--out", filepath.Join(dir, "OTHER.md")},
			wantErr: []string{"was derived on catalog sha256:82a05212", "but catalog "},
			checkFiles: func(t *testing.T) {
				b, err := os.ReadFile(filepath.Join(dir, "OTHER.md"))
				if err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(string(b), "**the profiles were derived on another catalog, sha256:82a05212") {
					t.Errorf("OTHER.md does not flag the catalog mismatch:\n%s", b)
				}
			}},
		{name: "no source", args: []string{"bench"}, wantCode: 2, wantErr: []string{"no tool source"}},
		{name: "two sources", args: []string{"bench", "--catalog", benchTinyCatalog, "--", "true"}, wantCode: 2, wantErr: []string{"more than one tool source"}},
		{name: "bad format", args: with("--format", "xml"), wantCode: 2, wantErr: []string{`--format "xml": want table, markdown or json`}},
		{name: "bad budget value", args: with("--max-tokens", "notes=lots"), wantCode: 2, wantErr: []string{`"notes=lots"`, "whole number"}},
		{name: "budget without name", args: with("--max-tokens", "500"), wantCode: 2, wantErr: []string{"want NAME=N"}},
		{name: "budget for unknown profile", args: with("--max-tokens", "writer=500"), wantCode: 2, wantErr: []string{`"writer"`, "notes, reader, full"}},
		{name: "persona without launch", args: with("--persona", "dev"), wantCode: 2, wantErr: []string{"--persona needs --launch"}},
		{name: "missing catalog", args: []string{"bench", "--catalog", filepath.Join(dir, "nope.json")}, wantCode: 1, wantErr: []string{"nope.json"}},
		{name: "no profiles file by default: full only", args: []string{"bench", "--catalog", benchTinyCatalog, "--format", "json"},
			wantErr: []string{"no profiles.generated.toml here: measuring the full catalog only"},
			checkJSON: func(t *testing.T, r *bench.Report) {
				if len(r.Profiles) != 1 || r.Profiles[0].Name != "full" || r.Profiles[0].Tools != 3 {
					t.Errorf("profiles = %+v, want full alone with 3 tools", r.Profiles)
				}
			}},
		{name: "missing profiles", args: []string{"bench", "--catalog", benchTinyCatalog, "--profiles", filepath.Join(dir, "nope.toml")}, wantCode: 1, wantErr: []string{"nope.toml"}},
		{name: "bad baseline", args: with("--baseline", benchTinyCatalog), wantCode: 1, wantErr: []string{"baseline", "tiny-catalog.json"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, stderr, code := benchRun(t, tc.args...)
			if code != tc.wantCode {
				t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, tc.wantCode, out, stderr)
			}
			for _, w := range tc.wantOut {
				if !strings.Contains(out, w) {
					t.Errorf("stdout lacks %q:\n%s", w, out)
				}
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			if tc.checkJSON != nil {
				tc.checkJSON(t, decodeBenchReport(t, out))
			}
			if tc.checkFiles != nil {
				tc.checkFiles(t)
			}
		})
	}
}

// TestCatalogAndBenchAgainstEverythingServer runs both commands against the
// real everything-server: the dump holds its tools, and pricing the dump
// gives exactly the figures of measuring the live server, because the same
// gateway code serves both; started from a launch document, it serves the
// same tools at the same cost.
func TestCatalogAndBenchAgainstEverythingServer(t *testing.T) {
	server := testupstream.EverythingServer(t)
	dir := t.TempDir()
	dump := filepath.Join(dir, "everything.json")
	pack := filepath.Join(dir, ".mcp.json")
	packJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": server}}})
	if err := os.WriteFile(pack, packJSON, 0o644); err != nil {
		t.Fatal(err)
	}

	_, stderr, code := benchRun(t, "catalog", "--out", dump, "--", server)
	if code != 0 {
		t.Fatalf("catalog: exit %d: %s", code, stderr)
	}
	cat, err := catalog.Load(dump)
	if err != nil {
		t.Fatal(err)
	}
	got, want := cat.Names(), slices.Clone(testupstream.EverythingTools)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Errorf("catalog tools %v, want %v", got, want)
	}
	out, stderr, code := benchRun(t, "catalog", "--launch", pack)
	if code != 0 {
		t.Fatalf("catalog --launch: exit %d: %s", code, stderr)
	}
	fromLaunch, err := catalog.Decode(strings.NewReader(out))
	if err != nil || !catalog.Equal(fromLaunch, cat) {
		t.Errorf("catalog --launch differs from catalog -- CMD (%v)", err)
	}

	live, stderr, code := benchRun(t, "bench", "--format", "json", "--", server)
	if code != 0 {
		t.Fatalf("bench live: exit %d: %s", code, stderr)
	}
	r := decodeBenchReport(t, live)
	if full := r.Profile("full"); full == nil || full.Tools != len(testupstream.EverythingTools) || full.Tokens[price.O200kBase] == 0 {
		t.Fatalf("live full profile = %+v", full)
	}
	for _, args := range [][]string{
		{"bench", "--format", "json", "--catalog", dump},
		{"bench", "--format", "json", "--launch", pack},
		{"bench", "--format", "json", "--paginate", "--page-size", "5", "--catalog", dump},
	} {
		out, stderr, code := benchRun(t, args...)
		if code != 0 {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		other := decodeBenchReport(t, out)
		// Every source lists the same tools, served entry for entry alike.
		costs, _ := json.Marshal(other.ToolCosts)
		liveCosts, _ := json.Marshal(r.ToolCosts)
		if string(costs) != string(liveCosts) {
			t.Errorf("%v: tool costs differ from the live server's:\n%s\nlive:\n%s", args, costs, liveCosts)
		}
		if args[3] == "--launch" {
			// A launch document's upstream set also relays prompts and
			// resources, so its initialize result advertises more: only the
			// tools are compared.
			continue
		}
		if args[3] == "--paginate" {
			// Six pages of five: more requests, the same tools.
			if p := other.Profile("full"); p.Tools != r.Profile("full").Tools || p.Bytes <= r.Profile("full").Bytes {
				t.Errorf("paged: %d tools in %d bytes; live unpaged %d tools in %d bytes", p.Tools, p.Bytes, r.Profile("full").Tools, r.Profile("full").Bytes)
			}
			continue
		}
		if out != live {
			t.Errorf("%v gives a different report from the live server:\n%s\nlive:\n%s", args, out, live)
		}
	}

	for _, tc := range []struct {
		args    []string
		wantErr string
	}{
		{[]string{"catalog"}, "no tool source"},
		{[]string{"catalog", "--catalog", dump}, "flag provided but not defined: -catalog"},
		{[]string{"catalog", "--launch", pack, "--", server}, "more than one tool source"},
	} {
		if _, stderr, code := benchRun(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.wantErr) {
			t.Errorf("%v: exit %d, stderr %q; want 2 and %q", tc.args, code, stderr, tc.wantErr)
		}
	}
	if _, stderr, code := benchRun(t, "catalog", "--", filepath.Join(dir, "no-such-server")); code != 1 || !strings.Contains(stderr, "no-such-server") {
		t.Errorf("unstartable upstream: exit %d, stderr %q", code, stderr)
	}
}

// TestCatalogFollowsPagination dumps a live upstream that pages its
// tools/list (two tools a page) over streamable HTTP on 127.0.0.1, reached
// through a launch document: every page is followed, and bench prices the
// same tools.
func TestCatalogFollowsPagination(t *testing.T) {
	tiny, err := catalog.Load(benchTinyCatalog)
	if err != nil {
		t.Fatal(err)
	}
	srv := mcp.NewServer(&mcp.Implementation{Name: "paging-upstream", Version: "1"}, &mcp.ServerOptions{PageSize: 2})
	for _, tool := range tiny.Tools {
		srv.AddTool(tool, func(context.Context, *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: "ok"}}}, nil
		})
	}
	var lists atomic.Int32
	srv.AddReceivingMiddleware(func(next mcp.MethodHandler) mcp.MethodHandler {
		return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
			if method == "tools/list" {
				lists.Add(1)
			}
			return next(ctx, method, req)
		}
	})
	hs := httptest.NewServer(mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return srv }, nil))
	defer hs.Close()
	pack := filepath.Join(t.TempDir(), ".mcp.json")
	packJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"paging": map[string]any{"type": "http", "url": hs.URL}}})
	if err := os.WriteFile(pack, packJSON, 0o644); err != nil {
		t.Fatal(err)
	}

	out, stderr, code := benchRun(t, "catalog", "--launch", pack)
	if code != 0 {
		t.Fatalf("catalog: exit %d: %s", code, stderr)
	}
	got, err := catalog.Decode(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if !catalog.Equal(got, tiny) {
		t.Errorf("dumped %v, want all of %v", got.Names(), tiny.Names())
	}
	if n := lists.Load(); n < 2 {
		t.Errorf("upstream answered %d tools/list requests; paging two a page needs at least 2", n)
	}

	out, stderr, code = benchRun(t, "bench", "--format", "json", "--launch", pack)
	if code != 0 {
		t.Fatalf("bench: exit %d: %s", code, stderr)
	}
	if full := decodeBenchReport(t, out).Profile("full"); full.Tools != len(tiny.Tools) {
		t.Errorf("bench over the paging upstream served %d tools, want %d", full.Tools, len(tiny.Tools))
	}
}

// TestBenchProfileWhollyMissingFromCatalog: a profile none of whose tools
// the catalog has is measured (an exchange with no tools), reported with
// the tools it lacks, and the run exits 0.
func TestBenchProfileWhollyMissingFromCatalog(t *testing.T) {
	set := writeTemp(t, "profiles.generated.toml", `version = 1
default = "reader"

[[profile]]
name = "reader"
tools = ["read_note"]

[[profile]]
name = "gone"
tools = ["vanished_tool", "other_vanished"]
`)
	out, stderr, code := benchRun(t, "bench", "--catalog", benchTinyCatalog, "--profiles", set, "--format", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	r := decodeBenchReport(t, out)
	gone := r.Profile("gone")
	if gone == nil || gone.Tools != 0 || gone.Bytes == 0 || gone.Tokens[price.O200kBase] >= r.Profile("reader").Tokens[price.O200kBase] {
		t.Fatalf("gone = %+v, want measured with 0 tools and cheaper than reader", gone)
	}
	if !strings.Contains(stderr, `profile "gone" names tool "vanished_tool" that no upstream offers`) {
		t.Errorf("stderr lacks the warning:\n%s", stderr)
	}
	table, _, code := benchRun(t, "bench", "--catalog", benchTinyCatalog, "--profiles", set)
	if want := `profile "gone" names 2 tool(s) the catalog lacks, measured without them: other_vanished, vanished_tool`; code != 0 || !strings.Contains(table, want) {
		t.Errorf("table (exit %d) lacks %q:\n%s", code, want, table)
	}
}

// TestCatalogLaunchLingeringServerExitsZero: a launch document's server
// that does not exit when its stdin closes (a shell running the real
// everything-server, then sleeping) is stopped by the profiler once the
// work is done, and that is no failure: catalog and bench exit 0.
func TestCatalogLaunchLingeringServerExitsZero(t *testing.T) {
	server := testupstream.EverythingServer(t)
	pack := filepath.Join(t.TempDir(), ".mcp.json")
	packJSON, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"everything": map[string]any{"command": "sh", "args": []string{"-c", `"$0"; exec sleep 60`, server}}}})
	if err := os.WriteFile(pack, packJSON, 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{{"catalog", "--launch", pack}, {"bench", "--format", "json", "--launch", pack}} {
		out, stderr, code := benchRun(t, args...)
		if code != 0 || out == "" {
			t.Errorf("%v: exit %d, %d bytes out; stderr:\n%s", args, code, len(out), stderr)
		}
	}
}

// TestLaunchDocumentWithoutServers: an empty mcpServers is refused with the
// server's own words, not as a missing tools array.
func TestLaunchDocumentWithoutServers(t *testing.T) {
	pack := filepath.Join(t.TempDir(), ".mcp.json")
	if err := os.WriteFile(pack, []byte(`{"mcpServers": {}}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"catalog", "bench"} {
		_, stderr, code := benchRun(t, cmd, "--launch", pack)
		if code != 1 || !strings.Contains(stderr, "--launch "+pack+": declares no servers") || strings.Contains(stderr, `"tools"`) {
			t.Errorf("%s: exit %d, stderr %q; want 1 and \"declares no servers\"", cmd, code, stderr)
		}
	}
}

// TestBenchIconsFlag: bench --icons drop prices the profiles as a server
// started with --icons drop serves them, without icons on the wire; a
// value other than keep or drop is a usage error.
func TestBenchIconsFlag(t *testing.T) {
	cat, err := catalog.Load(benchTinyCatalog)
	if err != nil {
		t.Fatal(err)
	}
	for _, tool := range cat.Tools {
		tool.Icons = []mcp.Icon{{Source: "data:image/png;base64," + strings.Repeat("iVBORw0KGgoAAAANSUhEUgAA", 40), MIMEType: "image/png"}}
	}
	path := filepath.Join(t.TempDir(), "icons.json")
	b, err := json.Marshal(map[string]any{"tools": cat.Tools})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	icons := map[string]int{}
	for _, flag := range []string{"keep", "drop"} {
		out, stderr, code := benchRun(t, "bench", "--catalog", path, "--format", "json", "--icons", flag)
		if code != 0 {
			t.Fatalf("--icons %s: exit %d: %s", flag, code, stderr)
		}
		icons[flag] = decodeBenchReport(t, out).Profile("full").IconTokens[price.O200kBase]
	}
	if icons["keep"] < 3*100 || icons["drop"] != 0 {
		t.Errorf("full's icons priced at %d o200k_base tokens kept, %d dropped; want the icons', then 0", icons["keep"], icons["drop"])
	}
	if _, stderr, code := benchRun(t, "bench", "--catalog", path, "--icons", "strip"); code != 2 || !strings.Contains(stderr, `--icons "strip": want keep or drop`) {
		t.Errorf("--icons strip: exit %d, %s; want 2 naming the value and what is valid", code, stderr)
	}
}
