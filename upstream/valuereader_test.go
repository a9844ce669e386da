package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"

	"pgregory.net/rapid"
)

// sdkValues is how the SDK's connection reads r: a json.Decoder, a value
// followed by anything but a line ending being an error. It returns the
// values read and the error that ended the reading.
func sdkValues(r io.Reader) ([]string, error) {
	dec := json.NewDecoder(r)
	var out []string
	for {
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return out, err
		}
		var tr [1]byte
		if n, err := dec.Buffered().Read(tr[:]); n > 0 {
			if tr[0] != '\n' && tr[0] != '\r' {
				return out, errors.New("invalid trailing data at the end of stream")
			}
		} else if err != nil && err != io.EOF {
			return out, err
		}
		out = append(out, string(raw))
	}
}

// readerValues is what a valueReader reads of lines.
func readerValues(lines *lineGuard) ([]string, error) {
	v := &valueReader{lines: lines}
	var out []string
	for {
		raw, err := v.next()
		if err != nil {
			return out, err
		}
		out = append(out, string(raw))
	}
}

// streamLine draws one line a stdio server might write, conforming or
// not; each is shorter than the decoder's smallest read (512 bytes), so
// that the SDK's decoder reads a line at a time and its reading does not
// depend on how reads fall.
func streamLine() *rapid.Generator[string] {
	msg := rapid.Custom(func(t *rapid.T) string {
		return `{"jsonrpc":"2.0","id":` + rapid.StringMatching(`[1-9][0-9]{0,3}`).Draw(t, "id") +
			`,"result":{"text":` + rapid.SampledFrom([]string{`"hi"`, `"a b"`, `"\n"`, `" }"`}).Draw(t, "text") + `}}`
	})
	return rapid.Custom(func(t *rapid.T) string {
		m := msg.Draw(t, "msg")
		return rapid.SampledFrom([]string{
			m + "\n",
			m + "\r\n",
			"  \t" + m + "\n",
			m + " \n",     // white space after the value
			m + "\r \r\n", // a carriage return, then white space
			m + " " + m + "\n",
			m + "\r" + m + "\n",
			m + m + "\n",
			"\n",
			" \t \r\n",
			"{\n", // a value over several lines
			`"jsonrpc":"2.0","id":7,"result":{}` + "\n",
			"}\n",
			"[" + m + "," + m + "]\n",
			"42\n",
			`"text"` + "\n",
			`{"jsonrpc":` + "\n", // cut off, continued by whatever follows
			"{nope}\n",
			"not json at all\n",
			m, // a last line without its line ending
		}).Draw(t, "line")
	})
}

// TestValueReaderReadsAsTheSDK: whatever a server writes in lines shorter
// than the decoder's smallest read, the values read, and how the reading
// ends, are the SDK decoder's over the same lineGuard.
func TestValueReaderReadsAsTheSDK(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		lines := rapid.SliceOfN(streamLine(), 0, 12).Draw(t, "lines")
		// Only the last line may lack its line ending.
		for i, l := range lines[:max(len(lines)-1, 0)] {
			if !strings.HasSuffix(l, "\n") {
				lines[i] = l + "\n"
			}
		}
		stream := strings.Join(lines, "")
		want, wantErr := sdkValues(newLineGuard(strings.NewReader(stream), 0, nil))
		got, gotErr := readerValues(newLineGuard(strings.NewReader(stream), 0, nil))
		if strings.Join(got, "\x00") != strings.Join(want, "\x00") {
			t.Fatalf("stream %q: values %q, the SDK's %q", stream, got, want)
		}
		if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
			t.Fatalf("stream %q: ended with %v, the SDK's with %v", stream, gotErr, wantErr)
		}
	})
}

// TestValueReaderLineMode: a conforming server's lines are taken a line at
// a time; the first that is not one value hands the rest to the decoder.
func TestValueReaderLineMode(t *testing.T) {
	tests := []struct {
		stream      string
		values      []string
		decoderFrom int // values read before the decoder took over; -1: never
	}{
		{"{\"a\":1}\n{\"b\":2}\r\n", []string{`{"a":1}`, `{"b":2}`}, -1},
		{"\n  {\"a\":1}\n", []string{`{"a":1}`}, -1},
		{"{\"a\":1}", []string{`{"a":1}`}, -1},
		{"{\"a\":1}\n[\n{\"b\":2}]\n{\"c\":3}\n", []string{`{"a":1}`, "[\n{\"b\":2}]", `{"c":3}`}, 1},
		{"{\"a\":1}\r\r\n{\"b\":2}\n", []string{`{"a":1}`, `{"b":2}`}, 0},
	}
	for _, tt := range tests {
		v := &valueReader{lines: newLineGuard(strings.NewReader(tt.stream), 0, nil)}
		var got []string
		decoderFrom := -1
		for {
			raw, err := v.next()
			if err == io.EOF {
				break
			}
			if err != nil {
				t.Fatalf("%q: %v", tt.stream, err)
			}
			if v.dec != nil && decoderFrom < 0 {
				decoderFrom = len(got)
			}
			got = append(got, string(raw))
		}
		if strings.Join(got, "|") != strings.Join(tt.values, "|") || decoderFrom != tt.decoderFrom {
			t.Errorf("%q: values %q, decoder from %d; want %q, from %d", tt.stream, got, decoderFrom, tt.values, tt.decoderFrom)
		}
	}
}

// TestValueReaderOwnsItsValues: a value stays as read after the lines
// after it are, though lines are valid only until the next read.
func TestValueReaderOwnsItsValues(t *testing.T) {
	v := &valueReader{lines: newLineGuard(strings.NewReader("{\"a\":1}\n{\"b\":2}\n"), 0, nil)}
	first, err := v.next()
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.next(); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, []byte(`{"a":1}`)) {
		t.Errorf("first value became %q", first)
	}
}

// BenchmarkReadValues reads a conforming server's answers through a
// lineGuard, as the SDK's decoder does ("decoder") and as a valueReader
// does ("lines"); read as the ratio lines/decoder.
func BenchmarkReadValues(b *testing.B) {
	const n = 1000
	line := `{"jsonrpc":"2.0","id":12,"result":{"content":[{"type":"text","text":"This is a simple text response for testing."}]}}` + "\n"
	stream := strings.Repeat(line, n)
	b.Run("decoder", func(b *testing.B) {
		for b.Loop() {
			if vs, err := sdkValues(newLineGuard(strings.NewReader(stream), 0, nil)); len(vs) != n || err != io.EOF {
				b.Fatal(len(vs), err)
			}
		}
	})
	b.Run("lines", func(b *testing.B) {
		for b.Loop() {
			if vs, err := readerValues(newLineGuard(strings.NewReader(stream), 0, nil)); len(vs) != n || err != io.EOF {
				b.Fatal(len(vs), err)
			}
		}
	})
}
