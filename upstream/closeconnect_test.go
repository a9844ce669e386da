package upstream

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
	"testing"

	"go.uber.org/goleak"
)

// TestCloseWhileConnectingLeavesNothingRunning: Close called while the first
// connection is being made waits for that attempt, and a session that
// opened after Close must be ended before Close returns: its process
// reaped, no goroutine left terminating it.
func TestCloseWhileConnectingLeavesNothingRunning(t *testing.T) {
	defer goleak.VerifyNone(t, goleak.IgnoreCurrent())
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	pidFile := filepath.Join(t.TempDir(), "pid")
	doc := resolve(t, `{"mcpServers": {"slow": `+stdioEntry(self, map[string]string{
		helperEnv: "1", "HELPER_ID": "slow", "HELPER_PID_FILE": pidFile, "HELPER_INIT_DELAY": "300ms",
	})+`}}`, nil)
	c := NewClient(doc.Servers[0], Options{})
	started := make(chan error, 1)
	go func() { started <- c.Start(context.Background()) }()
	var pid int
	waitFor(t, "helper started", func() bool {
		b, err := os.ReadFile(pidFile)
		pid, _ = strconv.Atoi(string(b))
		return err == nil && pid > 0
	})
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, 0); !errors.Is(err, syscall.ESRCH) {
		t.Errorf("stdio server %d still exists after Close (kill 0: %v)", pid, err)
	}
	if err := <-started; !errors.Is(err, ErrUnavailable) {
		t.Errorf("Start = %v, want an ErrUnavailable error (closed while connecting)", err)
	}
	if h := c.Health(); h.State != StateClosed {
		t.Errorf("state %s after Close", h.State)
	}
}
