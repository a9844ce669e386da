package exchange

// addTokens adds b into a.
func addTokens(a, b map[string]int) {
	for k, v := range b {
		a[k] += v
	}
}
