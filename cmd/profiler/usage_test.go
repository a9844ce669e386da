package main

import (
	"bytes"
	"context"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// TestCommandHelp checks that every subcommand's -h prints the one help
// shape (usage line, short description, flags), on stderr, and does nothing
// else: run relies on that to show the usage after a usage error.
func TestCommandHelp(t *testing.T) {
	tests := []struct {
		name, synopsis string
	}{
		{"import", "--telemetry DIR [flags] FILE.jsonl..."},
		{"export", "--telemetry DIR [--since T] [--until T]"},
		{"stats", "--telemetry DIR [--format table|markdown|json] [flags]"},
		{"report", "--telemetry DIR --catalog FILE [--profiles FILE] --out DIR [flags]"},
		{"compact", "--telemetry DIR --before DATE"},
		{"derive", "(--telemetry DIR | --trace FILE) --catalog FILE [flags]"},
		{"bench", "[flags] (--catalog FILE | --launch FILE | -- CMD ARGS)"},
		{"evaluate", "--profiles FILE --catalog FILE --trace FILE [flags]"},
		{"catalog", "[--out FILE] (--launch FILE | -- CMD ARGS)"},
		{"check", "--profiles FILE --trace FILE.jsonl [flags]"},
		{"replay", "--trace FILE.jsonl [flags] (--url URL | --launch FILE | -- CMD ARGS)"},
		{"launch", "--launch FILE [--persona NAME] [--format json|toml]"},
		{"login", "--launch FILE [--persona NAME] [--server NAME] [--status]"},
		{"doctor", "[--operating-context PATH]"},
	}
	var names []string
	for _, tc := range tests {
		names = append(names, tc.name)
	}
	for name := range commands() {
		if !slices.Contains(names, name) {
			t.Errorf("profiler %s is not in TestCommandHelp's table: add it", name)
		}
	}
	flagLine := regexp.MustCompile(`(?m)^  -([a-z][a-z0-9-]*)`)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("HOME", t.TempDir()) // doctor would read ~/.toolprof otherwise
			var stdout, stderr bytes.Buffer
			if err := run(context.Background(), []string{tc.name, "-h"}, &stdout, &stderr); err != nil {
				t.Fatalf("%s -h: %v", tc.name, err)
			}
			if stdout.Len() > 0 {
				t.Errorf("%s -h wrote to stdout (help goes to stderr, nothing else runs): %q", tc.name, stdout.String())
			}
			out := stderr.String()
			want := "usage: profiler " + tc.name + " " + tc.synopsis + "\n\n"
			if !strings.HasPrefix(out, want) {
				t.Fatalf("%s -h starts %q, want %q", tc.name, firstLine(out), strings.TrimSpace(want))
			}
			desc, flags, ok := strings.Cut(strings.TrimPrefix(out, want), "\n\nflags:\n")
			if !ok {
				t.Fatalf("%s -h has no \"flags:\" section after its description:\n%s", tc.name, out)
			}
			if n := len(strings.Split(desc, "\n")); desc == "" || n > 3 {
				t.Errorf("%s -h description is %d lines, want 1 to 3:\n%s", tc.name, n, desc)
			}
			if len(flagLine.FindAllString(flags, -1)) == 0 {
				t.Errorf("%s -h lists no flags:\n%s", tc.name, out)
			}
			// Every flag the synopsis names is one the command has.
			for _, m := range regexp.MustCompile(`--([a-z][a-z0-9-]*)`).FindAllStringSubmatch(tc.synopsis, -1) {
				if !regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(m[1]) + `\b`).MatchString(flags) {
					t.Errorf("%s synopsis names --%s, which -h does not list", tc.name, m[1])
				}
			}
		})
	}
}

// TestUsageErrorShowsUsage checks that a usage error exits 2 and prints the
// command's usage once on stderr, followed by the error, whether the flag
// package found it (an unknown flag) or the command did after parsing.
func TestUsageErrorShowsUsage(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{"unknown flag", []string{"import", "--nope"}, "profiler: import: flag provided but not defined: -nope"},
		{"bad flag value", []string{"replay", "--concurrency", "x"}, "profiler: replay: invalid value \"x\" for flag -concurrency"},
		{"missing required flag", []string{"import", "a.jsonl"}, "profiler: import: give exactly one --telemetry DIR"},
		{"missing input", []string{"derive", "--catalog", "c.json"}, "profiler: derive: give sessions with --telemetry DIR or --trace FILE.jsonl"},
		{"no source", []string{"bench"}, "profiler: bench: no tool source"},
		{"unexpected argument", []string{"doctor", "extra"}, "profiler: doctor: unexpected argument \"extra\""},
		{"bad value after parsing", []string{"launch", "--launch", "x.json", "--format", "yaml"}, "profiler: launch: --format \"yaml\": want json or toml"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), tc.args, &stdout, &stderr)
			if code := exitCode(err, &stderr); code != 2 {
				t.Fatalf("%v: exit %d (%v), want 2", tc.args, code, err)
			}
			out := stderr.String()
			if n := strings.Count(out, "usage: profiler "+tc.args[0]+" "); n != 1 {
				t.Errorf("%v: stderr holds the usage %d times, want once:\n%s", tc.args, n, out)
			}
			if !strings.Contains(out, "\nflags:\n") {
				t.Errorf("%v: stderr has no flags section:\n%s", tc.args, out)
			}
			lines := strings.Split(strings.TrimSpace(out), "\n")
			if last := lines[len(lines)-1]; !strings.HasPrefix(last, tc.wantErr) {
				t.Errorf("%v: last stderr line %q, want it to start %q", tc.args, last, tc.wantErr)
			}
			if stdout.Len() > 0 {
				t.Errorf("%v: wrote to stdout: %q", tc.args, stdout.String())
			}
		})
	}
}

func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}
