package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/telemetry"
)

// Every command that reads trace files reports them alike: a start without
// a zone is read as UTC and said once, and at most telemetry.MaxLineErrors malformed
// lines are named, then how many more.
func TestTraceLinesReportedAlike(t *testing.T) {
	profilesPath, catalogPath, _ := checkFixture(t)
	start := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	var naive, bad strings.Builder
	for i := range 112 {
		// An export that dropped the zone of UTC times.
		fmt.Fprintf(&naive, `{"session":"s%d","started":%q,"calls":[{"tool":"read_file"}]}`+"\n", i, start.Add(time.Duration(i)*time.Hour).Format("2006-01-02T15:04:05"))
	}
	for i := range 40 {
		if i%4 == 0 {
			fmt.Fprintf(&bad, `{"session":"g%d","calls":[{"tool":"read_file"}]}`+"\n", i)
		} else {
			fmt.Fprintf(&bad, `{"session":"b%d","calls":[{"ok":true}]}`+"\n", i)
		}
	}
	naivePath := writeTemp(t, "naive.jsonl", naive.String())
	badPath := writeTemp(t, "bad.jsonl", bad.String())
	// flags go before import's file arguments.
	commands := map[string]func(trace string, flags ...string) []string{
		"import": func(trace string, flags ...string) []string {
			return append(append([]string{"import", "--telemetry", filepath.Join(t.TempDir(), "tel")}, flags...), trace)
		},
		"derive": func(trace string, flags ...string) []string {
			return append([]string{"derive", "--trace", trace, "--catalog", catalogPath, "--out", filepath.Join(t.TempDir(), "p.toml"), "--force"}, flags...)
		},
		"check": func(trace string, flags ...string) []string {
			return append([]string{"check", "--profiles", profilesPath, "--trace", trace}, flags...)
		},
	}
	for name, args := range commands {
		t.Run(name+" naive starts", func(t *testing.T) {
			_, stderr, code := runProfiler(t, args(naivePath)...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			want := name + ": 112 session start(s) without a time zone offset, read as UTC\n"
			if n := strings.Count(stderr, "without a time zone"); n != 1 || !strings.Contains(stderr, want) {
				t.Errorf("stderr says %d times, want once %q:\n%s", n, want, stderr)
			}
		})
		t.Run(name+" malformed lines", func(t *testing.T) {
			_, stderr, code := runProfiler(t, args(badPath, "--skip-bad")...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			named := regexp.MustCompile(`(?m)^`+name+`: skipped .*bad\.jsonl:\d+: `).FindAllString(stderr, -1)
			if len(named) != telemetry.MaxLineErrors || !strings.Contains(stderr, name+": ... and 10 more malformed line(s)\n") {
				t.Errorf("%d lines named, want %d and then 10 more:\n%s", len(named), telemetry.MaxLineErrors, stderr)
			}
			_, stderr, code = runProfiler(t, args(badPath)...)
			if code != 1 || !strings.Contains(stderr, "30 malformed trace line(s)") || !strings.Contains(stderr, "pass --skip-bad to") {
				t.Errorf("without --skip-bad: exit %d, want 1 saying how to skip:\n%s", code, stderr)
			}
		})
	}
}
