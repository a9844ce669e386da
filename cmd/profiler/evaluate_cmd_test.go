package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func runEvaluateArgs(t *testing.T, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	var out, errb bytes.Buffer
	err := run(context.Background(), append([]string{"evaluate"}, args...), &out, &errb)
	code = exitCode(err, &errb)
	return out.String(), errb.String(), code
}

// TestEvaluateCommand derives profiles with groups and search priors from
// the derive fixture, then evaluates them: the JSON names every arm with
// its figures, and the text table prints the same arms.
func TestEvaluateCommand(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 100)
	out := filepath.Join(dir, "profiles.generated.toml")
	if _, stderr, code := runDeriveArgs(t, "--trace", trace, "--catalog", cat, "--out", out, "--search", "--groups"); code != 0 {
		t.Fatalf("derive: exit %d: %s", code, stderr)
	}
	args := []string{"--profiles", out, "--catalog", cat, "--trace", trace}
	stdout, stderr, code := runEvaluateArgs(t, append(args, "--format", "json")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var rep struct {
		Sessions int `json:"sessions"`
		Arms     []struct {
			Name        string             `json:"name"`
			ServedShare float64            `json:"served_share"`
			RecallAt    map[string]float64 `json:"recall_at"`
			Cost        struct {
				Mean float64 `json:"mean"`
			} `json:"cost_per_session"`
			CostShareOfFull float64 `json:"cost_share_of_full"`
		} `json:"arms"`
	}
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatalf("not JSON: %v\n%s", err, stdout)
	}
	var names []string
	for _, a := range rep.Arms {
		names = append(names, a.Name)
		if a.Cost.Mean <= 0 || a.ServedShare <= 0 {
			t.Errorf("arm %s: %+v", a.Name, a)
		}
	}
	if got := strings.Join(names, ","); rep.Sessions != 20 || got != "full,default,groups,search,always_load" {
		t.Errorf("%d sessions, arms %s; want the 20 held-out sessions and every arm", rep.Sessions, got)
	}
	text, _, code := runEvaluateArgs(t, args...)
	if code != 0 || !strings.Contains(text, "always_load") || !strings.Contains(text, "20 held-out sessions") {
		t.Errorf("text: exit %d\n%s", code, text)
	}
}

func TestEvaluateUsageErrors(t *testing.T) {
	dir, cat, trace := deriveFixture(t, 10)
	prof := filepath.Join(dir, "none.toml")
	os.WriteFile(prof, []byte("version = 1\ndefault = \"full\"\n"), 0o644)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--catalog", cat, "--trace", trace}, "are required"},
		{[]string{"--profiles", prof, "--catalog", cat, "--trace", trace, "--format", "yaml"}, "want text or json"},
		{[]string{"--profiles", prof, "--catalog", cat, "--trace", trace, "--limit", "21"}, "want 1 to 20"},
		{[]string{"--profiles", prof, "--catalog", cat, "--trace", trace, "--holdout", "1"}, "--holdout 1"},
		{[]string{"--profiles", prof, "--catalog", cat, "--trace", trace, "extra"}, "unexpected argument"},
	} {
		if _, stderr, code := runEvaluateArgs(t, tc.args...); code != 2 || !strings.Contains(stderr, tc.want) {
			t.Errorf("%v: exit %d, %q; want 2 and %q", tc.args, code, stderr, tc.want)
		}
	}
	if _, stderr, code := runEvaluateArgs(t, "--profiles", prof, "--catalog", cat, "--trace", trace, "--search-base", "nope"); code != 1 || !strings.Contains(stderr, `"nope"`) {
		t.Errorf("unknown base: exit %d, %q", code, stderr)
	}
}
