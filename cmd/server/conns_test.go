package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	nethttp "net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// rawConn is one client connection to the server, spoken to by hand.
type rawConn struct {
	net.Conn
	r *bufio.Reader
}

func dialRaw(t *testing.T, base string) *rawConn {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("tcp", u.Host)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &rawConn{Conn: c, r: bufio.NewReader(c)}
}

// do sends req on the connection and reads the answer's status and body.
// A long guard deadline keeps a broken server from hanging the test.
func (c *rawConn) do(t *testing.T, req string) (int, string, error) {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	if _, err := io.WriteString(c, req); err != nil {
		return 0, "", err
	}
	resp, err := nethttp.ReadResponse(c.r, nil)
	if err != nil {
		return 0, "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return resp.StatusCode, string(b), err
}

// closedByServer reports whether the server has closed the connection:
// reading it (past what the server sent) ends, with EOF or a reset, before
// wait rather than waiting.
func (c *rawConn) closedByServer(wait time.Duration) bool {
	c.SetReadDeadline(time.Now().Add(wait))
	for {
		if _, err := c.r.ReadByte(); err != nil {
			var ne net.Error
			return !(errors.As(err, &ne) && ne.Timeout())
		}
	}
}

func healthzRequest(host string) string {
	return "GET /healthz HTTP/1.1\r\nHost: " + host + "\r\n\r\n"
}

// A body arriving a byte at a time is cut at --read-timeout (408), while
// a response streaming past it (a call of 150 ms) is not.
func TestReadTimeout(t *testing.T) {
	base, s := startHTTPServer(t, nil, "--profile", "standard", "--read-timeout", "50ms")
	u, _ := url.Parse(base)

	c := dialRaw(t, base)
	head := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n", u.Host, len(initializeBody))
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	// One byte per 20 ms: each read is quick, the whole body is not.
	go func() {
		for i := range len(initializeBody) {
			if _, err := c.Write([]byte{initializeBody[i]}); err != nil {
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}()
	c.SetReadDeadline(time.Now().Add(30 * time.Second))
	resp, err := nethttp.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatalf("slow body: %v, want a 408 answer", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != nethttp.StatusRequestTimeout || !strings.Contains(string(body), "--read-timeout") {
		t.Errorf("slow body: %d %q, want 408 naming --read-timeout", resp.StatusCode, body)
	}
	if !c.closedByServer(30 * time.Second) {
		t.Error("the connection of the slow body stayed open")
	}

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	// test_tool_with_progress answers after 150 ms upstream.
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "test_tool_with_progress"})
	if err != nil || res.IsError {
		t.Errorf("a call answering after --read-timeout: %v %+v, want its result", err, res)
	}
}

// At --max-connections, a new client is served and the longest-idle
// connection closed; a connection serving a long response (an SSE stream)
// is never closed, though it is the oldest.
func TestMaxConnectionsEvictsIdle(t *testing.T) {
	base, _ := startHTTPServer(t, nil, "--max-connections", "3")
	u, _ := url.Parse(base)

	stream := dialRaw(t, base)
	init := fmt.Sprintf("POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", u.Host, len(initializeBody), initializeBody)
	stream.SetDeadline(time.Now().Add(30 * time.Second))
	io.WriteString(stream, init)
	resp, err := nethttp.ReadResponse(stream.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	fmt.Fprintf(stream, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
		u.Host, session, len(`{"jsonrpc":"2.0","method":"notifications/initialized"}`), `{"jsonrpc":"2.0","method":"notifications/initialized"}`)
	if resp, err = nethttp.ReadResponse(stream.r, nil); err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	fmt.Fprintf(stream, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", u.Host, session)
	if resp, err = nethttp.ReadResponse(stream.r, nil); err != nil || resp.StatusCode != nethttp.StatusOK {
		t.Fatalf("GET stream: %v %v", resp, err)
	}
	// The stream's headers are in: the server is serving it (active).

	idle := []*rawConn{dialRaw(t, base), dialRaw(t, base)}
	for i, c := range idle {
		if status, body, err := c.do(t, healthzRequest(u.Host)); err != nil || status != 200 {
			t.Fatalf("idle connection %d: %d %q %v", i, status, body, err)
		}
	}
	// Three connections held: one more is over the cap.
	newcomer := dialRaw(t, base)
	if status, body, err := newcomer.do(t, healthzRequest(u.Host)); err != nil || status != 200 {
		t.Fatalf("a new client at the cap: %d %q %v, want served", status, body, err)
	}
	// Which of the two idle connections is the longest idle depends on
	// when the server's goroutines noted them idle, which the client
	// cannot see; TestConnTracker asserts the order. Here: exactly one is
	// closed (before the newcomer was answered), the other still served.
	closed := -1
	for i, c := range idle {
		if c.closedByServer(time.Second) {
			if closed >= 0 {
				t.Fatal("both idle connections were closed; one eviction was due")
			}
			closed = i
		}
	}
	if closed < 0 {
		t.Fatal("no idle connection was closed")
	}
	if status, _, err := idle[1-closed].do(t, healthzRequest(u.Host)); err != nil || status != 200 {
		t.Errorf("the other idle connection: %d %v, want still served", status, err)
	}
	if stream.closedByServer(200 * time.Millisecond) {
		t.Error("the SSE stream was closed")
	}
}

// fakeConn records its Close; the tracker never reads or writes.
type fakeConn struct {
	net.Conn
	closed bool
}

func (c *fakeConn) Close() error { c.closed = true; return nil }

func TestConnTracker(t *testing.T) {
	type event struct {
		conn  int
		state nethttp.ConnState
	}
	cases := []struct {
		name   string
		max    int
		events []event
		closed []int
	}{
		{"under the cap", 3, []event{{0, nethttp.StateNew}, {1, nethttp.StateNew}, {2, nethttp.StateNew}}, nil},
		{"oldest new closed", 2, []event{{0, nethttp.StateNew}, {1, nethttp.StateNew}, {2, nethttp.StateNew}}, []int{0}},
		{"longest idle closed, not the active older one", 2, []event{
			{0, nethttp.StateNew}, {0, nethttp.StateActive},
			{1, nethttp.StateNew}, {1, nethttp.StateActive}, {1, nethttp.StateIdle},
			{2, nethttp.StateNew},
		}, []int{1}},
		{"idle order is by the last request", 2, []event{
			{0, nethttp.StateNew}, {0, nethttp.StateActive}, {0, nethttp.StateIdle},
			{1, nethttp.StateNew}, {1, nethttp.StateActive}, {1, nethttp.StateIdle},
			{0, nethttp.StateActive}, {0, nethttp.StateIdle},
			{2, nethttp.StateNew},
		}, []int{1}},
		{"every other active: the newcomer closed", 2, []event{
			{0, nethttp.StateNew}, {0, nethttp.StateActive},
			{1, nethttp.StateNew}, {1, nethttp.StateActive},
			{2, nethttp.StateNew},
		}, []int{2}},
		{"a closed connection frees its slot", 2, []event{
			{0, nethttp.StateNew}, {1, nethttp.StateNew}, {0, nethttp.StateClosed}, {2, nethttp.StateNew},
		}, nil},
		{"no cap", 0, []event{{0, nethttp.StateNew}, {1, nethttp.StateNew}, {2, nethttp.StateNew}}, nil},
	}
	for _, c := range cases {
		tr := newConnTracker(c.max)
		conns := make([]*fakeConn, 3)
		for i := range conns {
			conns[i] = &fakeConn{}
		}
		for _, e := range c.events {
			tr.track(conns[e.conn], e.state)
		}
		var closed []int
		for i, fc := range conns {
			if fc.closed {
				closed = append(closed, i)
			}
		}
		if fmt.Sprint(closed) != fmt.Sprint(c.closed) {
			t.Errorf("%s: closed %v, want %v", c.name, closed, c.closed)
		}
	}
}

// initSession opens a session on the connection (initialize, then
// notifications/initialized) and returns its id.
func (c *rawConn) initSession(t *testing.T, host string) string {
	t.Helper()
	c.SetDeadline(time.Now().Add(30 * time.Second))
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nContent-Length: %d\r\n\r\n%s", host, len(initializeBody), initializeBody)
	resp, err := nethttp.ReadResponse(c.r, nil)
	if err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	session := resp.Header.Get("Mcp-Session-Id")
	if session == "" {
		t.Fatalf("initialize: %d, no session id", resp.StatusCode)
	}
	const initialized = `{"jsonrpc":"2.0","method":"notifications/initialized"}`
	fmt.Fprintf(c, "POST /mcp HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\nContent-Length: %d\r\n\r\n%s",
		host, session, len(initialized), initialized)
	if resp, err = nethttp.ReadResponse(c.r, nil); err != nil {
		t.Fatal(err)
	}
	io.ReadAll(resp.Body)
	resp.Body.Close()
	return session
}

// At --max-sessions, one more initialize is answered 503 with a JSON-RPC
// error naming the flag, while the open sessions are still served; a
// session that ends frees its place.
func TestMaxSessions(t *testing.T) {
	base, s := startHTTPServer(t, nil, "--max-sessions", "2")
	u, _ := url.Parse(base)
	var sessions []string
	for range 2 {
		sessions = append(sessions, dialRaw(t, base).initSession(t, u.Host))
	}
	// Without Mcp-Protocol-Version the SDK assumes 2025-03-26, which
	// allows batches: a batched initialize is counted like a single one,
	// and JSON the cap cannot decode as messages is refused rather than
	// let through.
	for _, c := range []struct {
		name, body string
		batch      bool
		id         any
	}{
		{"request", initializeBody, false, float64(1)},
		{"batch", "[" + initializeBody + "]", true, float64(1)},
		{"batch after whitespace", " \n[" + `{"jsonrpc":"2.0","method":"notifications/x"},` + initializeBody + "]", true, float64(1)},
		{"batch with a member not an object", "[1," + initializeBody + "]", true, nil},
		{"request with a method not a string", `{"jsonrpc":"2.0","id":1,"method":["initialize"]}`, false, nil},
		// The SDK reads "method" alone: a member "Method" after it does
		// not hide the initialize from the cap.
		{"request with a Method member", strings.Replace(initializeBody, `"params"`, `"Method":"ping","params"`, 1), false, float64(1)},
	} {
		status, _, body := rawPost(t, s.url, strings.NewReader(c.body), int64(len(c.body)), nil)
		type refusal struct {
			ID    any `json:"id"`
			Error struct {
				Code    int    `json:"code"`
				Message string `json:"message"`
			} `json:"error"`
		}
		var r refusal
		if c.batch {
			var rs []refusal
			json.Unmarshal([]byte(body), &rs)
			if len(rs) == 1 {
				r = rs[0]
			}
		} else {
			json.Unmarshal([]byte(body), &r)
		}
		if status != nethttp.StatusServiceUnavailable || r.ID != c.id || r.Error.Code != codeOverloaded || !strings.Contains(r.Error.Message, "--max-sessions 2") {
			t.Fatalf("%s of initialize at the cap: %d %s, want 503 with a JSON-RPC error of id %v naming --max-sessions 2 (batch %v)", c.name, status, body, c.id, c.batch)
		}
	}
	const list = `{"jsonrpc":"2.0","id":2,"method":"tools/list"}`
	hdr := map[string]string{"Mcp-Session-Id": sessions[0], "Mcp-Protocol-Version": "2025-11-25"}
	if status, _, body := rawPost(t, s.url, strings.NewReader(list), int64(len(list)), hdr); status != nethttp.StatusOK || !strings.Contains(body, `"tools"`) {
		t.Errorf("tools/list of an open session at the cap: %d %.200s, want served", status, body)
	}
	req, _ := nethttp.NewRequest(nethttp.MethodDelete, s.url, nil)
	req.Header.Set("Mcp-Session-Id", sessions[0])
	resp, err := nethttp.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	// The gateway forgets the ended session once the SDK has closed it.
	for i := 0; ; i++ {
		status, _, body := rawPost(t, s.url, strings.NewReader(initializeBody), int64(len(initializeBody)), nil)
		if status == nethttp.StatusOK {
			break
		}
		if i == 500 {
			t.Fatalf("initialize after a session ended: %d %s, want served", status, body)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// Sessions holding GET event streams on every connection the cap allows
// do not lock new clients out: past half of --max-connections a stream is
// refused (503), so a new client still initializes and is served.
func TestEventStreamsLeaveRoomForRequests(t *testing.T) {
	const maxConns = 4
	base, s := startHTTPServer(t, nil, "--max-connections", fmt.Sprint(maxConns))
	u, _ := url.Parse(base)
	var statuses []int
	for range maxConns {
		c := dialRaw(t, base)
		session := c.initSession(t, u.Host)
		fmt.Fprintf(c, "GET /mcp HTTP/1.1\r\nHost: %s\r\nAccept: text/event-stream\r\nMcp-Session-Id: %s\r\nMcp-Protocol-Version: 2025-11-25\r\n\r\n", u.Host, session)
		resp, err := nethttp.ReadResponse(c.r, nil)
		if err != nil {
			t.Fatalf("GET stream: %v", err)
		}
		if resp.StatusCode != nethttp.StatusOK {
			io.ReadAll(resp.Body)
			resp.Body.Close()
		}
		statuses = append(statuses, resp.StatusCode) // a 200's body stays open: the stream
	}
	if want := fmt.Sprint([]int{200, 200, 503, 503}); fmt.Sprint(statuses) != want {
		t.Errorf("GET streams answered %v, want %s (half of --max-connections %d)", statuses, want, maxConns)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t"}, nil).Connect(context.Background(),
		&mcp.StreamableClientTransport{Endpoint: s.url, MaxRetries: -1}, nil)
	if err != nil {
		t.Fatalf("a new client while streams are held: %v", err)
	}
	defer cs.Close()
	if _, err := cs.ListTools(context.Background(), nil); err != nil {
		t.Errorf("tools/list of the new client: %v", err)
	}
}
