package toolsource

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/internal/testupstream"
)

// TestCatalogRefusesEchoedSecrets: a catalog is written to be committed,
// and a real server that repeats a value it was given from the
// environment (in its instructions and a tool's description) would have
// put that value in it. Catalog refuses, naming the server, the tool and
// the instructions, never the value; a server repeating nothing secret
// is recorded as ever.
func TestCatalogRefusesEchoedSecrets(t *testing.T) {
	const secret = "s3cr3t-value-4242"
	t.Setenv("TOOLSOURCE_TEST_SECRET", secret)
	t.Setenv("TOOLSOURCE_TEST_SHORT", "k3y42")
	bin := testupstream.EchoServer(t)
	for _, tc := range []struct {
		name, config string
		wantErr      []string // "" entries: want no error
	}{
		{"echoes a secret", "https://api.example.com/?key=${TOOLSOURCE_TEST_SECRET}",
			[]string{`server "echo"`, `tool "status"`, "instructions", "${VAR}", "not written"}},
		// A short key is caught in the text it was given in: the server
		// repeats its whole configuration, which carries the key.
		{"echoes a short secret in context", "https://api.example.com/?key=${TOOLSOURCE_TEST_SHORT}",
			[]string{`server "echo"`, `tool "status"`, "instructions"}},
		{"echoes nothing secret", "https://api.example.com/", nil},
		// A short value from the environment (a flag such as DEBUG=true, a
		// format such as json) is a word definitions hold by themselves:
		// here "object", of the tool's input schema.
		{"holds a short value", "https://api.example.com/", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			env := map[string]string{"ECHO_CONFIG": tc.config}
			if tc.name == "holds a short value" {
				t.Setenv("TOOLSOURCE_TEST_MODE", "object")
				env["ECHO_MODE"] = "${TOOLSOURCE_TEST_MODE}"
			}
			doc, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
				"echo": map[string]any{"command": bin, "env": env},
			}})
			if err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(t.TempDir(), "servers.mcp.json")
			if err := os.WriteFile(path, doc, 0o644); err != nil {
				t.Fatal(err)
			}
			var stderr syncbuf.Buffer
			src, err := Open(context.Background(), Spec{Launch: path}, &stderr)
			if err != nil {
				t.Fatal(err)
			}
			defer src.Close()
			cat, err := src.Catalog(context.Background(), &stderr)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatalf("Catalog: %v", err)
				}
				var b bytes.Buffer
				if err := cat.Write(&b); err != nil {
					t.Fatal(err)
				}
				if !strings.Contains(b.String(), "Reports the status of https://api.example.com/.") {
					t.Errorf("catalog lacks the tool's description:\n%s", b.String())
				}
				return
			}
			if err == nil {
				var b bytes.Buffer
				_ = cat.Write(&b)
				t.Fatalf("Catalog recorded the echoed value; want an error. Catalog:\n%s", b.String())
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
			if strings.Contains(err.Error()+stderr.String(), secret) {
				t.Errorf("the value is in the error or stderr: %v\n%s", err, stderr.String())
			}
		})
	}
}

// TestCatalogHoldsWhatTheGatewayServes: a tool whose name the gateway
// refuses to serve (terminal escapes, a carriage return) is left out of
// the catalog too, with a warning naming its upstream and the name
// escaped, so that what is priced and derived from is what is served.
func TestCatalogHoldsWhatTheGatewayServes(t *testing.T) {
	bad := "wipe\x1b[2J\rstatus"
	doc, err := json.Marshal(map[string]any{"mcpServers": map[string]any{
		"echo": map[string]any{"command": testupstream.EchoServer(t), "env": map[string]string{"ECHO_CONFIG": "https://api.example.com/", "ECHO_TOOL": bad}},
	}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "servers.mcp.json")
	if err := os.WriteFile(path, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	var stderr syncbuf.Buffer
	src, err := Open(context.Background(), Spec{Launch: path}, &stderr)
	if err != nil {
		t.Fatal(err)
	}
	defer src.Close()
	var warn bytes.Buffer
	cat, err := src.Catalog(context.Background(), &warn)
	if err != nil {
		t.Fatal(err)
	}
	if names := cat.Names(); len(names) != 1 || names[0] != "status" {
		t.Errorf("catalog tools %q, want only status", names)
	}
	if w := warn.String(); !strings.Contains(w, `upstream "echo"`) || !strings.Contains(w, `"wipe\x1b[2J\rstatus"`) || strings.ContainsAny(w, "\x1b\r") {
		t.Errorf("warning %q: want the upstream and the name escaped", w)
	}
}
