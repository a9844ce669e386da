package bench

// Transcript exposes the transcript rendering to the external test package.
func Transcript(ex *Exchange) []byte { return transcript(ex) }
