package main

import (
	"testing"
)

func TestStdioProcs(t *testing.T) {
	for _, tc := range []struct {
		env  string
		want int
	}{
		{"", 1},  // one client's calls: one P
		{"4", 0}, // the user's number stands
		{"1", 0},
	} {
		getenv := func(k string) string {
			if k == "GOMAXPROCS" {
				return tc.env
			}
			return ""
		}
		if got := stdioProcs(getenv); got != tc.want {
			t.Errorf("GOMAXPROCS=%q: stdioProcs = %d, want %d", tc.env, got, tc.want)
		}
	}
}
