package bench

import "github.com/toolprof/toolprof/price"

// Counter is price.Counter, under the name the exchange code uses.
type Counter = price.Counter

// addTokens adds b into a.
func addTokens(a, b map[string]int) {
	for k, v := range b {
		a[k] += v
	}
}
