package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/toolprof/toolprof/internal/syncbuf"
)

// rawClient speaks newline-delimited JSON-RPC to a server process over real
// pipes, byte for byte, as a client without an SDK would.
type rawClient struct {
	t      *testing.T
	cmd    *exec.Cmd
	in     io.WriteCloser
	out    *bufio.Reader
	stderr *syncbuf.Buffer
}

// reply is one line the server wrote, with the id kept as its bytes.
type reply struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Result json.RawMessage `json:"result"`
	Error  *struct {
		Code    int64  `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
	line string
}

func startRaw(t *testing.T, flags ...string) *rawClient {
	t.Helper()
	args := append([]string{"--profiles", profilesFile, "--telemetry", t.TempDir()}, flags...)
	return startRawUpstream(t, append(args, upstreamArgs(filepath.Join(t.TempDir(), "upstream.log"))...))
}

// startRawUpstream runs the server with args (flags, then -- and the
// upstream command).
func startRawUpstream(t *testing.T, args []string) *rawClient {
	t.Helper()
	cmd := exec.Command(bins.server, args...)
	c := &rawClient{t: t, cmd: cmd, stderr: &syncbuf.Buffer{}}
	cmd.Stderr = c.stderr
	var err error
	if c.in, err = cmd.StdinPipe(); err != nil {
		t.Fatal(err)
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	c.out = bufio.NewReaderSize(out, 1<<20)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		c.in.Close()
		done := make(chan struct{})
		go func() { cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			cmd.Process.Kill()
			<-done
		}
	})
	return c
}

func (c *rawClient) send(line string) {
	c.t.Helper()
	if _, err := io.WriteString(c.in, line+"\n"); err != nil {
		c.t.Fatalf("write %.80q: %v\nserver stderr:\n%s", line, err, c.stderr)
	}
}

// recv reads the next line the server writes, skipping notifications.
func (c *rawClient) recv() reply {
	c.t.Helper()
	for {
		line, err := c.out.ReadString('\n')
		if err != nil {
			c.t.Fatalf("read reply: %v (the server ended?)\nserver stderr:\n%s", err, c.stderr)
		}
		var r reply
		if strings.HasPrefix(line, "[") {
			return reply{line: strings.TrimSpace(line)}
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			c.t.Fatalf("reply %q: %v", line, err)
		}
		r.line = strings.TrimSpace(line)
		if r.Method != "" && r.ID == nil {
			continue // a notification
		}
		return r
	}
}

// handshake initializes a session at protocol version and returns the
// negotiated version.
func (c *rawClient) handshake(id, version string) string {
	c.t.Helper()
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":%s,"method":"initialize","params":{"protocolVersion":%q,"capabilities":{},"clientInfo":{"name":"raw","version":"1"}}}`, id, version))
	r := c.recv()
	var res struct {
		ProtocolVersion string `json:"protocolVersion"`
	}
	if r.Error != nil || json.Unmarshal(r.Result, &res) != nil {
		c.t.Fatalf("initialize: %s", r.line)
	}
	if string(r.ID) != id {
		c.t.Errorf("initialize answered with id %s, want %s", r.ID, id)
	}
	c.send(`{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	return res.ProtocolVersion
}

// ping checks the session still answers.
func (c *rawClient) ping(id string) {
	c.t.Helper()
	c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
	if r := c.recv(); r.Error != nil || string(r.ID) != id {
		c.t.Fatalf("ping %s: %s, want a result with id %s", id, r.line, id)
	}
}

func TestStdioBadLinesAnswered(t *testing.T) {
	const limit = 1024
	c := startRaw(t, "--max-frame-bytes", fmt.Sprint(limit))
	for _, tc := range []struct {
		name, line string
		code       int64
		id         string
		mention    string
	}{
		{"not JSON", "garbage", -32700, "null", "not JSON"},
		{"truncated object", `{"jsonrpc":"2.0","id":7,"method":"ping"`, -32700, "null", "not JSON"},
		{"not a message", `{"foo":1}`, -32600, "null", "invalid request"},
		{"a bare number", `42`, -32600, "null", "invalid request"},
		{"object id", `{"jsonrpc":"2.0","id":{"a":1},"method":"ping"}`, -32600, "null", "invalid"},
		{"wrong version tag", `{"jsonrpc":"1.0","id":9,"method":"ping"}`, -32600, "9", "version"},
		{"over the frame limit", `{"jsonrpc":"2.0","id":3,"method":"ping","params":{"pad":"` + strings.Repeat("x", 2*limit) + `"}}`, -32600, "null", fmt.Sprint(limit)},
		{"empty batch", `[]`, -32600, "null", "batch"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c.t = t
			c.send(tc.line)
			r := c.recv()
			if r.Error == nil || r.Error.Code != tc.code || string(r.ID) != tc.id || !strings.Contains(r.Error.Message, tc.mention) {
				t.Errorf("reply %s\nwant error %d with id %s mentioning %q", r.line, tc.code, tc.id, tc.mention)
			}
			c.ping("100") // the session goes on
		})
	}
	c.t = t
	c.handshake("1", "2025-11-25")
	c.send("still not json")
	if r := c.recv(); r.Error == nil || r.Error.Code != -32700 {
		t.Errorf("after the handshake: %s, want -32700", r.line)
	}
	c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/list"}`)
	if r := c.recv(); r.Error != nil || string(r.ID) != "2" || !strings.Contains(string(r.Result), "test_simple_text") {
		t.Errorf("tools/list after bad lines: %.300s", r.line)
	}
}

func TestStdioRequestIDsExact(t *testing.T) {
	c := startRaw(t)
	c.handshake("1.5", "2025-11-25")
	for _, id := range []string{"1.5", "1e30", "9007199254740993", "-0", "1.0", "2", `"2"`, `"a\u0062"`, "-7", "1E+2"} {
		c.send(`{"jsonrpc":"2.0","id":` + id + `,"method":"ping"}`)
		r := c.recv()
		if r.Error != nil || string(r.ID) != id {
			t.Errorf("ping with id %s answered %s: want the id byte for byte", id, r.line)
		}
	}
	// Errors keep the id too.
	c.send(`{"jsonrpc":"2.0","id":1e30,"method":"no/such/method"}`)
	if r := c.recv(); r.Error == nil || string(r.ID) != "1e30" {
		t.Errorf("error answer %s: want id 1e30", r.line)
	}
}

func TestStdioBatches(t *testing.T) {
	t.Run("refused on 2025-06-18", func(t *testing.T) {
		c := startRaw(t)
		if v := c.handshake("1", "2025-06-18"); v != "2025-06-18" {
			t.Fatalf("negotiated %s", v)
		}
		c.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"},{"jsonrpc":"2.0","id":3,"method":"ping"}]`)
		r := c.recv()
		if r.Error == nil || r.Error.Code != -32600 || string(r.ID) != "null" || !strings.Contains(r.Error.Message, "2025-06-18") {
			t.Errorf("batch on 2025-06-18: %s, want one -32600 naming the version", r.line)
		}
		c.ping("4")
	})
	t.Run("refused before initialize", func(t *testing.T) {
		c := startRaw(t)
		c.send(`[{"jsonrpc":"2.0","id":2,"method":"ping"}]`)
		if r := c.recv(); r.Error == nil || r.Error.Code != -32600 {
			t.Errorf("batch before initialize: %s, want -32600", r.line)
		}
		c.ping("3")
	})
	t.Run("served on 2025-03-26", func(t *testing.T) {
		c := startRaw(t)
		if v := c.handshake("1", "2025-03-26"); v != "2025-03-26" {
			t.Fatalf("negotiated %s", v)
		}
		c.send(`[{"jsonrpc":"2.0","id":2.5,"method":"ping"},{"jsonrpc":"2.0","method":"notifications/roots/list_changed"},{"jsonrpc":"2.0","id":"x","method":"tools/list"},{"bad":1}]`)
		r := c.recv()
		var got []reply
		if err := json.Unmarshal([]byte(r.line), &got); err != nil || len(got) != 3 {
			t.Fatalf("batch answer %.300s: want an array of 3 (two results, one error)", r.line)
		}
		if string(got[0].ID) != "2.5" || string(got[1].ID) != `"x"` || got[1].Error != nil || string(got[2].ID) != "null" || got[2].Error == nil {
			t.Errorf("batch answer %.300s: want ids 2.5 and \"x\", then the error for the bad element, in the batch's order", r.line)
		}
	})
}

// pythonUpstream is the command running testdata/upstream.py with args.
func pythonUpstream(t *testing.T, args ...string) []string {
	t.Helper()
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3:", err)
	}
	return append([]string{"--", py, "testdata/upstream.py"}, args...)
}

// End of input is a clean stop whatever the upstream: one that exits with
// a status of its own when its stdin closes, one that greets on stdout
// before its first message (the "invalid character '/'" of a server
// printing its path).
func TestStdioEndOfInputIsCleanStop(t *testing.T) {
	tests := []struct {
		name     string
		upstream func(t *testing.T) []string
		stderr   string // in the server's stderr
	}{
		{"everything-server", func(*testing.T) []string { return []string{"--", bins.everything} }, ""},
		{"python", func(t *testing.T) []string { return pythonUpstream(t) }, ""},
		{"python exiting 3", func(t *testing.T) []string { return pythonUpstream(t, "--exit", "3") }, "exit status 3"},
		{"python greeting on stdout", func(t *testing.T) []string {
			return pythonUpstream(t, "--banner", "/srv/mcp/upstream.py: ready")
		}, "/srv/mcp/upstream.py: ready"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := append([]string{"--telemetry", t.TempDir()}, tt.upstream(t)...)
			cmd := exec.Command(bins.server, args...)
			cmd.Stdin = strings.NewReader("")
			stderr := &syncbuf.Buffer{}
			cmd.Stderr = stderr
			if err := cmd.Run(); err != nil {
				t.Fatalf("stdin at EOF at once: %v, want exit 0\n%s", err, stderr)
			}
			if !strings.Contains(stderr.String(), tt.stderr) {
				t.Errorf("stderr %s\nwant it to mention %q", stderr, tt.stderr)
			}
		})
	}
	t.Run("greeting skipped, session served", func(t *testing.T) {
		c := startRawUpstream(t, append([]string{"--telemetry", t.TempDir()},
			pythonUpstream(t, "--banner", "/srv/mcp/upstream.py: ready")...))
		c.handshake("1", "2025-11-25")
		c.send(`{"jsonrpc":"2.0","id":2,"method":"tools/call","params":{"name":"echo","arguments":{}}}`)
		if r := c.recv(); r.Error != nil || !strings.Contains(string(r.Result), `"ok"`) {
			t.Errorf("echo through the gateway: %s", r.line)
		}
	})
}

// A client that reads slowly over a real pipe gets every progress and log
// notification of its call before the call's answer: the gateway waits for
// them to be written (backpressure) rather than answering first and
// dropping the rest.
func TestSlowClientGetsEveryNotification(t *testing.T) {
	const n = 1500 // progress notifications, and as many log messages
	c := startRawUpstream(t, append([]string{"--telemetry", t.TempDir()},
		pythonUpstream(t)...))
	c.handshake("1", "2025-11-25")
	c.send(`{"jsonrpc":"2.0","id":2,"method":"logging/setLevel","params":{"level":"info"}}`)
	if r := c.recv(); r.Error != nil {
		t.Fatalf("logging/setLevel: %s", r.line)
	}
	c.send(fmt.Sprintf(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"flood","arguments":{"n":%d},"_meta":{"progressToken":"mine"}}}`, n))
	progress, logs := 0, 0
	for {
		time.Sleep(200 * time.Microsecond) // a slow reader: the pipe fills, the gateway's writes block
		line, err := c.out.ReadString('\n')
		if err != nil {
			t.Fatalf("read: %v after %d progress, %d logs\n%s", err, progress, logs, c.stderr)
		}
		var m struct {
			ID     json.RawMessage `json:"id"`
			Method string          `json:"method"`
			Params struct {
				ProgressToken any `json:"progressToken"`
			} `json:"params"`
			Result json.RawMessage `json:"result"`
		}
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		switch {
		case m.Method == "notifications/progress" && m.Params.ProgressToken == "mine":
			progress++
		case m.Method == "notifications/message":
			logs++
		case string(m.ID) == "3":
			if progress != n || logs != n {
				t.Errorf("before the answer: %d progress notifications and %d log messages, want %d of each\n%s", progress, logs, n, c.stderr)
			}
			return
		}
	}
}
