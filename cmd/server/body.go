package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"

	"github.com/toolprof/toolprof/gateway"
	"github.com/toolprof/toolprof/internal/jsonrpcwire"
)

// JSON-RPC error codes of a body refused before the SDK sees it.
const (
	codeParseError     = -32700
	codeInvalidRequest = -32600
)

// readBody bounds the request body (--max-body-bytes) and reads a POST's
// body whole, then checks it is exactly one JSON
// object or array (one message or one batch): the SDK decodes the first
// JSON value of a body and silently drops whatever follows. It answers the
// client itself and returns false when the body is refused; otherwise r's
// body is the bytes read, and pb their one decode, which the later checks
// and the gateway read (nil for a request other than a POST).
func (h *hardening) readBody(w http.ResponseWriter, r *http.Request) (pb *jsonrpcwire.Body, ok bool) {
	limit := h.bodyLimit()
	if r.ContentLength > limit {
		http.Error(w, fmt.Sprintf("request body of %d bytes exceeds %d bytes (--max-body-bytes)", r.ContentLength, limit), http.StatusRequestEntityTooLarge)
		return nil, false
	}
	// A body without a length (chunked) is cut at the limit.
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if r.Method != http.MethodPost {
		return nil, true // GET and DELETE carry no body the SDK reads
	}
	// Past --read-timeout (http.Server.ReadTimeout) the read fails.
	body, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes (--max-body-bytes)", mbe.Limit), http.StatusRequestEntityTooLarge)
		return nil, false
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body not received within %v (--read-timeout)", h.readTimeout), http.StatusRequestTimeout)
		return nil, false
	case err != nil:
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return nil, false
	}
	pb, code, msg := inspectBody(body)
	if code != 0 {
		writeRPCError(w, code, msg)
		return nil, false
	}
	// The gateway takes the decode with the bytes, and decodes no more.
	r.Body = gateway.DecodedBody(pb)
	return pb, true
}

// inspectBody decodes body once (jsonrpcwire.DecodeBody, which reads the
// members as the SDK does, so that every check sees the id and method the
// SDK serves) and returns it, or a JSON-RPC error code and message unless
// it is one JSON object or array, surrounded by white space only, whose
// ids can be answered (checkIDs). encoding/json checks it is one value.
func inspectBody(body []byte) (*jsonrpcwire.Body, int, string) {
	first := bytes.TrimLeft(body, " \t\r\n")
	if len(first) == 0 || (first[0] != '{' && first[0] != '[') || !json.Valid(body) {
		code, msg := oneJSONValueError(body)
		return nil, code, msg
	}
	pb, err := jsonrpcwire.DecodeBody(body)
	if err != nil {
		// The SDK's decoder, reading more members, refuses it too.
		return nil, codeParseError, fmt.Sprintf("Parse error: the request body is not a JSON-RPC message: %v", err)
	}
	if code, msg := checkIDs(pb.Msgs); code != 0 {
		return nil, code, msg
	}
	return pb, 0, ""
}

// oneJSONValueError is the JSON-RPC error code and message of a body that
// is not one JSON object or array, surrounded by white space only.
func oneJSONValueError(body []byte) (int, string) {
	dec := json.NewDecoder(bytes.NewReader(body))
	var v json.RawMessage
	if err := dec.Decode(&v); err != nil {
		return codeParseError, fmt.Sprintf("Parse error: the request body is not JSON: %v", err)
	}
	if rest := bytes.TrimLeft(body[dec.InputOffset():], " \t\r\n"); len(rest) > 0 {
		return codeParseError, fmt.Sprintf("Parse error: the request body holds more after its first JSON value (byte %d on); send one message, or one batch array, per POST", len(body)-len(rest))
	}
	if v[0] != '{' && v[0] != '[' {
		return codeInvalidRequest, "Invalid Request: the request body is a JSON " + jsonKind(v[0]) + "; want a JSON-RPC message (object) or a batch (array)"
	}
	// Unreached: json.Valid took body for one object or array.
	return codeParseError, "Parse error: the request body is not JSON"
}

// checkIDs refuses a message (or a batch member) whose id the SDK would
// answer under another value: it decodes a numeric id as a float64, then
// holds it as an int64, so 1.5 would be answered as 1, 1e30 as -2^63 and
// 2^53+1 as 2^53, and the client would take the answer for another
// request. MCP ids are strings or integers; integers a float64 holds
// exactly, written as int64 writes them, pass.
func checkIDs(msgs []jsonrpcwire.BodyMessage) (int, string) {
	for _, m := range msgs {
		id := string(m.ID)
		if id == "" || id[0] == '"' || id == "null" {
			continue
		}
		if n, err := strconv.ParseInt(id, 10, 64); err != nil || strconv.FormatInt(n, 10) != id || !exactFloat(n) {
			return codeInvalidRequest, fmt.Sprintf("Invalid Request: id %s cannot be answered under the same value; use a string or an integer from -9007199254740992 to 9007199254740992, written without a fraction, exponent or sign on zero", id)
		}
	}
	return 0, ""
}

// exactFloat reports whether the float64 nearest n is n, as the SDK's
// int64 of it then is (2^63, nearest to the largest int64s, is beyond
// int64).
func exactFloat(n int64) bool {
	f := float64(n)
	return f < 1<<63 && int64(f) == n
}

func jsonKind(first byte) string {
	switch first {
	case '"':
		return "string"
	case 't', 'f':
		return "boolean"
	case 'n':
		return "null"
	}
	return "number"
}

// writeRPCError answers 400 with a JSON-RPC error of no id, as the SDK's
// client decodes a refused request's body.
func writeRPCError(w http.ResponseWriter, code int, msg string) {
	b, _ := json.Marshal(map[string]any{
		"jsonrpc": "2.0",
		"id":      nil,
		"error":   map[string]any{"code": code, "message": msg},
	})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusBadRequest)
	w.Write(b)
}
