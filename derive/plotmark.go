package derive

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"

	"github.com/toolprof/toolprof/internal/ownfile"
)

// plotSoftware is the PNG tEXt "Software" value Plot writes: what says an
// existing file is a plot derive drew, which --plot may replace.
const plotSoftware = "toolprof profiler derive --plot"

// plotText is the data of the tEXt chunk that carries plotSoftware.
const plotText = "Software\x00" + plotSoftware

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// markPNG inserts a tEXt chunk Software=plotSoftware after the IHDR chunk
// of png (which PNG requires first).
func markPNG(png []byte) ([]byte, error) {
	const ihdrEnd = 8 + 4 + 4 + 13 + 4 // signature, length, type, data, CRC
	if len(png) < ihdrEnd || !bytes.HasPrefix(png, pngSignature) || string(png[12:16]) != "IHDR" {
		return nil, errors.New("plot: the encoder wrote no PNG")
	}
	chunk := binary.BigEndian.AppendUint32(nil, uint32(len(plotText)))
	chunk = append(chunk, "tEXt"...)
	chunk = append(chunk, plotText...)
	chunk = binary.BigEndian.AppendUint32(chunk, crc32.ChecksumIEEE(chunk[4:]))
	out := make([]byte, 0, len(png)+len(chunk))
	out = append(out, png[:ihdrEnd]...)
	out = append(out, chunk...)
	return append(out, png[ihdrEnd:]...), nil
}

// CheckPlotReplace reports whether derive --plot may write path: nothing
// is there, or a plot derive drew is (Plot marks its PNG). Anything else,
// such as a figure drawn by hand or by another tool, would be lost.
func CheckPlotReplace(path string) error {
	return ownfile.Check(path, ownPlot, ownfile.Wording{
		Unreadable: func(err error) error { return fmt.Errorf("derive: --plot %s: %w", path, err) },
		Foreign: func(error) error {
			return fmt.Errorf("derive: --plot %s exists and is no plot derive drew (no PNG with a tEXt Software %q chunk), which writing would replace: remove it or name another file", path, plotSoftware)
		},
	})
}

// ownPlot says why b is no plot derive drew, nil when it is one: a PNG
// whose chunks before the image data hold the tEXt chunk markPNG writes.
func ownPlot(b []byte) error {
	errNoMark := errors.New("no PNG with derive's tEXt Software chunk")
	if !bytes.HasPrefix(b, pngSignature) {
		return errNoMark
	}
	for rest := b[len(pngSignature):]; len(rest) >= 12; {
		n := binary.BigEndian.Uint32(rest)
		typ := string(rest[4:8])
		if uint64(n)+12 > uint64(len(rest)) || typ == "IDAT" {
			return errNoMark
		}
		if typ == "tEXt" && string(rest[8:8+n]) == plotText {
			return nil
		}
		rest = rest[12+n:]
	}
	return errNoMark
}
