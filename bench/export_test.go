package bench

import "github.com/toolprof/toolprof/exchange"

// Transcript exposes the transcript rendering to the external test package.
func Transcript(ex *exchange.Exchange) []byte { return transcript(ex) }
