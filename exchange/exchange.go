package exchange

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/price"
)

// ProtocolVersion is the MCP protocol version the measuring client speaks.
const ProtocolVersion = "2025-11-25"

// Direction says which way a message travelled.
type Direction string

// The two directions of an exchange.
const (
	ClientToServer Direction = "client->server"
	ServerToClient Direction = "server->client"
)

// Message is one JSON-RPC message exactly as it travelled.
type Message struct {
	Direction Direction
	// Raw is the message's bytes without the newline that frames it on
	// stdio (the framing differs by transport; the message does not).
	Raw []byte
	// Method is the request or notification method, or for a response the
	// method of the request it answers.
	Method string
	Tokens map[string]int
}

// Exchange is a captured initialize + tools/list exchange.
type Exchange struct {
	Messages []Message
	// Bytes and Tokens are totals over Messages.
	Bytes  int
	Tokens map[string]int
	// Tools are the tools listed, in the order served, over every page read.
	Tools []*mcp.Tool
	// Pages is the number of tools/list responses read.
	Pages int
	// NextCursor is a cursor the server offered that was not followed (only
	// when the exchange did not paginate); empty when the listing was complete.
	NextCursor string
	// Instructions are the server's instructions from the initialize result.
	Instructions string
}

// Options configures Measure.
type Options struct {
	// Counter counts tokens. Required.
	Counter *price.Counter
	// Paginate follows nextCursor until the server offers none, as a client
	// that pages does. Without it the client sends one tools/list with no
	// cursor, as most clients do.
	Paginate bool
	// FirstCursor is the cursor of the first tools/list request when
	// paginating, for servers that list everything to a request without
	// one and page only on request (the gateway's StartCursor).
	FirstCursor string
	// ClientInfo is the clientInfo sent in initialize; nil sends
	// {"name":"toolprof-bench","version":"1"}.
	ClientInfo *mcp.Implementation
}

// Measure connects an MCP client speaking protocol 2025-11-25 to srv
// over newline-delimited JSON-RPC pipes (the stdio framing) and records every
// message in both directions: initialize and its result,
// notifications/initialized, and each tools/list request and result.
func Measure(ctx context.Context, srv *mcp.Server, opts Options) (*Exchange, error) {
	if opts.Counter == nil {
		return nil, errors.New("measure exchange: no token counter")
	}
	return measure(ctx, srv, opts)
}

// measure is Measure, counting no tokens when opts.Counter is nil.
func measure(ctx context.Context, srv *mcp.Server, opts Options) (*Exchange, error) {
	info := opts.ClientInfo
	if info == nil {
		info = &mcp.Implementation{Name: "toolprof-bench", Version: "1"}
	}
	rec := &recorder{}
	clientReads, serverWrites := io.Pipe()
	serverReads, clientWrites := io.Pipe()

	ss, err := srv.Connect(ctx, &mcp.IOTransport{
		Reader: serverReads,
		Writer: rec.writer(ServerToClient, serverWrites),
	}, nil)
	if err != nil {
		return nil, fmt.Errorf("measure exchange: connect server: %w", err)
	}
	client := mcp.NewClient(info, nil)
	cs, err := client.Connect(ctx, &mcp.IOTransport{
		Reader: clientReads,
		Writer: rec.writer(ClientToServer, clientWrites),
	}, &mcp.ClientSessionOptions{ProtocolVersion: ProtocolVersion})
	if err != nil {
		ss.Close()
		return nil, fmt.Errorf("measure exchange: initialize: %w", err)
	}

	ex := &Exchange{}
	if r := cs.InitializeResult(); r != nil {
		ex.Instructions = r.Instructions
	}
	listErr := listTools(ctx, cs, opts, ex)
	closeErr := cs.Close()
	// The server session ends when the client closes its end of the pipes.
	_ = ss.Wait()
	if listErr != nil {
		return nil, fmt.Errorf("measure exchange: %w", listErr)
	}
	if closeErr != nil {
		return nil, fmt.Errorf("measure exchange: close client: %w", closeErr)
	}
	if err := rec.finish(); err != nil {
		return nil, fmt.Errorf("measure exchange: %w", err)
	}

	ex.Tokens = make(map[string]int)
	methods := make(map[string]string) // request id -> method
	for _, raw := range rec.lines {
		m, err := classify(raw.raw, methods)
		if err != nil {
			return nil, fmt.Errorf("measure exchange: %w", err)
		}
		m.Direction = raw.dir
		if opts.Counter != nil {
			if m.Tokens, err = opts.Counter.Count(string(m.Raw)); err != nil {
				return nil, fmt.Errorf("measure exchange: %w", err)
			}
		}
		ex.Messages = append(ex.Messages, m)
		ex.Bytes += len(m.Raw)
		addTokens(ex.Tokens, m.Tokens)
	}
	return ex, nil
}

// listTools sends tools/list once, or until the cursors run out.
func listTools(ctx context.Context, cs *mcp.ClientSession, opts Options, ex *Exchange) error {
	params := &mcp.ListToolsParams{}
	if opts.Paginate {
		params.Cursor = opts.FirstCursor
	}
	for {
		res, err := cs.ListTools(ctx, params)
		if err != nil {
			return fmt.Errorf("tools/list (page %d): %w", ex.Pages+1, err)
		}
		ex.Pages++
		ex.Tools = append(ex.Tools, res.Tools...)
		if res.NextCursor == "" {
			return nil
		}
		if !opts.Paginate {
			ex.NextCursor = res.NextCursor
			return nil
		}
		if res.NextCursor == params.Cursor {
			return fmt.Errorf("tools/list: server repeated cursor %q", res.NextCursor)
		}
		params = &mcp.ListToolsParams{Cursor: res.NextCursor}
	}
}

// classify names the method of one raw JSON-RPC message, remembering request
// ids so that responses can be named after the request they answer.
func classify(raw []byte, methods map[string]string) (Message, error) {
	var head struct {
		ID     json.RawMessage `json:"id"`
		Method string          `json:"method"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return Message{}, fmt.Errorf("captured message is not a JSON-RPC object: %w: %.80q", err, raw)
	}
	m := Message{Raw: raw, Method: head.Method}
	switch {
	case head.Method != "" && len(head.ID) > 0:
		methods[string(head.ID)] = head.Method
	case head.Method == "":
		m.Method = methods[string(head.ID)]
	}
	return m, nil
}

// recorder collects the lines written in both directions in the order they
// were written. A line is recorded before it is handed to the pipe, so the
// peer cannot answer it before it is in the log.
type recorder struct {
	mu      sync.Mutex
	lines   []capturedLine
	partial map[Direction][]byte
}

type capturedLine struct {
	dir Direction
	raw []byte
}

func (r *recorder) writer(dir Direction, w io.WriteCloser) io.WriteCloser {
	return &recordingWriter{rec: r, dir: dir, w: w}
}

func (r *recorder) record(dir Direction, p []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.partial == nil {
		r.partial = make(map[Direction][]byte)
	}
	buf := append(r.partial[dir], p...)
	for {
		i := bytes.IndexByte(buf, '\n')
		if i < 0 {
			break
		}
		r.lines = append(r.lines, capturedLine{dir: dir, raw: bytes.Clone(buf[:i])})
		buf = buf[i+1:]
	}
	r.partial[dir] = bytes.Clone(buf)
}

// finish reports a message left without its terminating newline.
func (r *recorder) finish() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	for dir, rest := range r.partial {
		if len(rest) > 0 {
			return fmt.Errorf("unterminated %s message: %.80q", dir, rest)
		}
	}
	return nil
}

type recordingWriter struct {
	rec *recorder
	dir Direction
	w   io.WriteCloser
}

func (w *recordingWriter) Write(p []byte) (int, error) {
	w.rec.record(w.dir, p)
	return w.w.Write(p)
}

func (w *recordingWriter) Close() error { return w.w.Close() }
