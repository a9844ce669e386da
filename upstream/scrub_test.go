package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolprof/toolprof/internal/syncbuf"
	"github.com/toolprof/toolprof/launch"
)

// TestLeakingUpstreamScrubbed runs a real stdio server given a resolved
// secret in its env, which prints it on stderr and returns it in a
// JSON-RPC error's message and data.
func TestLeakingUpstreamScrubbed(t *testing.T) {
	const secret = "s3cr3t-env-9f8e7d"
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	entry := stdioEntry(self, map[string]string{helperEnv: "1", "HELPER_ID": "L", "HELPER_LEAK": "LEAKED", "LEAKED": "${SECRET}"})
	var stderr syncbuf.Buffer
	s := startSet(t, `{"mcpServers": {"l": `+entry+`}}`, map[string]string{"SECRET": secret}, SetOptions{Client: Options{Stderr: &stderr}})

	_, err = call(context.Background(), s, "leak", "")
	var rpc *jsonrpc.Error
	if !errors.As(err, &rpc) {
		t.Fatalf("call leak: %v, want the upstream's JSON-RPC error", err)
	}
	if rpc.Code != -32042 || rpc.Message != "refused token="+launch.Redaction {
		t.Errorf("error = %d %q, want -32042 with the value redacted", rpc.Code, rpc.Message)
	}
	if !json.Valid(rpc.Data) {
		t.Fatalf("error data is not valid JSON: %s", rpc.Data)
	}
	var data map[string]any
	if err := json.Unmarshal(rpc.Data, &data); err != nil {
		t.Fatal(err)
	}
	want := map[string]any{
		"detail":         "sent token=" + launch.Redaction + " <kept>",
		"escaped":        launch.Redaction,
		launch.Redaction: "key",
		"code":           7.0,
	}
	if len(data) != len(want) {
		t.Errorf("error data = %v, want %v", data, want)
	}
	for k, v := range want {
		if data[k] != v {
			t.Errorf("error data[%q] = %v, want %v", k, data[k], v)
		}
	}
	if strings.Contains(err.Error(), secret) || bytes.Contains(rpc.Data, []byte(secret)) {
		t.Errorf("secret reached the caller: %v %s", err, rpc.Data)
	}

	s.Close() // the server exits: its last line, without a newline, is flushed
	out := stderr.String()
	if strings.Contains(out, secret) {
		t.Errorf("secret in the gateway's stderr:\n%s", out)
	}
	for _, line := range []string{
		"start: token=" + launch.Redaction + " end of start line\n",
		"exit: token=" + launch.Redaction + " last words\n",
	} {
		if !strings.Contains(out, line) {
			t.Errorf("stderr lacks %q:\n%s", line, out)
		}
	}
}

func TestScrubData(t *testing.T) {
	scrub := func(s string) string { return strings.ReplaceAll(s, "SECRET", "<redacted>") }
	for _, tc := range []struct {
		name, in, want string
		dropped        bool
	}{
		{"empty", "", "", false},
		{"untouched kept byte for byte", `{"b": 1,  "a": "x"}`, `{"b": 1,  "a": "x"}`, false},
		{"string", `{"b": "a SECRET b", "a": [1.50, true, null]}`, `{"a":[1.50,true,null],"b":"a <redacted> b"}`, false},
		{"escaped in string", `["\u0053ECRET"]`, `["<redacted>"]`, false},
		{"object key", `{"SECRET": 1}`, `{"<redacted>":1}`, false},
		{"number", `[1, 2]`, `[1, 2]`, false},
		{"plain string", `"SECRET"`, `"<redacted>"`, false},
		{"invalid and still invalid once scrubbed", `"SECRET`, ``, true},
		{"bare value in invalid data", `[SECRET]`, ``, true},
		{"trailing garbage dropped", `{"a": "SECRET"} x`, ``, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, dropped := scrubData(json.RawMessage(tc.in), scrub)
			if string(got) != tc.want || dropped != tc.dropped {
				t.Errorf("scrubData(%s) = %s, %v; want %s, %v", tc.in, got, dropped, tc.want, tc.dropped)
			}
		})
	}
	// A number holding the value becomes a string.
	digits := func(s string) string { return strings.ReplaceAll(s, "123456", "<redacted>") }
	if got, dropped := scrubData(json.RawMessage(`[123456, 7]`), digits); string(got) != `["<redacted>",7]` || dropped {
		t.Errorf("scrubData([123456, 7]) = %s, %v; want the number as a redacted string", got, dropped)
	}
	// Text that is not JSON but becomes JSON once scrubbed is kept.
	if got, dropped := scrubData(json.RawMessage(`[BAD]`), func(s string) string { return strings.ReplaceAll(s, "BAD", "1") }); string(got) != `[1]` || dropped {
		t.Errorf("scrubData([BAD]) = %s, %v; want [1] kept", got, dropped)
	}
}

func TestScrubbingWriter(t *testing.T) {
	scrub := func(s string) string { return strings.ReplaceAll(s, "SECRET", "<r>") }
	long := strings.Repeat("x", maxStderrLine)
	for _, tc := range []struct {
		name          string
		writes        []string
		before, after string // dst before and after Flush
	}{
		{"whole lines", []string{"a SECRET b\nc\n"}, "a <r> b\nc\n", "a <r> b\nc\n"},
		{"value split across writes", []string{"a SEC", "RET b\n"}, "a <r> b\n", "a <r> b\n"},
		{"partial line held until flush", []string{"x\ny SECRET"}, "x\n", "x\ny <r>\n"},
		{"nothing held", []string{"x\n"}, "x\n", "x\n"},
		{"long run without newline written", []string{long, "SECRET"}, long, long + "<r>\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var dst bytes.Buffer
			w := newScrubbingWriter(&dst, scrub)
			for _, s := range tc.writes {
				if n, err := w.Write([]byte(s)); n != len(s) || err != nil {
					t.Fatalf("Write = %d, %v", n, err)
				}
			}
			if dst.String() != tc.before {
				t.Errorf("before flush: %q, want %q", dst.String(), tc.before)
			}
			if err := w.Flush(); err != nil {
				t.Fatal(err)
			}
			if dst.String() != tc.after {
				t.Errorf("after flush: %q, want %q", dst.String(), tc.after)
			}
		})
	}
}
