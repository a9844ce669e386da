package gateway

// Protocol 2026-07-28 has no protocol sessions: every request names its
// version and client in _meta, and a server's tool list must not vary per
// connection or as a side effect of other requests. Over stdio (and any
// transport of Server) the middleware serves a request of 2026-07-28 or
// later by these rules, and earlier ones with sessions. HTTPHandler therefore
// serves each path twice: requests whose Mcp-Protocol-Version header is
// 2026-07-28 or later go to a stateless SDK handler, the others (clients
// of 2025-11-25 and earlier) to the stateful one, with sessions as before.
//
// A request served statelessly is listed and may call what its path, its
// credential and the upstreams' tools allow, nothing else: exploration is
// picked by a stable hash (of the credential, or without one of the
// client's name and the UTC day), and enable_tools is not offered. Its
// calls are grouped into usage sessions for telemetry, by the W3C
// traceparent trace id in params._meta, else by the caller (credential hash
// and client name) until an idle gap (Options.UsageIdleGap).

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
	"github.com/toolprof/toolprof/telemetry"
)

// protocolSessionless is the first protocol version without protocol
// sessions (SEP-2575).
const protocolSessionless = "2026-07-28"

// DefaultUsageIdleGap ends a caller-attributed usage session after this
// long without a request.
const DefaultUsageIdleGap = 30 * time.Minute

// maxUsageSessions bounds the usage sessions held open: past it the
// least recently used one is ended, so that callers inventing trace ids
// cannot grow the table.
const maxUsageSessions = 10000

// protocolHeader is the request header naming the protocol version.
const protocolHeader = "Mcp-Protocol-Version"

// routeProtocol decides which handler serves r: stateless for protocol
// 2026-07-28 and later. A POST whose body names a protocol version in
// _meta that the header does not (or that is sent without the header) is
// answered -32020 as the SDK does, counted in Health.Refused, and ok is
// false. The body's decode is the one it carries (DecodedBody), else it
// is read and decoded here. r's body is then a reader of its bytes, and
// msg their message when jsonrpcwire.DecodePlain reads them (nil
// otherwise), so that the fast path does not decode them again.
func (g *Gateway) routeProtocol(w http.ResponseWriter, r *http.Request, maxBody int64) (stateless bool, msg jsonrpc.Message, ok bool) {
	header := r.Header.Get(protocolHeader)
	r.Header.Del(jsonrpcwire.RequestIDHeader) // only the gateway's reaches the handlers
	if r.Method != http.MethodPost {
		return header >= protocolSessionless, nil, true
	}
	var d *jsonrpcwire.Body
	db, handed := r.Body.(*decodedBody)
	var body []byte
	var err error
	if handed {
		d, body = db.decode, db.decode.Data
	} else {
		body, err = io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	}
	r.Body.Close()
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			http.Error(w, fmt.Sprintf("request body exceeds %d bytes", mbe.Limit), http.StatusRequestEntityTooLarge)
			return false, nil, false
		}
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return false, nil, false
	}
	if int64(len(body)) > maxBody { // handed over, read under another limit
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes", maxBody), http.StatusRequestEntityTooLarge)
		return false, nil, false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	if !handed {
		d = bodyProtocol(body)
	}
	var id json.RawMessage
	var version string
	var plainMsg jsonrpc.Message
	if d != nil {
		id, version, plainMsg = d.ID(), d.Version, d.Plain
	}
	// The span's id is the SDK's: taken from a message it reads the same
	// way. encoding/json would match a member "ID" for "id".
	if plainMsg != nil && len(id) > 0 {
		r.Header.Set(jsonrpcwire.RequestIDHeader, string(id))
	}
	var refusal string
	switch {
	case version == "" || version == header:
		return header >= protocolSessionless, plainMsg, true
	case header == "":
		refusal = fmt.Sprintf("%s header is required for requests carrying %q", protocolHeader, mcp.MetaKeyProtocolVersion)
	default:
		refusal = fmt.Sprintf("%s header %q does not match request %s %q", protocolHeader, header, mcp.MetaKeyProtocolVersion, version)
	}
	g.refused.headerMismatch.Add(1)
	g.logger.Warn("refused a request", "reason", "protocol version header mismatch", "header", truncate(header), "body", truncate(version))
	resp := struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id,omitempty"`
		Error   *jsonrpc.Error  `json:"error"`
	}{"2.0", id, &jsonrpc.Error{Code: mcp.CodeHeaderMismatch, Message: refusal}}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	json.NewEncoder(w).Encode(resp)
	return false, nil, false
}

// decodedBody is a POST body that carries its decode.
type decodedBody struct {
	io.Reader
	decode *jsonrpcwire.Body
}

func (*decodedBody) Close() error { return nil }

// DecodedBody is a request body of b's bytes that carries b, as
// jsonrpcwire.DecodeBody decoded them, for the gateway's HTTP handler: it
// then serves b.Data without reading the body or decoding it again. The
// decode goes with the body: a handler that puts another body in its
// place leaves the gateway to read and decode that one, so a decode can
// never stand for bytes other than its own.
func DecodedBody(b *jsonrpcwire.Body) io.ReadCloser {
	if b == nil {
		return http.NoBody
	}
	return &decodedBody{Reader: bytes.NewReader(b.Data), decode: b}
}

// bodyProtocol is body decoded, when it is a single JSON-RPC message (nil
// for a batch or anything that does not parse: the SDK answers those).
func bodyProtocol(body []byte) *jsonrpcwire.Body {
	// JSON's white space only: bytes.TrimSpace would take a body ending
	// in \v or U+00A0, which JSON refuses, for one message.
	if b := bytes.TrimLeft(body, " \t\r\n"); len(b) == 0 || b[0] != '{' || !json.Valid(body) {
		return nil
	}
	d, err := jsonrpcwire.DecodeBody(body)
	if err != nil {
		return nil
	}
	return d
}

// sessionless reports whether req follows protocol 2026-07-28 or later:
// the version its _meta names, or the one its connection negotiated (so
// that a stdio client of 2026-07-28 cannot reach the session rules by
// leaving _meta out or naming an earlier version in it).
func sessionless(req mcp.Request) bool {
	if p := req.GetParams(); p != nil && !reflect.ValueOf(p).IsNil() { // a notification's params may be a typed nil
		if v, _ := p.GetMeta()[mcp.MetaKeyProtocolVersion].(string); v >= protocolSessionless {
			return true
		}
	}
	ss, _ := req.GetSession().(*mcp.ServerSession)
	if ss == nil {
		return false
	}
	p := ss.InitializeParams()
	return p != nil && p.ProtocolVersion >= protocolSessionless
}

// metaClient is the clientInfo of a request's _meta.
func metaClient(req mcp.Request) (name, version, protocol string) {
	meta := paramsMeta(req.GetParams()) // a request without params (ping) has a nil pointer

	protocol, _ = meta[mcp.MetaKeyProtocolVersion].(string)
	var impl mcp.Implementation
	switch v := meta[mcp.MetaKeyClientInfo].(type) {
	case *mcp.Implementation:
		impl = *v
	case map[string]any: // as a request's _meta is decoded: read, not encoded and decoded again
		impl.Name, _ = v["name"].(string)
		impl.Version, _ = v["version"].(string)
	case nil:
	default:
		if b, err := json.Marshal(v); err == nil {
			json.Unmarshal(b, &impl)
		}
	}
	return impl.Name, impl.Version, protocol
}

// traceparentPattern is a W3C traceparent (version 00 layout; later
// versions may append fields).
var traceparentPattern = regexp.MustCompile(`^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}(-.*)?$`)

// traceID is the trace id of the traceparent in a request's _meta, "" when
// it has none or an invalid one (version ff, an all-zero id).
func traceID(req mcp.Request) string {
	tp, _ := paramsMeta(req.GetParams())["traceparent"].(string)
	m := traceparentPattern.FindStringSubmatch(tp)
	if m == nil || tp[:2] == "ff" || m[1] == "00000000000000000000000000000000" {
		return ""
	}
	return m[1]
}

// exploringStable decides exploration by a stable hash of key, so that one
// caller is always served one list.
func (g *Gateway) exploringStable(key string) bool {
	if g.opts.Explore <= 0 {
		return false
	}
	h := sha256.Sum256([]byte("toolprof explore\x00" + key))
	return float64(binary.BigEndian.Uint64(h[:8])>>11)/(1<<53) < g.opts.Explore
}

// usageKey names one usage session.
type usageKey struct {
	rule    telemetry.Attribution
	key     string // trace id, or credential hash and client name
	profile string
}

// usageEntry is an open usage session and its last request (guarded by
// Gateway.mu).
type usageEntry struct {
	s    *session
	last time.Time
}

// usageSession returns the session a sessionless request belongs to, for
// profile (the path's, or its credential's). Only tools/list and tools/call
// open (and record) a usage session; for any other method the session is
// a transient one carrying the profile served.
func (g *Gateway) usageSession(method string, req mcp.Request, profile, transport string) *session {
	cred, hasCred := g.requestCredential(req)
	name, version, protocol := metaClient(req)
	// The session is built only when one is opened: a call of an open
	// usage session returns that one and allocates none.
	served, cacheScope := profile, "public"
	// The caller's list is a function of path and credential: a token that
	// selects a profile or ceiling is not explored (explorable), and its
	// listing is private.
	if g.explorable(profile, cred, hasCred) {
		cacheScope = "private" // callers at one URL see different lists
		key := "client:" + name + "\x00" + time.Now().UTC().Format(time.DateOnly)
		if hasCred {
			key = "credential:" + cred.Hash
		}
		if g.exploringStable(key) {
			served = g.cat().explore
		}
	} else if hasCred && cred.Selects() {
		cacheScope = "private"
	}
	if method != methodListTools && method != methodCallTool {
		return &session{profile: served, sessionless: true, cacheScope: cacheScope}
	}
	k := usageKey{rule: telemetry.AttributionTrace, key: traceID(req), profile: served}
	if k.key == "" {
		k.rule, k.key = telemetry.AttributionCaller, "client:"+name
		if hasCred {
			k.key = "credential:" + cred.Hash + "\x00" + name
		}
	}
	now := time.Now()
	var ended []*usageEntry
	g.mu.Lock()
	if e, ok := g.usage[k]; ok && now.Sub(e.last) <= g.opts.UsageIdleGap && !g.closed {
		e.last = now
		g.mu.Unlock()
		return e.s
	}
	ended = g.sweepUsageLocked(now, k)
	s := &session{profile: served, sessionless: true, cacheScope: cacheScope}
	s.rec = telemetry.Session{
		ID:              g.newSessionID(),
		Start:           now,
		Transport:       transport,
		ClientName:      storedName(name, maxClientField),
		ClientVersion:   storedName(version, maxClientField),
		ProtocolVersion: storedName(protocol, maxClientField),
		Profile:         s.profile,
		Exploration:     s.profile != profile,
		ReadOnly:        g.readOnly(s.profile),
		ServerVersion:   g.opts.ServerVersion,
		CatalogHash:     g.cat().hash,
		Attribution:     k.rule,
	}
	if k.rule == telemetry.AttributionTrace {
		s.rec.Trace = telemetry.TraceKey(k.key) // other replicas' records of the trace match it
	}
	if !g.closed {
		g.usage[k] = &usageEntry{s: s, last: now}
	}
	g.mu.Unlock()
	for _, e := range ended {
		g.endUsage(e)
	}
	return s
}

// sweepUsageLocked removes the entry of k and every idle usage session
// (the least recently used one too when the table is full) and returns
// them for endUsage.
func (g *Gateway) sweepUsageLocked(now time.Time, k usageKey) []*usageEntry {
	var ended []*usageEntry
	if e, ok := g.usage[k]; ok {
		ended = append(ended, e)
		delete(g.usage, k)
	}
	if len(g.usage) < maxUsageSessions && now.Sub(g.usageSwept) < g.opts.UsageIdleGap/4 {
		return ended
	}
	g.usageSwept = now
	var oldest usageKey
	var oldestAt time.Time
	for uk, e := range g.usage {
		if now.Sub(e.last) > g.opts.UsageIdleGap {
			ended = append(ended, e)
			delete(g.usage, uk)
			continue
		}
		if oldestAt.IsZero() || e.last.Before(oldestAt) {
			oldest, oldestAt = uk, e.last
		}
	}
	if len(g.usage) >= maxUsageSessions {
		ended = append(ended, g.usage[oldest])
		delete(g.usage, oldest)
	}
	return ended
}

// endUsage records the end of a usage session that was recorded: its last
// request.
func (g *Gateway) endUsage(e *usageEntry) {
	s := e.s
	s.mu.Lock()
	s.rec.End = e.last
	started := s.recorded
	rec := s.rec
	s.mu.Unlock()
	if started && g.opts.Recorder != nil {
		g.opts.Recorder.Session(rec)
	}
}

// closeUsage ends every open usage session (Close).
func (g *Gateway) closeUsage() {
	g.mu.Lock()
	var open []*usageEntry
	for _, e := range g.usage {
		open = append(open, e)
	}
	clear(g.usage)
	g.mu.Unlock()
	for _, e := range open {
		g.endUsage(e)
	}
}

// serveSessionless is the middleware of a stateless server: each request
// is handled in the usage session it is attributed to, and recorded there.
func (g *Gateway) serveSessionless(ctx context.Context, method string, req mcp.Request, next mcp.MethodHandler, profile, transport string) (mcp.Result, error) {
	s := g.usageSession(method, req, profile, transport)
	res, err := g.dispatch(ctx, s, method, req, next)
	if err != nil {
		return res, err
	}
	switch r := res.(type) {
	case *mcp.DiscoverResult:
		r.Instructions = g.instructions(s)
	case *mcp.InitializeResult: // over stdio, an initialize naming 2026-07-28
		r.Instructions = g.instructions(s)
	}
	if method == methodListTools || method == methodCallTool {
		g.recordStart(s)
	}
	return res, nil
}
