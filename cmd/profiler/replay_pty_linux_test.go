package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/toolprof/toolprof/internal/testupstream"
)

// openPTY opens a pseudo-terminal pair and returns its controlling side
// (what a terminal shows is read there) and its terminal side.
func openPTY(t *testing.T) (ptmx, pts *os.File) {
	t.Helper()
	ptmx, err := os.OpenFile("/dev/ptmx", os.O_RDWR, 0)
	if err != nil {
		t.Fatalf("open /dev/ptmx: %v", err)
	}
	t.Cleanup(func() { ptmx.Close() })
	if err := unix.IoctlSetPointerInt(int(ptmx.Fd()), unix.TIOCSPTLCK, 0); err != nil {
		t.Fatalf("unlock pty: %v", err)
	}
	n, err := unix.IoctlGetInt(int(ptmx.Fd()), unix.TIOCGPTN)
	if err != nil {
		t.Fatalf("pty number: %v", err)
	}
	pts, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|unix.O_NOCTTY, 0)
	if err != nil {
		t.Fatalf("open pty: %v", err)
	}
	t.Cleanup(func() { pts.Close() })
	return ptmx, pts
}

// TestIsTerminalOnATerminal: the progress bar's condition holds on a
// terminal, directly and behind the serialising writer.
func TestIsTerminalOnATerminal(t *testing.T) {
	_, pts := openPTY(t)
	if !isTerminal(pts) || !isTerminal(&serialWriter{W: pts}) {
		t.Error("isTerminal(a pty) = false, want true")
	}
}

// TestReplayDrawsProgressOnATerminal: with stderr on a terminal, replay
// draws its progress bar there (off a terminal it draws nothing: see
// TestReplayAgainstGateway).
func TestReplayDrawsProgressOnATerminal(t *testing.T) {
	ptmx, pts := openPTY(t)
	shown := make(chan string)
	go func() {
		var b strings.Builder
		io.Copy(&b, ptmx) // until the terminal side is closed (EIO)
		shown <- b.String()
	}()
	pack := filepath.Join(t.TempDir(), ".mcp.json")
	doc, _ := json.Marshal(map[string]any{"mcpServers": map[string]any{"everything": map[string]any{"command": testupstream.EverythingServer(t)}}})
	if err := os.WriteFile(pack, doc, 0o644); err != nil {
		t.Fatal(err)
	}
	trace := writeTemp(t, "t.jsonl", `{"session": "a", "calls": [{"tool": "test_simple_text"}]}`+"\n"+`{"session": "b", "calls": [{"tool": "test_simple_text"}]}`+"\n")
	var stdout strings.Builder
	if err := run(context.Background(), []string{"replay", "--trace", trace, "--launch", pack}, &stdout, pts); err != nil {
		t.Fatal(err)
	}
	pts.Close()
	select {
	case out := <-shown:
		// The bar redraws at most every so often: any count of the 2 sessions.
		if !regexp.MustCompile(`replay +\d+% \|.*\| \([0-2]/2\)`).MatchString(out) {
			t.Errorf("terminal shows %q, want the replay progress bar counting 2 sessions", out)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("terminal output not read within 10 s")
	}
}
