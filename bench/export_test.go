package bench

import "testing"

// Golden exposes the golden-file check to the external test package.
func Golden(t *testing.T, name string, got []byte) {
	t.Helper()
	golden(t, name, got)
}

// Transcript exposes the transcript rendering to the external test package.
func Transcript(ex *Exchange) []byte { return transcript(ex) }
