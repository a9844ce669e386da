package jsonrpcwire

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// DefaultTerminateDuration is how long CommandTransport waits, after
// closing the server's stdin, for it to exit before SIGTERM (and as long
// again before SIGKILL): the SDK's own default.
const DefaultTerminateDuration = 5 * time.Second

// CommandTransport is the SDK's mcp.CommandTransport (the client side of a
// stdio server it starts), except that a line the server writes on stdout
// that is not JSON is handed to Stray and skipped, where the SDK would end
// the session on it. Servers that print a greeting or a stray debug line
// to stdout (MCP forbids it; many do) stay usable.
type CommandTransport struct {
	Command *exec.Cmd
	// TerminateDuration: 0 is DefaultTerminateDuration.
	TerminateDuration time.Duration
	// Stray receives each skipped line (without its newline); nil drops
	// them.
	Stray func(line []byte)
}

// Connect implements mcp.Transport: it starts the command.
func (t *CommandTransport) Connect(ctx context.Context) (mcp.Connection, error) {
	stdout, err := t.Command.StdoutPipe()
	if err != nil {
		return nil, err
	}
	stdin, err := t.Command.StdinPipe()
	if err != nil {
		return nil, err
	}
	if err := t.Command.Start(); err != nil {
		return nil, err
	}
	td := t.TerminateDuration
	if td <= 0 {
		td = DefaultTerminateDuration
	}
	iot := &mcp.IOTransport{
		// The session is ended by closing stdin, not stdout.
		Reader: noClose{&jsonLines{r: bufio.NewReader(stdout), stray: t.Stray}},
		Writer: &processStdin{WriteCloser: stdin, cmd: t.Command, terminate: td},
	}
	return iot.Connect(ctx)
}

type noClose struct{ io.Reader }

func (noClose) Close() error { return nil }

// jsonLines passes on the lines of r that are JSON, whole, and hands the
// others to stray.
type jsonLines struct {
	r       *bufio.Reader
	stray   func([]byte)
	pending []byte
}

func (j *jsonLines) Read(p []byte) (int, error) {
	for len(j.pending) == 0 {
		line, err := readLine(j.r, DefaultMaxFrameBytes)
		switch {
		case errors.Is(err, errTooLong):
			// Not ours to judge: the SDK's own limit refuses it.
			return 0, fmt.Errorf("upstream stdout: a line of more than %d bytes", DefaultMaxFrameBytes)
		case len(bytes.TrimSpace(line)) == 0:
		case json.Valid(line):
			j.pending = append(line, '\n')
		case j.stray != nil:
			j.stray(line)
		}
		if err != nil && len(j.pending) == 0 {
			return 0, err
		}
		if err != nil {
			break
		}
	}
	n := copy(p, j.pending)
	j.pending = j.pending[n:]
	return n, nil
}

// processStdin is the server's stdin; closing it ends the server as MCP's
// stdio shutdown says: close stdin, wait, SIGTERM, wait, SIGKILL.
type processStdin struct {
	io.WriteCloser
	cmd       *exec.Cmd
	terminate time.Duration
}

func (s *processStdin) Close() error {
	if err := s.WriteCloser.Close(); err != nil {
		return fmt.Errorf("closing stdin: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- s.cmd.Wait() }()
	wait := func() (error, bool) {
		select {
		case err := <-exited:
			return err, true
		case <-time.After(s.terminate):
			return nil, false
		}
	}
	if err, ok := wait(); ok {
		return err
	}
	if s.cmd.Process.Signal(syscall.SIGTERM) == nil {
		if err, ok := wait(); ok {
			return err
		}
	}
	if err := s.cmd.Process.Kill(); err != nil {
		return err
	}
	if err, ok := wait(); ok {
		return err
	}
	return errors.New("unresponsive subprocess")
}
