package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/BurntSushi/toml"
	"github.com/toolprof/toolprof/launch"
)

func TestLaunchCommand(t *testing.T) {
	const secret = "planted-secret-9f8e7d"
	t.Setenv("TOOLPROF_TEST_TOKEN", secret)
	dir := t.TempDir()
	pack := filepath.Join(dir, ".mcp.json")
	write := func(path, content string) {
		t.Helper()
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write(pack, `{"mcpServers": {
  "cli": {"command": "srv", "args": ["--key=${TOOLPROF_TEST_TOKEN}"], "env": {"TOKEN": "${TOOLPROF_TEST_TOKEN}"}},
  "api": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${TOOLPROF_TEST_TOKEN}"}}
}}`)
	write(filepath.Join(dir, "personas", "dev.mcp.json"), `{"mcpServers": {"extra": {"command": "x"}}}`)
	write(filepath.Join(dir, "unset.json"), `{"mcpServers": {"s": {"command": "x", "env": {"A": "${TOOLPROF_TEST_UNSET}"}}}}`)
	write(filepath.Join(dir, "sse.json"), `{"mcpServers": {"old": {"type": "sse", "url": "https://h/sse"}}}`)

	tests := []struct {
		name      string
		args      []string
		wantUsage bool
		wantErr   string
		wantWarn  string // on stderr
		check     func(t *testing.T, stdout string)
	}{
		{name: "json", args: []string{"--launch", pack}, wantWarn: pack + `:2: server "cli": command "srv": not found on PATH`, check: func(t *testing.T, out string) {
			var doc launch.Document
			if err := json.Unmarshal([]byte(out), &doc); err != nil {
				t.Fatal(err)
			}
			if doc.Version != 1 || len(doc.Servers) != 2 || doc.Servers[0].Name != "api" || doc.Servers[1].Name != "cli" {
				t.Errorf("doc = %+v", doc)
			}
			if got := doc.Servers[1].Args[0]; got != "--key=${TOOLPROF_TEST_TOKEN}" {
				t.Errorf("arg printed as %q, want the template", got)
			}
			if got := doc.Servers[0].Headers["Authorization"]; got != launch.Redaction {
				t.Errorf("header printed as %q, want %q", got, launch.Redaction)
			}
		}},
		{name: "toml with persona", args: []string{"--launch", pack, "--persona", "dev", "--format", "toml"}, check: func(t *testing.T, out string) {
			var doc launch.Document
			if _, err := toml.Decode(out, &doc); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			if doc.Version != 1 || len(doc.Servers) != 3 || doc.Servers[2].Name != "extra" {
				t.Errorf("doc = %+v", doc)
			}
		}},
		{name: "unknown persona", args: []string{"--launch", pack, "--persona", "prod"}, wantErr: `unknown persona "prod": known personas in ` + filepath.Join(dir, "personas") + ": dev"},
		{name: "unset variable", args: []string{"--launch", filepath.Join(dir, "unset.json")}, wantErr: `server "s"`},
		{name: "sse refused", args: []string{"--launch", filepath.Join(dir, "sse.json")}, wantErr: `server "old": key "type": SSE is unsupported, migrate to streamable_http`},
		{name: "missing flag", args: nil, wantUsage: true, wantErr: "--launch FILE is required"},
		{name: "bad format", args: []string{"--launch", pack, "--format", "yaml"}, wantUsage: true, wantErr: `--format "yaml": want json or toml`},
		{name: "extra arg", args: []string{"--launch", pack, "x"}, wantUsage: true, wantErr: `unexpected argument "x"`},
		{name: "unknown flag", args: []string{"--nope"}, wantUsage: true, wantErr: "flag provided but not defined"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stdout, stderr bytes.Buffer
			err := run(context.Background(), append([]string{"launch"}, tt.args...), &stdout, &stderr)
			code := exitCode(err, &stderr)
			for name, out := range map[string]string{"stdout": stdout.String(), "stderr": stderr.String()} {
				if strings.Contains(out, secret) {
					t.Errorf("%s carries the planted secret:\n%s", name, out)
				}
			}
			if tt.wantErr != "" {
				var ue usageError
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) || errors.As(err, &ue) != tt.wantUsage {
					t.Fatalf("err = %v (usage=%v), want containing %q (usage=%v)", err, errors.As(err, &ue), tt.wantErr, tt.wantUsage)
				}
				if want := map[bool]int{true: 2, false: 1}[tt.wantUsage]; code != want {
					t.Errorf("exit %d, want %d", code, want)
				}
				return
			}
			if err != nil {
				t.Fatalf("err = %v; stderr:\n%s", err, stderr.String())
			}
			if !strings.Contains(stderr.String(), tt.wantWarn) {
				t.Errorf("stderr lacks %q:\n%s", tt.wantWarn, stderr.String())
			}
			tt.check(t, stdout.String())
		})
	}
}
