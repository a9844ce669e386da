// Package demo_test runs `make demo` from this checkout, as a newcomer
// would, and checks what it leaves behind for content.
package demo_test

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/catalog"
	"github.com/toolprof/toolprof/profiles"
	"github.com/toolprof/toolprof/telemetry"
)

// TestMakeDemo runs make demo with its binaries and outputs in a temporary
// directory (BIN and DEMO_OUT), so it neither needs nor touches bin/ and
// out/ of the checkout.
func TestMakeDemo(t *testing.T) {
	if _, err := exec.LookPath("make"); err != nil {
		t.Fatalf("make demo needs make: %v", err)
	}
	tmp := t.TempDir()
	bin, out := filepath.Join(tmp, "bin"), filepath.Join(tmp, "out")
	cmd := exec.Command("make", "demo", "BIN="+bin)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), "DEMO_OUT="+out)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("make demo: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}

	traceFile, err := os.Open("trace.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	trace, _, err := telemetry.DecodeTrace(traceFile, "trace.jsonl", false)
	traceFile.Close()
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	for _, s := range trace {
		calls += len(s.Calls)
	}

	t.Run("telemetry holds every replayed session and call", func(t *testing.T) {
		sessions, recorded, err := telemetry.ReadAll(context.Background(), []string{filepath.Join(out, "telemetry")}, telemetry.Window{})
		if err != nil {
			t.Fatal(err)
		}
		if len(sessions) != len(trace) || len(recorded) != calls {
			t.Errorf("telemetry: %d sessions, %d calls; the trace has %d sessions, %d calls", len(sessions), len(recorded), len(trace), calls)
		}
		clients := map[string]bool{}
		for _, s := range sessions {
			clients[s.ClientName] = true
		}
		for _, s := range trace {
			if !clients[s.Client.Name] {
				t.Errorf("no recorded session of client %q", s.Client.Name)
			}
		}
	})

	t.Run("the servers worked on the copies, not on demo/workspace", func(t *testing.T) {
		scratch, _ := filepath.Glob(filepath.Join(out, "workspace", "notes", "scratch-*.md"))
		if want := sessionsUsing(trace, "fs__write_file"); len(scratch) != want {
			t.Errorf("%d scratch notes in the workspace copy, want one per writing session: %d", len(scratch), want)
		}
		if leaked, _ := filepath.Glob(filepath.Join("workspace", "notes", "scratch-*.md")); len(leaked) > 0 {
			t.Errorf("the demo wrote into demo/workspace: %v", leaked)
		}
		if mem := readFile(t, filepath.Join(out, "memory.jsonl")); !strings.Contains(mem, `"acme-billing"`) {
			t.Errorf("memory.jsonl lacks the entity the trace creates:\n%s", mem)
		}
	})

	t.Run("every replayed call succeeded", func(t *testing.T) {
		summary := readFile(t, filepath.Join(out, "replay.txt"))
		want := regexp.MustCompile(`(\d+) calls, (\d+) ok, 0 tool_error, 0 denied, 0 unknown_tool, 0 error; 0 sessions could not be opened`)
		m := want.FindStringSubmatch(summary)
		if m == nil || m[1] != strconv.Itoa(calls) || m[2] != m[1] {
			t.Errorf("replay summary does not show all %d calls ok:\n%s", calls, summary)
		}
	})

	file, err := profiles.LoadFile(filepath.Join(out, "profiles.generated.toml"))
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*profiles.Profile{}
	for i := range file.Profiles {
		byName[file.Profiles[i].Name] = &file.Profiles[i]
	}

	t.Run("profiles are derived and measured", func(t *testing.T) {
		if !slices.Contains([]string{"core", "standard", "full"}, file.Default) {
			t.Errorf("default %q, want one of core, standard, full", file.Default)
		}
		prev := 0
		for _, name := range []string{"core", "standard", "full"} {
			p := byName[name]
			if p == nil {
				t.Fatalf("profile %s missing; file has %d profiles", name, len(file.Profiles))
			}
			m := p.Measured
			if m == nil || m.Sessions == 0 || m.HoldoutSessions == 0 || m.Coverage == nil || m.HoldoutCoverage == nil || m.TokensO200k == 0 || m.Tools != len(p.Tools) {
				t.Fatalf("profile %s: measured figures missing: %+v", name, m)
			}
			if m.Sessions+m.HoldoutSessions != len(trace) {
				t.Errorf("profile %s measured on %d+%d sessions, the trace has %d", name, m.Sessions, m.HoldoutSessions, len(trace))
			}
			if m.TokensO200k <= prev {
				t.Errorf("profile %s costs %d tokens, not more than the smaller profile's %d", name, m.TokensO200k, prev)
			}
			prev = m.TokensO200k
		}
		if *byName["core"].Measured.Coverage < 0.8 || *byName["standard"].Measured.Coverage < 0.95 {
			t.Errorf("coverage core %v standard %v, want at least their targets 0.8 and 0.95", *byName["core"].Measured.Coverage, *byName["standard"].Measured.Coverage)
		}
		// profiles.toml's decisions hold: core denies
		// everything__test_reconnection; the everything__test_trigger_* tools,
		// declared destructive there, are only in full; the filesystem
		// server's annotated destructive tools (write_file, edit_file,
		// move_file) are in no profile but standard (allow_destructive) and full.
		if slices.Contains(byName["core"].Tools, "everything__test_reconnection") {
			t.Error("core holds everything__test_reconnection, which profiles.toml denies")
		}
		for _, name := range []string{"core", "standard"} {
			for _, tool := range byName[name].Tools {
				if strings.HasPrefix(tool, "everything__test_trigger_") {
					t.Errorf("%s holds %s, declared destructive in profiles.toml", name, tool)
				}
				if name == "core" && slices.Contains([]string{"fs__write_file", "fs__edit_file", "fs__move_file"}, tool) {
					t.Errorf("core holds %s, annotated destructive", tool)
				}
			}
		}
		if !slices.Contains(byName["standard"].Tools, "fs__write_file") {
			t.Errorf("standard lacks fs__write_file, which %d%% of the sessions need and profiles.toml allows", 100*sessionsUsing(trace, "fs__write_file")/len(trace))
		}
		cat, err := catalog.Load(filepath.Join(out, "catalog.json"))
		if err != nil {
			t.Fatal(err)
		}
		servers := map[string]bool{}
		for _, name := range cat.Names() {
			server, _, _ := strings.Cut(name, "__")
			servers[server] = true
		}
		if got := len(byName["full"].Tools); got != len(cat.Tools) || len(servers) != 3 {
			t.Errorf("full holds %d tools of a %d-tool catalog from servers %v; want every tool of everything, fs and memory", got, len(cat.Tools), servers)
		}
		// demo/catalog.json is what make bench prices the committed
		// profiles.generated.toml against: it must be what the servers list.
		committed, err := catalog.Load("catalog.json") // the test runs in demo/
		if err != nil {
			t.Fatal(err)
		}
		if !catalog.Equal(cat, committed) {
			t.Error("demo/catalog.json differs from the catalog the demo's servers list: copy out/demo/catalog.json over it and rerun make bench")
		}
	})

	t.Run("report has each profile's tokens", func(t *testing.T) {
		rows := markdownRows(t, readFile(t, filepath.Join(out, "report.md")))
		prev := 0
		for _, name := range []string{"core", "standard", "full"} {
			row, ok := rows[name]
			if !ok {
				t.Fatalf("report has no row for %s: %v", name, rows)
			}
			// The headline measure: what a client sends the model.
			tokens, err := strconv.Atoi(row["model anthropic"])
			if err != nil || tokens <= prev {
				t.Errorf("%s: model anthropic %q, want a count above the smaller profile's %d", name, row["model anthropic"], prev)
			}
			if wire, err := strconv.Atoi(row["wire o200k"]); err != nil || wire <= tokens {
				t.Errorf("%s: wire o200k %q, want more than the model measure's %d (the wire carries JSON-RPC and _meta too)", name, row["wire o200k"], tokens)
			}
			prev = tokens
			// core and standard carry the instructions of profiles.toml.
			if instr, err := strconv.Atoi(row["instr (model)"]); name != "full" && (err != nil || instr == 0) {
				t.Errorf("%s: instr (model) %q, want the instructions of profiles.toml counted", name, row["instr (model)"])
			}
			if tools, _ := strconv.Atoi(row["tools"]); tools != len(byName[name].Tools) {
				t.Errorf("%s: report says %s tools, the profile has %d", name, row["tools"], len(byName[name].Tools))
			}
		}
		if !strings.Contains(stdout.String(), "| core |") {
			t.Error("make demo did not print the report")
		}
	})

	t.Run("frontier plot is a real PNG", func(t *testing.T) {
		b, err := os.ReadFile(filepath.Join(out, "frontier.png"))
		if err != nil {
			t.Fatal(err)
		}
		img, err := png.Decode(bytes.NewReader(b))
		if err != nil {
			t.Fatalf("frontier.png: %v", err)
		}
		if r := img.Bounds(); len(b) < 10_000 || r.Dx() < 300 || r.Dy() < 200 {
			t.Errorf("frontier.png is %d bytes, %dx%d: too small to hold a plot", len(b), r.Dx(), r.Dy())
		}
	})

	t.Run("the grouped profile offers groups, enable_tools when served, and expects fewer tokens than core", func(t *testing.T) {
		checkGroupedProfile(t, bin, out, file)
	})

	t.Run("make profiles regenerates the demo's file; profiles-check both arms", func(t *testing.T) {
		checkNightlyJob(t, bin, out)
	})

	t.Run("the example workflow's derive and price steps run", func(t *testing.T) {
		checkWorkflow(t, bin, out)
	})

	t.Run("rehearsal denies exactly the calls outside the default profile", func(t *testing.T) {
		def := byName[file.Default]
		denied := 0
		for _, s := range trace {
			for _, c := range s.Calls {
				if !slices.Contains(def.Tools, c.Tool) {
					denied++
				}
			}
		}
		summary := readFile(t, filepath.Join(out, "rehearsal.txt"))
		want := regexp.MustCompile(`(\d+) calls, (\d+) ok, 0 tool_error, (\d+) denied, 0 unknown_tool, 0 error`)
		m := want.FindStringSubmatch(summary)
		if m == nil || m[1] != strconv.Itoa(calls) || m[2] != strconv.Itoa(calls-denied) || m[3] != strconv.Itoa(denied) {
			t.Errorf("rehearsal: want %d calls, %d ok, %d denied under %s:\n%s", calls, calls-denied, denied, file.Default, summary)
		}
		if denied == 0 {
			t.Fatalf("no call of the trace falls outside %s: the rehearsal tests nothing", file.Default)
		}
		if !strings.Contains(summary, "denied by code: tool_not_in_profile "+strconv.Itoa(denied)) {
			t.Errorf("rehearsal does not name the envelope code:\n%s", summary)
		}
	})

	t.Run("check names the sessions the default profile would refuse", func(t *testing.T) {
		def := byName[file.Default]
		covered, refused := 0, map[string]string{} // session -> a tool it lacks
		for _, s := range trace {
			i := slices.IndexFunc(s.Calls, func(c telemetry.TraceCall) bool { return !slices.Contains(def.Tools, c.Tool) })
			if i < 0 {
				covered++
				continue
			}
			refused[s.Session] = s.Calls[i].Tool
		}
		check := readFile(t, filepath.Join(out, "check.txt"))
		want := fmt.Sprintf("%d sessions of demo/trace.jsonl against ", len(trace))
		tally := fmt.Sprintf(": %d covered (%.1f%%), %d refused: %d tool excluded from profile, 0 unknown tool, 0 unknown profile", covered, 100*float64(covered)/float64(len(trace)), len(refused), len(refused))
		if !strings.Contains(check, want) || !strings.Contains(check, tally) {
			t.Errorf("check.txt lacks %q ... %q:\n%s", want, tally, check)
		}
		for id, tool := range refused {
			if !regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(id) + `\s+` + regexp.QuoteMeta(file.Default) + `\s+\d+\s+excluded\s+excluded: .*` + regexp.QuoteMeta(tool)).MatchString(check) {
				t.Errorf("check.txt does not refuse %s for %s", id, tool)
			}
		}
	})

	t.Run("summary shows each profile's tools, tokens and held-out coverage", func(t *testing.T) {
		summary := readFile(t, filepath.Join(out, "summary.md"))
		for _, name := range []string{"core", "standard", "full"} {
			m := byName[name].Measured
			row := fmt.Sprintf("| `%s` | %d | %d | new | %.1f%% [%.1f, %.1f] |", name, m.Tools, m.TokensO200k, 100**m.HoldoutCoverage, 100*m.HoldoutCI[0], 100*m.HoldoutCI[1])
			if !strings.Contains(summary, row) {
				t.Errorf("summary.md lacks %q:\n%s", row, summary)
			}
		}
		if want := fmt.Sprintf("Learned from %d sessions", len(trace)); !strings.Contains(summary, want) {
			t.Errorf("summary.md lacks %q", want)
		}
	})
}

// checkNightlyJob runs the nightly job on the demo's telemetry: make
// profiles regenerates, byte for byte, the file the demo derived (same
// telemetry, catalog and policy), writes the summary, and make
// profiles-check passes on it and fails once it differs.
func checkNightlyJob(t *testing.T, bin, out string) {
	nightly := t.TempDir()
	if err := os.WriteFile(filepath.Join(nightly, "profiles.toml"), []byte(readFile(t, filepath.Join("..", "profiles.toml"))), 0o644); err != nil {
		t.Fatal(err)
	}
	generated, summary := filepath.Join(nightly, "profiles.generated.toml"), filepath.Join(nightly, "summary.md")
	vars := []string{"BIN=" + bin, "TELEMETRY=" + filepath.Join(out, "telemetry"), "CATALOG=" + filepath.Join(out, "catalog.json"), "PROFILES=" + generated, "SUMMARY=" + summary}
	mustMake(t, nil, append([]string{"profiles"}, vars...)...)
	if got, want := readFile(t, generated), readFile(t, filepath.Join(out, "profiles.generated.toml")); got != want {
		t.Errorf("make profiles wrote a different file than the demo's derive:\n%s\nwant:\n%s", got, want)
	}
	if s := readFile(t, summary); !strings.Contains(s, "| `core` |") || !strings.Contains(s, "| `standard` |") {
		t.Errorf("summary lacks the profile rows:\n%s", s)
	}
	mustMake(t, nil, append([]string{"profiles-check"}, vars...)...)

	if err := os.WriteFile(generated, []byte(readFile(t, generated)+"# edited by hand\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("make", append([]string{"-s", "profiles-check"}, vars...)...)
	cmd.Dir = ".."
	msg, err := cmd.CombinedOutput()
	if err == nil || !strings.Contains(string(msg), "differs from what derive would write now") {
		t.Errorf("profiles-check on an edited file: err %v, output:\n%s\nwant a failure saying it differs", err, msg)
	}
}

// workflowStep returns the run script of the step named name in the
// workflow text: the one line after "run:", or the block under "run: |"
// with its indentation removed.
func workflowStep(t *testing.T, workflow, name string) string {
	t.Helper()
	lines := strings.Split(workflow, "\n")
	at := slices.IndexFunc(lines, func(l string) bool { return strings.TrimSpace(l) == "- name: "+name })
	if at < 0 {
		t.Fatalf("the workflow has no step %q", name)
	}
	for i := at + 1; i < len(lines) && !strings.HasPrefix(strings.TrimSpace(lines[i]), "- "); i++ {
		trimmed := strings.TrimSpace(lines[i])
		script, ok := strings.CutPrefix(trimmed, "run:")
		if !ok {
			continue
		}
		if script = strings.TrimSpace(script); script != "|" {
			return script
		}
		indent := len(lines[i]) - len(strings.TrimLeft(lines[i], " ")) + 2
		var block []string
		for _, l := range lines[i+1:] {
			if strings.TrimSpace(l) != "" && len(l)-len(strings.TrimLeft(l, " ")) < indent {
				break
			}
			block = append(block, strings.TrimPrefix(l, strings.Repeat(" ", indent)))
		}
		return strings.Join(block, "\n")
	}
	t.Fatalf("step %q has no run", name)
	return ""
}

// checkWorkflow runs the two steps of .github/workflows/nightly-profiles.yml
// that use toolprof, on the demo's telemetry and catalog: "make profiles"
// with the workflow's own target and variables (each one the Makefile
// declares), redirected to temporary paths, then the pricing script as
// written, in a directory laid out as the workflow's checkout would be.
// The pull request body it assembles must hold the summary and the table.
func checkWorkflow(t *testing.T, bin, out string) {
	workflow := readFile(t, filepath.Join("..", ".github", "workflows", "nightly-profiles.yml"))
	makefile := readFile(t, filepath.Join("..", "Makefile"))
	work := t.TempDir()
	if err := os.MkdirAll(filepath.Join(work, "out"), 0o755); err != nil {
		t.Fatal(err)
	}

	derive := strings.Fields(workflowStep(t, workflow, "Derive profiles (make profiles)"))
	if len(derive) < 2 || derive[0] != "make" || derive[1] != "profiles" {
		t.Fatalf("derive step %q: want make profiles VAR=...", derive)
	}
	redirect := map[string]string{
		"TELEMETRY": filepath.Join(out, "telemetry"), "CATALOG": filepath.Join(out, "catalog.json"),
		"PROFILES": filepath.Join(work, "profiles.generated.toml"), "SUMMARY": filepath.Join(work, "out", "summary.md"),
	}
	args := []string{"profiles", "BIN=" + bin}
	for _, v := range derive[2:] {
		name, _, ok := strings.Cut(v, "=")
		if !ok || !regexp.MustCompile(`(?m)^`+regexp.QuoteMeta(name)+`\s*\?=`).MatchString(makefile) {
			t.Fatalf("derive step sets %q, which the Makefile does not declare", v)
		}
		to, ok := redirect[name]
		if !ok {
			t.Fatalf("derive step sets %s, which this test does not know where to point", name)
		}
		args = append(args, name+"="+to)
	}
	mustMake(t, nil, args...)

	// The checkout: bin/profiler, the committed catalog and the baseline.
	if err := os.Symlink(bin, filepath.Join(work, "bin")); err != nil {
		t.Fatal(err)
	}
	for from, to := range map[string]string{filepath.Join(out, "catalog.json"): "catalog.json", filepath.Join(out, "profiles.generated.toml"): filepath.Join("out", "baseline.toml")} {
		if err := os.WriteFile(filepath.Join(work, to), []byte(readFile(t, from)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cmd := exec.Command("bash", "-e", "-c", workflowStep(t, workflow, "Price them (profiler bench)"))
	cmd.Dir = work
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("price step: %v\n%s", err, msg)
	}
	body := readFile(t, filepath.Join(work, "out", "pr-body.md"))
	for _, want := range []string{"### toolprof: profiles.generated.toml", "| `core` |", "### Token cost of the initialize + tools/list exchange", "| core |"} {
		if !strings.Contains(body, want) {
			t.Errorf("pull request body lacks %q:\n%s", want, body)
		}
	}
}

func mustMake(t *testing.T, env []string, args ...string) {
	t.Helper()
	cmd := exec.Command("make", append([]string{"-s"}, args...)...)
	cmd.Dir = ".."
	cmd.Env = append(os.Environ(), env...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("make %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
}

// sessionsUsing counts the trace's sessions that call tool.
func sessionsUsing(trace []telemetry.TraceSession, tool string) int {
	n := 0
	for _, s := range trace {
		if slices.ContainsFunc(s.Calls, func(c telemetry.TraceCall) bool { return c.Tool == tool }) {
			n++
		}
	}
	return n
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// markdownRows reads a markdown table: first cell of each row -> column
// name -> cell.
func markdownRows(t *testing.T, md string) map[string]map[string]string {
	t.Helper()
	var header []string
	rows := map[string]map[string]string{}
	for _, line := range strings.Split(md, "\n") {
		if !strings.HasPrefix(line, "|") {
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case header == nil:
			header = cells
		case strings.HasPrefix(cells[0], "---"):
		default:
			row := map[string]string{}
			for i, c := range cells {
				if i < len(header) {
					row[header[i]] = c
				}
			}
			rows[cells[0]] = row
		}
	}
	if header == nil {
		t.Fatalf("no markdown table in:\n%s", md)
	}
	return rows
}
