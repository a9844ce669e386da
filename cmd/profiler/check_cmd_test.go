package main

import (
	"bytes"
	"context"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/telemetry"
)

// checkFixture writes a profiles file, its policy, a catalog and a trace
// covering every verdict, and returns their paths.
func checkFixture(t *testing.T) (profilesPath, catalogPath, tracePath string) {
	t.Helper()
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	profilesPath = write("profiles.generated.toml", `version = 1
default = "core"
[[profile]]
name = "core"
tools = ["read_file", "write_file"]
[[profile]]
name = "standard"
tools = ["read_file", "write_file", "list_dir"]
`)
	write("profiles.toml", `version = 1
[[profile]]
name = "search"
pin = ["grep"]
`)
	catalogPath = write("catalog.json", `{"tools": [
 {"name": "read_file", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
 {"name": "write_file", "inputSchema": {"type": "object"}},
 {"name": "list_dir", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
 {"name": "grep", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
 {"name": "delete_file", "inputSchema": {"type": "object"}, "annotations": {"destructiveHint": true}}
]}`)
	tracePath = write("trace.jsonl", strings.Join([]string{
		`{"session": "s-covered", "client": {"name": "c"}, "calls": [{"tool": "read_file"}, {"tool": "write_file"}]}`,
		`{"session": "s-excluded", "client": {"name": "c"}, "calls": [{"tool": "read_file"}, {"tool": "list_dir"}, {"tool": "delete_file"}, {"tool": "list_dir"}]}`,
		`{"session": "s-unknown", "client": {"name": "c"}, "calls": [{"tool": "read_file"}, {"tool": "nope_tool"}]}`,
		`{"session": "s-named", "client": {"name": "c"}, "profile": "standard", "calls": [{"tool": "list_dir"}]}`,
		`{"session": "s-policy", "client": {"name": "c"}, "profile": "search", "calls": [{"tool": "grep"}]}`,
		`{"session": "s-gone", "client": {"name": "c"}, "profile": "gone", "calls": [{"tool": "read_file"}]}`,
		`{"session": "s-both", "client": {"name": "c"}, "calls": [{"tool": "list_dir"}, {"tool": "nope_tool"}]}`,
		`{"session": "s-empty", "client": {"name": "c"}, "calls": []}`,
	}, "\n")+"\n")
	return profilesPath, catalogPath, tracePath
}

// rowOf returns the table row of a session, blanks collapsed.
func rowOf(out, session string) string {
	for _, line := range strings.Split(out, "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && f[0] == session {
			return strings.Join(f, " ")
		}
	}
	return ""
}

func TestCheckCommand(t *testing.T) {
	profilesPath, catalogPath, tracePath := checkFixture(t)
	dir := filepath.Dir(profilesPath)
	badTrace := filepath.Join(dir, "bad.jsonl")
	if err := os.WriteFile(badTrace, []byte("{\"session\": \"a\", \"calls\": [{\"tool\": \"read_file\"}]}\nnot json\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	goodTrace := filepath.Join(dir, "good.jsonl")
	if err := os.WriteFile(goodTrace, []byte("{\"session\": \"g\", \"calls\": [{\"tool\": \"delete_file\"}]}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantErr  string            // substring of the error
		rows     map[string]string // session -> exact row (blanks collapsed); "" = absent
		summary  string            // substring of stdout
		stderr   string            // substring of stderr
	}{
		{
			name: "with catalog",
			args: []string{"--profiles", profilesPath, "--trace", tracePath, "--catalog", catalogPath},
			rows: map[string]string{
				"s-covered":  "s-covered core 2 covered",
				"s-excluded": "s-excluded core 4 excluded excluded: list_dir (in full, standard); delete_file (in full)",
				"s-unknown":  "s-unknown core 2 unknown-tool unknown: nope_tool",
				"s-named":    "s-named standard 1 covered",
				"s-policy":   "s-policy search 1 covered",
				"s-gone":     "s-gone gone 1 unknown-profile no profile \"gone\"; valid profiles: core, full, search, standard",
				"s-both":     "s-both core 2 excluded excluded: list_dir (in full, standard) | unknown: nope_tool",
				"s-empty":    "s-empty core 0 covered",
			},
			summary: "8 sessions of " + tracePath + " against " + profilesPath + ": 4 covered (50.0%), 4 refused: 2 tool excluded from profile, 1 unknown tool, 1 unknown profile\ncovered per profile: core 2/5, gone 0/1, search 1/1, standard 1/1\n",
		},
		{
			name: "without catalog the profile lists are the universe",
			args: []string{"--profiles", profilesPath, "--trace", tracePath},
			rows: map[string]string{
				"s-covered":  "s-covered core 2 covered",
				"s-excluded": "s-excluded core 4 excluded excluded: list_dir (in full, standard) | unknown: delete_file",
				"s-unknown":  "s-unknown core 2 unknown-tool unknown: nope_tool",
			},
			stderr: "no --catalog: the offered tools are taken to be the 4 named in",
		},
		{
			name:    "profile override",
			args:    []string{"--profiles", profilesPath, "--trace", tracePath, "--catalog", catalogPath, "--profile", "full"},
			rows:    map[string]string{"s-excluded": "s-excluded full 4 covered", "s-gone": "s-gone full 1 covered", "s-unknown": "s-unknown full 2 unknown-tool unknown: nope_tool"},
			summary: "6 covered (75.0%), 2 refused: 0 tool excluded from profile, 2 unknown tool",
		},
		{
			name:    "refused only",
			args:    []string{"--profiles", profilesPath, "--trace", tracePath, "--catalog", catalogPath, "--refused-only"},
			rows:    map[string]string{"s-covered": "", "s-empty": "", "s-unknown": "s-unknown core 2 unknown-tool unknown: nope_tool"},
			summary: "4 covered (50.0%)",
		},
		{
			name:     "strict exits 1 when refused",
			args:     []string{"--profiles", profilesPath, "--trace", tracePath, "--catalog", catalogPath, "--strict"},
			wantCode: 1,
			wantErr:  "4 of 8 sessions would be refused (--strict)",
			summary:  "4 refused",
		},
		{
			name:    "strict exits 0 when all covered",
			args:    []string{"--profiles", profilesPath, "--trace", goodTrace, "--catalog", catalogPath, "--strict", "--profile", "full"},
			rows:    map[string]string{"g": "g full 1 covered"},
			summary: "1 covered (100.0%), 0 refused",
		},
		{name: "no profiles flag", args: []string{"--trace", tracePath}, wantCode: 2, wantErr: "--profiles FILE is required"},
		{name: "no trace flag", args: []string{"--profiles", profilesPath}, wantCode: 2, wantErr: "--trace FILE.jsonl is required"},
		{name: "bad flag", args: []string{"--profiles", profilesPath, "--trace", tracePath, "--bogus"}, wantCode: 2, wantErr: "flag provided but not defined"},
		{name: "extra argument", args: []string{"--profiles", profilesPath, "--trace", tracePath, "x"}, wantCode: 2, wantErr: `unexpected argument "x"`},
		{name: "unknown profile flag", args: []string{"--profiles", profilesPath, "--trace", tracePath, "--profile", "nope"}, wantCode: 2, wantErr: `--profile "nope": no such profile; valid profiles: core, full, search, standard`},
		{name: "missing profiles file", args: []string{"--profiles", filepath.Join(dir, "missing.toml"), "--trace", tracePath}, wantCode: 1, wantErr: "missing.toml: no such file"},
		{name: "missing trace", args: []string{"--profiles", profilesPath, "--trace", filepath.Join(dir, "none.jsonl")}, wantCode: 1, wantErr: "none.jsonl: no such file"},
		{name: "missing catalog", args: []string{"--profiles", profilesPath, "--trace", tracePath, "--catalog", filepath.Join(dir, "nocat.json")}, wantCode: 1, wantErr: "nocat.json"},
		{name: "malformed trace line", args: []string{"--profiles", profilesPath, "--trace", badTrace}, wantCode: 1, wantErr: badTrace + ":2:"},
		{name: "malformed trace line says how to skip it", args: []string{"--profiles", profilesPath, "--trace", badTrace}, wantCode: 1, wantErr: "nothing checked (first " + badTrace + ":2: not a session object", stderr: "check: " + badTrace + ":2:"},
		{name: "malformed trace line names check's --skip-bad", args: []string{"--profiles", profilesPath, "--trace", badTrace}, wantCode: 1, wantErr: "pass --skip-bad to check the rest"},
		{
			name:    "malformed trace line skipped",
			args:    []string{"--profiles", profilesPath, "--trace", badTrace, "--skip-bad"},
			rows:    map[string]string{"a": "a core 1 covered"},
			summary: "1 sessions of",
			stderr:  "check: skipped " + badTrace + ":2:",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"check"}, tt.args...), &stdout, &stderr)
			if code := exitCode(err, io.Discard); code != tt.wantCode {
				t.Fatalf("exit %d (err %v), want %d\nstderr: %s", code, err, tt.wantCode, stderr.String())
			}
			if tt.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tt.wantErr)) {
				t.Fatalf("err = %v, want containing %q", err, tt.wantErr)
			}
			out := stdout.String()
			for session, want := range tt.rows {
				if got := rowOf(out, session); got != want {
					t.Errorf("row %s:\n got %q\nwant %q", session, got, want)
				}
			}
			if !strings.Contains(out, tt.summary) {
				t.Errorf("stdout lacks %q:\n%s", tt.summary, out)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr lacks %q:\n%s", tt.stderr, stderr.String())
			}
			if tt.wantCode == 0 && !regexp.MustCompile(`(?m)^SESSION +PROFILE +CALLS +VERDICT +DETAIL$`).MatchString(out) {
				t.Errorf("no table header in:\n%s", out)
			}
		})
	}
}

// TestCheckGroupedProfile: in a profile that offers tool groups the gateway
// serves enable_tools itself and, once a group is switched on, the group's
// tools. check counts enable_tools as served and a group's tools as
// covered once the group may have been switched on.
func TestCheckGroupedProfile(t *testing.T) {
	profilesPath := writeTemp(t, "profiles.generated.toml", `version = 1
default = "lean"
[[profile]]
name = "lean"
tools = ["read_file"]
groups = ["edit", "dirs"]
[[profile]]
name = "core"
tools = ["read_file"]
[[group]]
name = "edit"
description = "edit files"
tools = ["write_file"]
[[group]]
name = "dirs"
description = "directories"
tools = ["list_dir"]
`)
	catalogPath := writeTemp(t, "catalog.json", `{"tools": [
 {"name": "read_file", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
 {"name": "write_file", "inputSchema": {"type": "object"}},
 {"name": "list_dir", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}}
]}`)
	tracePath := writeTemp(t, "trace.jsonl", strings.Join([]string{
		// Exported telemetry: no arguments, so the group switched on is unknown.
		`{"session": "s-switched", "client": {"name": "c"}, "calls": [{"tool": "enable_tools"}, {"tool": "write_file"}]}`,
		// Before any switch the gateway refuses a group's tool.
		`{"session": "s-early", "client": {"name": "c"}, "calls": [{"tool": "write_file"}, {"tool": "enable_tools"}]}`,
		// A replay trace names the group: only its tools are switched on.
		`{"session": "s-named", "client": {"name": "c"}, "calls": [{"tool": "enable_tools", "arguments": {"group": "dirs"}}, {"tool": "list_dir"}, {"tool": "write_file"}]}`,
		// A profile without groups has no enable_tools.
		`{"session": "s-core", "client": {"name": "c"}, "profile": "core", "calls": [{"tool": "enable_tools"}]}`,
	}, "\n")+"\n")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"check", "--profiles", profilesPath, "--trace", tracePath, "--catalog", catalogPath}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("%v\n%s", err, stderr.String())
	}
	for session, want := range map[string]string{
		"s-switched": "s-switched lean 2 covered",
		"s-early":    "s-early lean 2 excluded excluded: write_file (in full)",
		"s-named":    "s-named lean 3 excluded excluded: write_file (in full)",
		"s-core":     "s-core core 1 unknown-tool unknown: enable_tools",
	} {
		if got := rowOf(stdout.String(), session); got != want {
			t.Errorf("row %s:\n got %q\nwant %q", session, got, want)
		}
	}
}

// TestCheckCallsThroughSearch: the gateway records a call made through
// call_tool as a call of the tool it ran, marked search; export carries
// the mark and check judges the call as made through search: allowed a
// searchable tool where the profile is served search, a call of call_tool
// (unknown) where it is not.
func TestCheckCallsThroughSearch(t *testing.T) {
	profilesPath := writeTemp(t, "profiles.generated.toml", `version = 1
default = "core"
[[profile]]
name = "core"
tools = ["read_file"]
[[profile]]
name = "searchy"
tools = ["read_file"]
search = true
`)
	catalogPath := writeTemp(t, "catalog.json", `{"tools": [
 {"name": "read_file", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": true}},
 {"name": "write_file", "inputSchema": {"type": "object"}}
]}`)
	tel := filepath.Join(t.TempDir(), "telemetry")
	rec, err := telemetry.OpenRecorder(tel, telemetry.RecorderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for i, profile := range []string{"searchy", "core"} {
		id := "s-" + profile
		rec.Session(telemetry.Session{ID: id, Start: start.Add(time.Duration(i) * time.Hour), Profile: profile})
		rec.Call(telemetry.Call{Session: id, Seq: 1, Tool: "read_file", Start: start.Add(time.Duration(i)*time.Hour + time.Second), Outcome: telemetry.OutcomeOK})
		rec.Call(telemetry.Call{Session: id, Seq: 2, Tool: "write_file", Start: start.Add(time.Duration(i)*time.Hour + 2*time.Second), Outcome: telemetry.OutcomeOK, Search: true})
	}
	if err := rec.Close(); err != nil {
		t.Fatal(err)
	}
	exported, stderr, code := runProfiler(t, "export", "--telemetry", tel)
	if code != 0 || strings.Count(exported, `{"tool":"write_file","ok":true,"outcome":"ok","search":true}`) != 2 || strings.Count(exported, `"search"`) != 2 {
		t.Fatalf("export: exit %d, %s\n%s", code, stderr, exported)
	}
	stdout, stderr, code := runProfiler(t, "check", "--profiles", profilesPath, "--catalog", catalogPath, "--trace", writeTemp(t, "export.jsonl", exported))
	if code != 0 {
		t.Fatalf("check: exit %d: %s", code, stderr)
	}
	for session, want := range map[string]string{
		"s-searchy": "s-searchy searchy 2 covered",
		"s-core":    "s-core core 2 unknown-tool unknown: call_tool",
	} {
		if got := rowOf(stdout, session); got != want {
			t.Errorf("row %s:\n got %q\nwant %q\n%s", session, got, want, stdout)
		}
	}
}
