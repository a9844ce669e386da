package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// TestCallFidelity: a call forwards the raw arguments as the client sent
// them (number literals, key order, nesting, unicode; only insignificant
// whitespace may go), and the result comes back as the upstream sent it:
// every content type with its annotations and _meta, structuredContent,
// isError and the result's _meta. Through a namespaced Set, so the renaming
// of the tool is the only change on the way.
func TestCallFidelity(t *testing.T) {
	s := startSet(t, `{"mcpServers": {"x": `+helperEntry(t, "X", "", 0)+`, "y": `+helperEntry(t, "Y", "", 0)+`}}`, nil, SetOptions{})
	ctx := context.Background()

	res, err := call(ctx, s, "y__rich", "")
	if err != nil {
		t.Fatal(err)
	}
	// The same call straight to the helper, with no relay between: what
	// the upstream sends (its SDK adds serverInfo and resultType to
	// richResult).
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(self)
	cmd.Env = append(os.Environ(), helperEnv+"=1", "HELPER_ID=Y")
	direct, err := mcp.NewClient(&mcp.Implementation{Name: "direct", Version: "1"}, nil).Connect(ctx, &mcp.CommandTransport{Command: cmd}, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer direct.Close()
	straight, err := direct.CallTool(ctx, &mcp.CallToolParams{Name: "rich"})
	if err != nil {
		t.Fatal(err)
	}
	got, _ := json.Marshal(res)
	want, _ := json.Marshal(straight)
	if !bytes.Equal(got, want) {
		t.Errorf("result changed on the way:\ngot  %s\nwant %s", got, want)
	}
	// and it carries all of richResult (the comparison is not vacuous).
	for _, part := range []string{`"isError":true`, `"structuredContent":{"items":[1,"two",null],"ok":false}`, `"com.example/trace":"r-1"`,
		`"type":"audio"`, `"type":"resource_link"`, `"blob":"AAEC"`, `"_meta":{"k":"text"}`} {
		if !bytes.Contains(got, []byte(part)) {
			t.Errorf("relayed result lacks %s: %s", part, got)
		}
	}

	for _, args := range []string{
		`{"z": 1, "a": [true, null, {"b": "c"}], "big": 12345678901234567890, "exact": 1.000000000000000000001}`,
		`{"text": "caf\u00e9 \ud83d\ude00 \"quoted\"", "empty": {}, "list": []}`,
		`{}`,
	} {
		res, err := call(ctx, s, "x__args", args)
		if err != nil {
			t.Fatal(err)
		}
		var compact bytes.Buffer
		if err := json.Compact(&compact, []byte(args)); err != nil {
			t.Fatal(err)
		}
		if got := text(t, res); got != compact.String() {
			t.Errorf("upstream received arguments\n%s\nwant (as sent, compacted)\n%s", got, compact.String())
		}
	}
}
