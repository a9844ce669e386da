package upstream

import (
	"bytes"
	"encoding/json"
	"io"
	"sync"
)

// scrubData removes resolved values from the data of an upstream's
// JSON-RPC error while keeping it valid JSON. Strings, object keys and
// numbers are scrubbed after decoding, so a value the upstream escaped
// (`\u0041`, `\/`) is still found. Data holding no resolved value is
// returned byte for byte; data that had one is re-encoded (object keys in
// sorted order). Data that is not valid JSON is scrubbed as text and kept
// if that is valid JSON; otherwise it is dropped and dropped reports true.
func scrubData(raw json.RawMessage, scrub func(string) string) (out json.RawMessage, dropped bool) {
	if len(raw) == 0 {
		return raw, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		s := []byte(scrub(string(raw)))
		if json.Valid(s) {
			return s, false
		}
		return nil, true
	}
	v, changed := scrubValue(v, scrub)
	if !changed {
		return raw, false
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false) // keep the upstream's text as it was
	if err := enc.Encode(v); err != nil {
		return nil, true
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), false
}

// scrubValue scrubs a decoded JSON value in place and reports whether
// anything changed. A number holding a resolved value becomes a string.
func scrubValue(v any, scrub func(string) string) (any, bool) {
	switch x := v.(type) {
	case string:
		s := scrub(x)
		return s, s != x
	case json.Number:
		if s := scrub(string(x)); s != string(x) {
			return s, true
		}
		return x, false
	case []any:
		changed := false
		for i, e := range x {
			var c bool
			x[i], c = scrubValue(e, scrub)
			changed = changed || c
		}
		return x, changed
	case map[string]any:
		out := make(map[string]any, len(x))
		changed := false
		for k, e := range x {
			sk := scrub(k)
			se, c := scrubValue(e, scrub)
			changed = changed || c || sk != k
			out[sk] = se
		}
		return out, changed
	}
	return v, false
}

// maxStderrLine bounds how much of a line without a newline is held back:
// a server writing endlessly without one cannot grow toolprof's memory.
const maxStderrLine = 64 << 10

// scrubbingWriter is a stdio server's stderr: it scrubs each line before
// writing it to dst, so a server that prints a resolved value (its own
// env, a header it was given) does not put it into toolprof's stderr.
// Lines are held until their newline (a value split across two writes is
// still found); Flush writes the last partial line once the process has
// exited. A run of more than maxStderrLine bytes without a newline is
// written in pieces, and a value cut by such a piece boundary is not
// recognised.
type scrubbingWriter struct {
	dst   io.Writer
	scrub func(string) string

	mu  sync.Mutex
	buf []byte
}

func newScrubbingWriter(dst io.Writer, scrub func(string) string) *scrubbingWriter {
	return &scrubbingWriter{dst: dst, scrub: scrub}
}

// Write takes any bytes; it reports them all written unless dst fails.
func (w *scrubbingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	var out []byte
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		out = append(out, w.scrub(string(w.buf[:i+1]))...)
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) >= maxStderrLine {
		out = append(out, w.scrub(string(w.buf))...)
		w.buf = w.buf[:0]
	}
	w.buf = append([]byte(nil), w.buf...) // let the written lines go
	if len(out) > 0 {
		if _, err := w.dst.Write(out); err != nil {
			return len(p), err
		}
	}
	return len(p), nil
}

// Flush writes the held partial line, scrubbed, ended with a newline so
// the next writer's output starts on its own line.
func (w *scrubbingWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) == 0 {
		return nil
	}
	line := w.scrub(string(w.buf)) + "\n"
	w.buf = nil
	_, err := w.dst.Write([]byte(line))
	return err
}
