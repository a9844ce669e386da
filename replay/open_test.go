package replay

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestOpenTarget(t *testing.T) {
	for _, c := range []struct {
		name     string
		cfg      TargetConfig
		wantDesc string
		wantErr  string
	}{
		{name: "url", cfg: TargetConfig{URL: "http://127.0.0.1:1/mcp", Concurrency: 2}, wantDesc: "http://127.0.0.1:1/mcp"},
		{name: "url with a fixed profile", cfg: TargetConfig{URL: "http://127.0.0.1:1/mcp", Profile: "core", Concurrency: 2}, wantDesc: "http://127.0.0.1:1/mcp/core"},
		{name: "command", cfg: TargetConfig{Command: []string{"srv", "--stdio"}, Profile: "core"}, wantDesc: "srv --stdio"},
		{name: "launch document missing", cfg: TargetConfig{Gateway: GatewayConfig{Launch: filepath.Join(t.TempDir(), "absent.mcp.json"), ProfilesPath: filepath.Join(t.TempDir(), "absent.toml")}}, wantErr: "absent.mcp.json"},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			target, stop, err := OpenTarget(context.Background(), c.cfg, &log)
			if c.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), c.wantErr) {
					t.Fatalf("OpenTarget error = %v, want one naming %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			if got := target.Describe(); got != c.wantDesc {
				t.Errorf("Describe() = %q, want %q", got, c.wantDesc)
			}
			if _, isCommand := target.(CommandTarget); isCommand != (c.cfg.Command != nil) {
				t.Errorf("target %T for %+v", target, c.cfg)
			}
		})
	}
}

func TestReadTrace(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := `{"session": "a", "calls": [{"tool": "t1", "arguments": {}}]}` + "\n"
	for _, c := range []struct {
		name      string
		path      string
		skipBad   bool
		wantN     int
		wantErr   string
		wantNoted string
	}{
		{name: "good", path: write("good.jsonl", good), wantN: 1},
		{name: "malformed line", path: write("bad.jsonl", good+"not json\n"), wantErr: "replay: 1 malformed trace line(s), nothing replayed"},
		{name: "malformed line skipped", path: write("skip.jsonl", good+"not json\n"), skipBad: true, wantN: 1, wantNoted: "replay: skipped "},
		{name: "arguments not an object", path: write("args.jsonl", `{"session": "a", "calls": [{"tool": "t2", "arguments": [1,2]}]}`+"\n"), wantErr: `replay: ` + filepath.Join(dir, "args.jsonl") + `: session "a" calls[0] (t2): "arguments" is [1,2]`},
		{name: "missing file", path: filepath.Join(dir, "absent.jsonl"), wantErr: "replay: open trace: "},
	} {
		t.Run(c.name, func(t *testing.T) {
			var log bytes.Buffer
			sessions, err := ReadTrace(c.path, c.skipBad, &log)
			if c.wantErr != "" {
				if err == nil || !strings.HasPrefix(err.Error(), c.wantErr) {
					t.Fatalf("ReadTrace error = %v, want one starting %q", err, c.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(sessions) != c.wantN {
				t.Errorf("ReadTrace read %d sessions, want %d", len(sessions), c.wantN)
			}
			if !strings.Contains(log.String(), c.wantNoted) {
				t.Errorf("ReadTrace said %q, want %q in it", log.String(), c.wantNoted)
			}
		})
	}
}
