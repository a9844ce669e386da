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
// body is the bytes read.
func (h *hardening) readBody(w http.ResponseWriter, r *http.Request) bool {
	limit := h.bodyLimit()
	if r.ContentLength > limit {
		http.Error(w, fmt.Sprintf("request body of %d bytes exceeds %d bytes (--max-body-bytes)", r.ContentLength, limit), http.StatusRequestEntityTooLarge)
		return false
	}
	// A body without a length (chunked) is cut at the limit.
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if r.Method != http.MethodPost {
		return true // GET and DELETE carry no body the SDK reads
	}
	// Past --read-timeout (http.Server.ReadTimeout) the read fails.
	body, err := io.ReadAll(r.Body)
	var mbe *http.MaxBytesError
	switch {
	case errors.As(err, &mbe):
		http.Error(w, fmt.Sprintf("request body exceeds %d bytes (--max-body-bytes)", mbe.Limit), http.StatusRequestEntityTooLarge)
		return false
	case errors.Is(err, os.ErrDeadlineExceeded):
		w.Header().Set("Connection", "close")
		http.Error(w, fmt.Sprintf("request body not received within %v (--read-timeout)", h.readTimeout), http.StatusRequestTimeout)
		return false
	case err != nil:
		http.Error(w, "reading the request body: "+err.Error(), http.StatusBadRequest)
		return false
	}
	if code, msg := checkOneJSONValue(body); code != 0 {
		writeRPCError(w, code, msg)
		return false
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	return true
}

// checkOneJSONValue returns a JSON-RPC error code and message unless body
// is one JSON object or array, surrounded by white space only.
func checkOneJSONValue(body []byte) (int, string) {
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
	return checkIDs(v)
}

// checkIDs refuses a message (or a batch member) whose id the SDK would
// answer under another value: it holds numeric ids as int64, so 1.5 would
// be answered as 1 and 1e30 as -2^63, and the client would take the
// answer for another request. MCP ids are strings or integers; integers
// written as int64 writes them pass.
func checkIDs(v json.RawMessage) (int, string) {
	type message struct {
		ID json.RawMessage `json:"id"`
	}
	var msgs []message
	if v[0] == '[' {
		if json.Unmarshal(v, &msgs) != nil {
			return 0, "" // members that are not objects: the SDK refuses them
		}
	} else {
		var m message
		if json.Unmarshal(v, &m) != nil {
			return 0, ""
		}
		msgs = []message{m}
	}
	for _, m := range msgs {
		id := string(m.ID)
		if id == "" || id[0] == '"' || id == "null" {
			continue
		}
		if n, err := strconv.ParseInt(id, 10, 64); err != nil || strconv.FormatInt(n, 10) != id {
			return codeInvalidRequest, fmt.Sprintf("Invalid Request: id %s cannot be answered under the same value; use a string or an integer from -9223372036854775808 to 9223372036854775807, written without a fraction, exponent or sign on zero", id)
		}
	}
	return 0, ""
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
