package gateway

import (
	"bufio"
	"io"
	"net/http"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/toolprof/toolprof/internal/jsonrpcwire"
)

// refuseBatch answers a POST holding a JSON-RPC batch on an HTTP session
// whose negotiated protocol version has no batches (400, a JSON-RPC error
// naming the version), and reports whether it did. The SDK judges a batch
// by the Mcp-Protocol-Version header alone, and takes a request without it
// for 2025-03-26: a 2025-06-18 session omitting it could batch thousands
// of calls. Only the first byte of the body is read here; the SDK reads
// the rest.
func (g *Gateway) refuseBatch(w http.ResponseWriter, r *http.Request) bool {
	id := r.Header.Get("Mcp-Session-Id")
	if r.Method != http.MethodPost || id == "" || r.Body == nil {
		return false
	}
	br := bufio.NewReader(r.Body)
	r.Body = struct {
		io.Reader
		io.Closer
	}{br, r.Body}
	if !startsBatch(br) {
		return false
	}
	version, ok := g.sessionVersion(id)
	if !ok {
		return false // not a session of ours: the SDK answers
	}
	msg, refused := jsonrpcwire.BatchRefused(version)
	if !refused {
		return false
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(append(jsonrpcwire.ErrorLine(jsonrpc.CodeInvalidRequest, msg), '\n'))
	return true
}

// sessionVersion is the protocol version an HTTP session negotiated.
func (g *Gateway) sessionVersion(id string) (string, bool) {
	g.mu.Lock()
	var found *session
	for ss, s := range g.sessions {
		if ss.ID() == id {
			found = s
			break
		}
	}
	g.mu.Unlock()
	if found == nil {
		return "", false
	}
	found.mu.Lock()
	defer found.mu.Unlock()
	return found.rec.ProtocolVersion, true
}

// startsBatch reports whether the body's first byte past white space (which
// it consumes) opens an array.
func startsBatch(br *bufio.Reader) bool {
	for {
		b, err := br.Peek(1)
		if err != nil {
			return false
		}
		switch b[0] {
		case ' ', '\t', '\r', '\n':
			br.ReadByte()
		case '[':
			return true
		default:
			return false
		}
	}
}
