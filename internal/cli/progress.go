package cli

import (
	"io"
	"os"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// IsTerminal reports whether w (or the writer a SerialWriter wraps) is a
// terminal: progress is drawn only there, never into a log or a pipe.
func IsTerminal(w io.Writer) bool {
	if s, ok := w.(*SerialWriter); ok {
		w = s.W
	}
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// Progress draws a progress bar of n steps described as desc on w when w
// is a terminal: step is called once per step done, and finish once at
// the end. Elsewhere both do nothing.
func Progress(w io.Writer, n int, desc string) (step, finish func()) {
	if !IsTerminal(w) {
		return func() {}, func() {}
	}
	bar := progressbar.NewOptions(n,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription(desc),
		progressbar.OptionShowCount(),
		progressbar.OptionClearOnFinish())
	return func() { bar.Add(1) }, func() { bar.Finish() }
}
