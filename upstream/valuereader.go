package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
)

// valueReader reads a stdio server's output one JSON value at a time as
// the SDK's connection does: through a json.Decoder, a value followed by
// anything but a line ending being an error. It does so a line at a time
// while each line holds one value and nothing after it, which is how MCP's
// stdio framing says a server writes, so that a line is scanned once
// (json.Valid) rather than by the decoder and again for its RawMessage.
// The first line that holds anything else, and the rest of the stream
// after it, go through the decoder as the SDK's connection reads. Its
// values are the decoder's; whether it refuses white space or a second
// value after a value on one line depends, with the SDK as here, on what
// the decoder has buffered when the value ends, which for lines longer
// than its smallest read (512 bytes) differs with the reads before.
// Only a server that does not follow the framing meets the difference.
type valueReader struct {
	lines *lineGuard
	dec   *json.Decoder // from the first line that is not one value
}

// next reads the next value, a copy of its own.
func (v *valueReader) next() (json.RawMessage, error) {
	if v.dec != nil {
		return v.decode()
	}
	for {
		line, err := v.lines.readLine()
		if err != nil {
			return nil, err
		}
		body := bytes.TrimSuffix(bytes.TrimSuffix(line, []byte("\n")), []byte("\r"))
		value := bytes.TrimLeft(body, " \t\r\n") // the decoder skips white space
		if len(value) == 0 {
			continue
		}
		// The value must end the line: after it the decoder takes only a
		// line ending, and json.Valid would take any white space.
		if last := value[len(value)-1]; last != ' ' && last != '\t' && last != '\r' && last != '\n' && json.Valid(value) {
			return bytes.Clone(value), nil
		}
		v.dec = json.NewDecoder(io.MultiReader(bytes.NewReader(bytes.Clone(line)), v.lines))
		return v.decode()
	}
}

// decode is the SDK's read of one value: the decoder's, and an error when
// what follows it in the decoder's buffer is not a line ending.
func (v *valueReader) decode() (json.RawMessage, error) {
	var raw json.RawMessage
	if err := v.dec.Decode(&raw); err != nil {
		return nil, err
	}
	var tr [1]byte
	if n, err := v.dec.Buffered().Read(tr[:]); n > 0 {
		if tr[0] != '\n' && tr[0] != '\r' {
			return nil, errors.New("invalid trailing data at the end of stream")
		}
	} else if err != nil && err != io.EOF {
		return nil, err
	}
	return raw, nil
}
