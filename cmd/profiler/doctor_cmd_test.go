package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/opcontext"
)

func TestDoctorCommand(t *testing.T) {
	dir := t.TempDir()
	write := func(name, content string) string {
		t.Helper()
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	valid := write("valid.toml", `version = 1
context_revision = "2026-07-16.1"
[instructions]
summary = "Short summary."
[[doctrine]]
name = "a"
body = "x"
[[doctrine]]
name = "b"
body = "y"
`)
	invalid := write("invalid.toml", "version = 1\n[registry]\nenforce = \"strict\"\n")
	big := write("big.toml", fmt.Sprintf("version = 1\n[instructions]\nsummary = %q\n", strings.Repeat("x", 3001)))
	home := filepath.Join(dir, "home")
	write("home/.toolprof/operating-context.toml", "version = 1\ncontext_revision = \"from-home\"\n")

	tests := []struct {
		name     string
		args     []string
		vars     map[string]string
		home     string
		code     int
		want     []string
		errMatch string
	}{
		{name: "absent file is dormant", args: []string{"--operating-context", filepath.Join(dir, "missing.toml")},
			want: []string{"missing.toml", "status: dormant", "findings: none"}},
		{name: "active", args: []string{"--operating-context", valid},
			want: []string{"status: active rev 2026-07-16.1, 2 doctrine sections, summary 14 characters", "findings: none"}},
		{name: "invalid exits 1", args: []string{"--operating-context", invalid}, code: 1,
			want: []string{"status: invalid", "warn parse", "invalid.toml:3", "registry.enforce", `"off", "warn", "reject"`}},
		{name: "oversized summary is info, exit 0", args: []string{"--operating-context", big},
			want: []string{"status: active", "summary 3001 characters", "info size", "over 3000"}},
		{name: "env path when no flag", vars: map[string]string{opcontext.EnvPath: valid},
			want: []string{valid, "active rev 2026-07-16.1"}},
		{name: "flag beats env path", args: []string{"--operating-context", invalid}, vars: map[string]string{opcontext.EnvPath: valid}, code: 1,
			want: []string{"status: invalid"}},
		{name: "home default", home: home,
			want: []string{filepath.Join(home, ".toolprof", "operating-context.toml"), "active rev from-home"}},
		{name: "kill switch still checks the file", args: []string{"--operating-context", invalid},
			vars: map[string]string{opcontext.EnvSwitch: "off"}, code: 1,
			want: []string{"status: off by kill switch (TOOLPROF_OPERATING_CONTEXT=off)", "file (were the switch on): invalid", "warn parse"}},
		{name: "kill switch with a valid file", args: []string{"--operating-context", valid},
			vars: map[string]string{opcontext.EnvSwitch: "off"},
			want: []string{"status: off by kill switch", "file (were the switch on): active rev 2026-07-16.1", "findings: none"}},
		{name: "unexpected argument", args: []string{"extra"}, code: 2, errMatch: `unexpected argument "extra"`},
		{name: "unknown flag", args: []string{"--bogus"}, code: 2, errMatch: "bogus"},
		{name: "help", args: []string{"-h"}, code: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// Never the real home or the real environment.
			h := tt.home
			if h == "" {
				h = t.TempDir()
			}
			t.Setenv("HOME", h)
			t.Setenv(opcontext.EnvPath, tt.vars[opcontext.EnvPath])
			t.Setenv(opcontext.EnvSwitch, tt.vars[opcontext.EnvSwitch])
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"doctor"}, tt.args...), &stdout, &stderr)
			if code := exitCode(err, &stderr); code != tt.code {
				t.Fatalf("exit %d, want %d; err %v\nstdout:\n%s\nstderr:\n%s", code, tt.code, err, stdout.String(), stderr.String())
			}
			if tt.errMatch != "" && (err == nil || !strings.Contains(err.Error(), tt.errMatch)) {
				t.Fatalf("err %v, want %q", err, tt.errMatch)
			}
			for _, w := range tt.want {
				if !strings.Contains(stdout.String(), w) {
					t.Errorf("stdout lacks %q:\n%s", w, stdout.String())
				}
			}
		})
	}
}
