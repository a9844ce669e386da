package opcontext

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/toolprof/toolprof/internal/syncbuf"
)

// sidecar is a typical valid file: registry, defaults, two doctrine sections.
const sidecar = `version = 1
context_revision = "2026-07-16.1"

[instructions]
summary = """
Operating context (rev 2026-07-16.1).
Pass "@auto" as project_id to resolve your default.
"""

[registry]
project_ids = ["", "acme-app"]
enforce = "%s"

[defaults]
"claude-code" = "acme-app"
"agent.indexer" = ""
"agent.stray" = "unlisted-app"

[[doctrine]]
name = "recall-discipline"
body = "limit<=5 outside session start"

[[doctrine]]
name = "agent-id-conventions"
body = """
'claude-code' for Claude Code.
"""
`

// env is an injected environment: never the process's.
func env(vars map[string]string) func(string) (string, bool) {
	return func(k string) (string, bool) {
		v, ok := vars[k]
		return v, ok
	}
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// logBuffer collects slog output for assertions; safe for concurrent use.
type logBuffer struct{ syncbuf.Buffer }

func (l *logBuffer) logger() *slog.Logger {
	return slog.New(slog.NewTextHandler(l, nil))
}

// sourceAt returns a Source reading path through the env override.
func sourceAt(t testing.TB, path string, logs *logBuffer) *Source {
	t.Helper()
	var lg *slog.Logger
	if logs != nil {
		lg = logs.logger()
	}
	return New(env(map[string]string{EnvPath: path}), t.TempDir(), lg)
}
